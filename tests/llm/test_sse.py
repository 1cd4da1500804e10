"""Server-sent events into JSON, and chunks into JSON for the sockets."""

import json

from conversations.display import encode
from llm.anthropic_stream import SSEBuffer

DELTA = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \\u00e9"}}'


def test_events_split_across_reads_come_out_whole_and_in_order():
    buffer = SSEBuffer()
    stream = b"event: content_block_delta\ndata: " + DELTA + b"\n\n" + b'event: ping\ndata: {"type": "ping"}\n\n'
    events = []
    for n in range(0, len(stream), 7):
        events += buffer.push(stream[n : n + 7])
    assert events == [json.loads(DELTA), {"type": "ping"}]


def test_carriage_returns_end_lines_too():
    assert SSEBuffer().push(b"data: " + DELTA + b"\r\n\r\n") == [json.loads(DELTA)]


def test_a_crlf_split_between_two_reads_is_one_line_end():
    stream = b'data: {"type": "content_block_delta",\r\ndata: "index": 0}\r\n\r\n'
    for cut in range(1, len(stream)):
        buffer = SSEBuffer()
        assert buffer.push(stream[:cut]) + buffer.push(stream[cut:]) == [{"type": "content_block_delta", "index": 0}], (
            cut
        )


def test_what_the_fast_parser_refuses_is_still_read_as_json_reads_it():
    lone_surrogate = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\ud83d"}}'
    assert SSEBuffer().push(b"data: " + lone_surrogate + b"\n\n") == [json.loads(lone_surrogate)]


def test_a_chunk_encodes_to_the_json_the_browser_reads():
    chunk = {"type": "text_delta", "text": "naïve “quotes” \n", "ts": 1764542400123.456}
    assert json.loads(encode(chunk)) == chunk


def test_what_the_fast_encoder_refuses_is_still_encoded():
    chunk = {"type": "card", "rows": 2**70, "text": "\ud83d"}
    assert json.loads(encode(chunk)) == chunk
