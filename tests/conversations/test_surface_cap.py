"""A turn whose working set is over the tool cap still runs, offered at most the cap."""

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from conversations.loop import run_turn
from conversations.models import ConversationEvent, WorkingSetEntry
from registry.surface import MAX_TOOL_SURFACE
from tests import handlers
from tests.conversations.test_agent_loop import ANSWER, CALL_WEATHER

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def over_full(make_tool, conversation, weather_tool):
    """A working set of 130 tools (stored before the cap was enforced), weather used last."""
    long_ago = timezone.now() - timedelta(days=1)
    stale = [f"stale_{n:03}" for n in range(130)]
    for name in stale:
        make_tool(name, handlers.echo)
    WorkingSetEntry.objects.bulk_create(
        WorkingSetEntry(conversation=conversation, tool_name=name, used_at=long_ago) for name in stale
    )
    return stale


@pytest.mark.parametrize("mode", ["chat", "agentic", "delegate"])
def test_a_turn_with_an_over_full_surface_completes_and_records_the_cut(model, conversation, user, over_full, mode):
    server = model([CALL_WEATHER, ANSWER])
    outcome = async_to_sync(run_turn)(conversation, text="Weather in Oslo?", user=user, mode=mode)
    assert (outcome.stop_reason, outcome.text) == ("end_turn", "It is 14°C and raining in Oslo.")
    offered = [tool["name"] for tool in server.requests[0].tools]
    assert len(offered) <= MAX_TOOL_SURFACE and "weather" in offered
    request = ConversationEvent.objects.filter(conversation=conversation, event_type="llm_request").first()
    assert request.data["tools_cut"][0] == over_full[0]
    assert "weather" not in request.data["tools_cut"]


def test_calling_a_paged_in_tool_marks_it_used(model, conversation, user, over_full):
    model([CALL_WEATHER, ANSWER])
    before = WorkingSetEntry.objects.get(conversation=conversation, tool_name="weather").used_at
    async_to_sync(run_turn)(conversation, text="Weather in Oslo?", user=user)
    assert WorkingSetEntry.objects.get(conversation=conversation, tool_name="weather").used_at > before
