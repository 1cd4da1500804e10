"""Context economy: the same multi-step tasks done with ordinary tool calls and as one program.

Each task of bench/context_tasks.py runs twice through the real agent loop against the
scripted Messages server: once scripted the ordinary way (a model call per step, every
result read), once as a ``run_program`` call. Input tokens are counted from the request
bodies the server received (JSON characters / the loop's starting chars-per-token
ratio, as its estimator does before a provider has counted). Both ways must show the
model the reference answer (the scripted server checks it) and end with the same text.

Usage: python bench/context.py [--only NAME] [--json] [--database-url URL]
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import _django
from context_tasks import OFFERED, TASKS, Task, datasets


@dataclass
class Run:
    tokens: int
    calls: int
    answer: str
    failures: list[str]


def reference(task: Task, frames: dict) -> tuple[str, str]:
    """The first row of the task's last query as (x, y), computed with DuckDB."""
    from tools.sqlengine import locked_connection  # the one way the codebase opens DuckDB

    connection = locked_connection()
    for name, frame in frames.items():
        connection.register(name, frame)
    for index, sql in enumerate(task.queries):
        table = connection.execute(sql).df()
        connection.register(task.saved(index), table)
    x, y = task.chart
    top = table.iloc[0]
    return _plain(top[x]), _plain(top[y])


def _plain(value: object) -> str:
    item = getattr(value, "item", None)
    return str(item() if callable(item) else value)


def run_task(task: Task, way: str, user: object, files: dict[str, bytes], top: tuple[str, str]) -> Run:
    from asgiref.sync import async_to_sync

    from conversations.loop import run_turn
    from conversations.models import Conversation, WorkingSetEntry
    from datacatalog.store import ConversationCatalog
    from datacatalog.uploads import upload_dataset
    from llm.scripted import ScriptedMessagesServer

    answer = f"{task.name}: {top[0]} leads with {top[1]}"
    script = task.ordinary(answer, top) if way == "ordinary" else task.program(answer, top)
    conversation = Conversation.objects.create(tenant_id="bench", user=user, title=f"{task.name} {way}")
    books = ConversationCatalog("bench", conversation.id)
    for name, data in files.items():
        upload_dataset(books, f"{name}.csv", data)
    for tool in OFFERED:
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=tool)
    with ScriptedMessagesServer(script) as server:
        _point_the_chat_role_at(server.url)
        outcome = async_to_sync(run_turn)(conversation, text=task.prompt, user=user)
        bodies = [request.body for request in server.requests]
        failures = list(server.failures)
    return Run(tokens=sum(_tokens(body) for body in bodies), calls=len(bodies), answer=outcome.text, failures=failures)


def _tokens(body: dict) -> int:
    from conversations.prompt import CHARS_PER_TOKEN, TokenEstimator

    return int(TokenEstimator.chars(body.get("system"), body.get("tools"), body.get("messages")) / CHARS_PER_TOKEN)


def _point_the_chat_role_at(url: str) -> None:
    from django.conf import settings

    settings.ANTHROPIC_BASE_URL = url


def prepare(files_dir: Path) -> object:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from llm.models import ModelConfig
    from registry.models import TenantMembership

    settings.EUNICE_FILES_DIR = files_dir
    settings.ANTHROPIC_API_KEY = "sk-ant-bench-0123456789abcdef"
    settings.LLM_MAX_RETRIES = 0
    ModelConfig.objects.update_or_create(
        role="chat",
        defaults={"provider": "anthropic", "model": "claude-bench", "max_output_tokens": 1024},
    )
    user = get_user_model().objects.create_user("bench-analyst", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id="bench")
    return user


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the task of this name")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    _django.setup(args.database_url)

    import pandas as pd

    files = datasets()
    frames = {name: pd.read_csv(io.BytesIO(data)) for name, data in files.items()}
    user = prepare(Path(tempfile.mkdtemp(prefix="eunice-context-")))
    tasks = [task for task in TASKS if args.only in (None, task.name)]
    rows = []
    for task in tasks:
        top = reference(task, frames)
        ordinary = run_task(task, "ordinary", user, files, top)
        program = run_task(task, "program", user, files, top)
        rows.append((task, f"{top[0]}: {top[1]}", ordinary, program))
    report(rows, args.json)


def report(rows: list, as_json: bool) -> None:
    records = [
        {
            "task": task.name,
            "expected": expected,
            "ordinary_tokens": ordinary.tokens,
            "program_tokens": program.tokens,
            "ordinary_calls": ordinary.calls,
            "program_calls": program.calls,
            "saved_pct": round(100 * (1 - program.tokens / ordinary.tokens), 1) if ordinary.tokens else 0.0,
            "same_answer": ordinary.answer == program.answer and not ordinary.failures and not program.failures,
            "failures": ordinary.failures + program.failures,
        }
        for task, expected, ordinary, program in rows
    ]
    total_ordinary = sum(r["ordinary_tokens"] for r in records)
    total_program = sum(r["program_tokens"] for r in records)
    summary = {
        "tasks": len(records),
        "ordinary_tokens": total_ordinary,
        "program_tokens": total_program,
        "saved_pct": round(100 * (1 - total_program / total_ordinary), 1) if total_ordinary else 0.0,
        "ordinary_calls": sum(r["ordinary_calls"] for r in records),
        "program_calls": sum(r["program_calls"] for r in records),
        "same_answers": sum(1 for r in records if r["same_answer"]),
    }
    if as_json:
        print(json.dumps({"tasks": records, "summary": summary}))
        return
    print(f"{'task':<20} {'tokens ord→prog':>17} {'saved':>6} {'calls':>6}  answer (same both ways?)")
    for r in records:
        tokens = f"{r['ordinary_tokens']:,}→{r['program_tokens']:,}"
        calls = f"{r['ordinary_calls']}→{r['program_calls']}"
        same = "same" if r["same_answer"] else "DIFFERENT " + "; ".join(r["failures"])[:200]
        print(f"{r['task']:<20} {tokens:>17} {r['saved_pct']:>5}% {calls:>6}  {r['expected']} ({same})")
    _django.print_results(summary, False)


if __name__ == "__main__":
    main()
