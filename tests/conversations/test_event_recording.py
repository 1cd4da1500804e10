"""A turn's events are queued and written in batches, never later than a reader needs them."""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ConversationEvent, WorkingSetEntry
from conversations.recording import INLINE_LIMIT, EventRecorder

CALL_PEEK = {"tool_uses": [{"name": "peek", "input": {"reasoning": "look back"}, "id": "toolu_peek"}]}
ANSWER = {"text": ["Seen."]}


def stored_kinds(conversation):
    return list(
        ConversationEvent.objects.filter(conversation=conversation)
        .order_by("turn", "sequence")
        .values_list("event_type", flat=True)
    )


@pytest.mark.django_db
def test_recording_runs_no_query_and_a_flush_writes_the_queue_in_order(conversation, django_assert_num_queries):
    recorder = EventRecorder(conversation, turn=1)
    with django_assert_num_queries(0):
        for kind in ("user_message", "llm_request", "done"):
            recorder.record(kind, {"kind": kind})
    assert recorder.pending == 3
    assert stored_kinds(conversation) == []

    with django_assert_num_queries(1):  # one INSERT; inside a transaction already, no savepoint
        recorder.flush()

    rows = ConversationEvent.objects.filter(conversation=conversation).order_by("sequence")
    assert [(r.sequence, r.event_type, r.data) for r in rows] == [
        (1, "user_message", {"kind": "user_message"}),
        (2, "llm_request", {"kind": "llm_request"}),
        (3, "done", {"kind": "done"}),
    ]
    assert recorder.pending == 0


@pytest.mark.django_db
def test_a_flush_with_nothing_queued_runs_no_query(conversation, django_assert_num_queries):
    recorder = EventRecorder(conversation, turn=1)
    with django_assert_num_queries(0):
        recorder.flush()


@pytest.mark.django_db
def test_a_large_event_is_flushed_with_its_blob_and_numbering_continues_across_flushes(conversation):
    recorder = EventRecorder(conversation, turn=2)
    recorder.record("tool_result", {"content": "x" * (INLINE_LIMIT + 1)})
    recorder.flush()
    recorder.record("done", {})
    recorder.flush()

    big, done = ConversationEvent.objects.filter(conversation=conversation).order_by("sequence")
    assert (big.sequence, done.sequence) == (1, 2)
    assert big.data == {"blob": True, "size_bytes": big.blob.size_bytes}
    assert bytes(big.blob.data).startswith(b'{"content": "xxx')


@pytest.mark.django_db(transaction=True)
def test_a_running_tool_sees_every_event_recorded_before_it(model, make_tool, conversation, user):
    seen = []

    def peek(inputs, context):
        seen.extend(stored_kinds(conversation))
        return "looked"

    make_tool("peek", peek, input_schema={"type": "object", "properties": {}})
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="peek")
    model([CALL_PEEK, ANSWER])

    async_to_sync(run_turn)(conversation, text="look back", user=user)

    assert seen == ["user_message", "llm_request", "decision", "tool_call"]
    assert stored_kinds(conversation) == [
        "user_message",
        "llm_request",
        "decision",
        "tool_call",
        "contract_envelope",
        "tool_result",
        "text_delta",
        "llm_request",
        "done",
    ]


class BrokenDisplay:
    def send(self, chunk):
        if chunk["type"] == "text_delta":
            raise RuntimeError("the display went away")


@pytest.mark.django_db(transaction=True)
def test_a_turn_that_fails_unexpectedly_keeps_the_events_it_recorded(model, conversation, user):
    model([ANSWER])

    with pytest.raises(RuntimeError, match="the display went away"):
        async_to_sync(run_turn)(conversation, text="hello", user=user, display=BrokenDisplay())

    assert stored_kinds(conversation) == ["user_message", "interrupted"]


@pytest.mark.django_db(transaction=True)
def test_events_recorded_and_flushed_from_many_threads_are_all_written_once_each(conversation):
    from concurrent.futures import ThreadPoolExecutor

    from django.db import close_old_connections

    recorder = EventRecorder(conversation, turn=1)

    def work(worker):
        try:
            for n in range(100):
                recorder.record("status", {"worker": worker, "n": n})
                if worker % 4 == 0 and n % 10 == 0:
                    recorder.flush()  # as a parallel tool call or delegated task does
        finally:
            close_old_connections()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    recorder.flush()

    rows = list(ConversationEvent.objects.filter(conversation=conversation).values_list("sequence", "data"))
    assert sorted(sequence for sequence, _ in rows) == list(range(1, 801))
    assert sorted((d["worker"], d["n"]) for _, d in rows) == [(w, n) for w in range(8) for n in range(100)]
