"""How long the chat page takes to draw a long conversation, first load and reload.

Makes a conversation of ``--messages`` messages (half questions, half answers in
Markdown with a list, a table and code; every fourth answer after a tool call with
its result, and a chart card on every tenth), served by daphne with the real ASGI app
on a throwaway SQLite database (or DATABASE_URL), and opens it in Debian's Chromium
through Playwright: a first load in a fresh browser context (nothing cached) and a
reload. Each figure is from the navigation's start to the page's
``eunice-thread-drawn`` mark (``static/eunice/chat.js``: the whole stored conversation
drawn), with the server's response time beside it. The goal is ≤ 1 s to render.

Usage: python bench/page.py [--messages 200] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

import _django
from turns import listening_socket, wait_for_port

ANSWER = """## Answer {n}

Here is what I found:

- the **first** point, with `code`
- the second point

| city | rain |
|---|---|
| Oslo | {n} |
| Bergen | {m} |

```python
print({n} * 2)
```
"""
CHART = {
    "type": "chart",
    "title": "Rain",
    "spec": {
        "data": {"values": [{"city": "Oslo", "rain": 12}, {"city": "Bergen", "rain": 25}]},
        "mark": "bar",
        "encoding": {"x": {"field": "city", "type": "nominal"}, "y": {"field": "rain", "type": "quantitative"}},
    },
}


def prepare(messages: int) -> tuple[str, str]:
    """Ann, her tenant, and a conversation of ``messages`` messages with their events."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from conversations.models import ChatMessage, Conversation, ConversationEvent, TurnRecord
    from llm.models import ModelConfig
    from registry.models import TenantMembership

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "offline", "model": "offline"})
    user, _ = get_user_model().objects.get_or_create(username="bench-page")
    TenantMembership.objects.get_or_create(user=user, defaults={"tenant_id": "bench"})
    conversation = Conversation.objects.create(tenant_id="bench", user=user, title="A long conversation")
    rows, events, records = [], [], []
    for turn in range(1, messages // 2 + 1):
        question = f"Question {turn}: how much rain?"
        answer = ANSWER.format(n=turn, m=turn * 2)
        cards = [CHART] if turn % 10 == 0 else []
        rows.append(
            ChatMessage(conversation=conversation, message_id=f"u{turn}", tenant_id="bench", role="user", text=question)
        )
        rows.append(
            ChatMessage(
                conversation=conversation,
                message_id=f"a{turn}",
                tenant_id="bench",
                role="assistant",
                text=answer,
                cards=cards,
            )
        )
        seq = iter(range(1, 100))
        turn_events = [("user_message", {"text": question, "turn": turn})]
        if turn % 4 == 0:
            turn_events += [
                ("text_delta", {"text": "Let me look that up first."}),
                ("tool_call", {"tool_use_id": f"t{turn}", "name": "search_tools", "input": {"query": "rain"}}),
                (
                    "tool_result",
                    {
                        "tool_use_id": f"t{turn}",
                        "name": "search_tools",
                        "content": "✓ ok. 1 row.\nFound it.",
                        "error": None,
                    },
                ),
            ]
        turn_events += [("text_delta", {"text": answer})]
        turn_events += [("card", {"card": card}) for card in cards]
        turn_events += [("done", {"turn": turn, "cost_usd": 0.0})]
        events += [
            ConversationEvent(conversation=conversation, turn=turn, sequence=next(seq), event_type=kind, data=data)
            for kind, data in turn_events
        ]
        records.append(TurnRecord(conversation=conversation, turn=turn, status=TurnRecord.Status.FINISHED))
    ChatMessage.objects.bulk_create(rows)  # created_at in order: one statement, one clock tick apart at most
    ConversationEvent.objects.bulk_create(events)
    TurnRecord.objects.bulk_create(records)
    client = Client()
    client.force_login(user)
    return conversation.pk, client.cookies["sessionid"].value


def serve() -> tuple[subprocess.Popen, int]:
    listener = listening_socket()
    fd, port = listener.fileno(), listener.getsockname()[1]
    env = {**os.environ, "ALLOWED_HOSTS": "127.0.0.1"}
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "EUNICE_DEFAULT_MODEL"):
        env.pop(name, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "--fd", str(fd), "eunice.asgi:application"],
        cwd=_django.ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(os.environ.get("EUNICE_BENCH_SERVER_LOG", os.devnull), "w"),  # noqa: SIM115 (the child's)
        pass_fds=(fd,),
    )
    listener.close()
    wait_for_port(port, process, timeout=180, path="/health/")
    return process, port


DRAWN = """() => new Promise((resolve) => {
  const done = () => {
    const mark = performance.getEntriesByName('eunice-thread-drawn')[0];
    const nav = performance.getEntriesByType('navigation')[0];
    resolve({drawn: mark.startTime, response: nav.responseEnd - nav.requestStart,
             nodes: document.querySelectorAll('#messages *').length});
  };
  if (performance.getEntriesByName('eunice-thread-drawn').length) done();
  else { const timer = setInterval(() => {
    if (performance.getEntriesByName('eunice-thread-drawn').length) { clearInterval(timer); done(); } }, 10); }
})"""


def measure(port: int, conversation_id: str, session: str, rounds: int) -> dict:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("Chromium is not installed (apt-get install chromium)")
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    url = f"http://127.0.0.1:{port}/c/{conversation_id}/"
    first, again, responses = [], [], []
    nodes = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=flags)
        for _ in range(rounds):
            context = browser.new_context(viewport={"width": 1400, "height": 900})  # nothing cached
            context.add_cookies([{"name": "sessionid", "value": session, "url": url}])
            page = context.new_page()
            page.goto(url)
            figures = page.evaluate(DRAWN)
            first.append(figures["drawn"])
            responses.append(figures["response"])
            nodes = figures["nodes"]
            page.reload()
            again.append(page.evaluate(DRAWN)["drawn"])
            context.close()
        browser.close()
    return {
        "first_load_ms_median": statistics.median(first),
        "first_load_ms_max": max(first),
        "reload_ms_median": statistics.median(again),
        "reload_ms_max": max(again),
        "html_response_ms_median": statistics.median(responses),
        "elements_drawn": nodes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    database = _django.setup()
    conversation_id, session = prepare(args.messages)
    process, port = serve()
    try:
        started = time.monotonic()
        results = {"database": database, "messages": args.messages, "rounds": args.rounds}
        results.update(measure(port, conversation_id, session, args.rounds))
        results["bench_seconds"] = time.monotonic() - started
        results["load_average_1min"] = os.getloadavg()[0]
    finally:
        process.terminate()
        process.wait(timeout=30)
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()
