"""The CPU a turn spends before its first chunk, in the server's own process.

A turn with one tool call (``plan``, as ``bench/turns.py`` drives it) runs
through ``conversations.loop.run_turn`` in this process, against the scripted
model in its own process (so its CPU is not counted), one turn at a time on a
fresh conversation each. For each turn: this process's CPU time from the call
to the first chunk the socket would be sent, and to the answer's first text
(the turn's set-up, the first model call, the tool call and the second model
call). The first ``--warm`` turns (imports, first connections) are left out.
``--profile N`` prints the Python function calls a whole turn makes (a
figure the machine's load does not move) and the N costliest functions (cumulative) over the
measured turns, on the event loop and on the database threads the turn's
steps run on (``registry.aio.in_db_thread``).

With ``--skills N`` the tenant holds N approved skills, which every model call's state
block names (``--archive-kb MIN-MAX``: their archives' sizes, as in bench/skill_shelf.py).

Usage: python bench/turn_start.py [--turns 50] [--warm 5] [--profile 30] [--skills N [--archive-kb MIN-MAX]] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
import threading
import time

import _django
from turns import model_server


class FirstChunks:
    """A display that notes this process's CPU time at the first chunk and at the first text."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.first_text: float | None = None
        self.first_kind = ""

    def send(self, chunk: dict) -> None:
        now = time.process_time()
        if self.first is None:
            self.first, self.first_kind = now, chunk["type"]
        if self.first_text is None and chunk["type"] == "text_delta":
            self.first_text = now

    def close(self) -> None:
        pass


def conversations(count: int) -> list:
    from django.contrib.auth import get_user_model

    from conversations.models import Conversation
    from llm.models import ModelConfig
    from registry.models import TenantMembership

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "bench-model"})
    user, _ = get_user_model().objects.get_or_create(username="turn-start")
    TenantMembership.objects.get_or_create(user=user, defaults={"tenant_id": "bench"})
    return [
        Conversation.objects.create(tenant_id="bench", user=user, title=f"turn start {n}", mode="agentic")
        for n in range(count)
    ]


async def one_turn(conversation) -> tuple[float, float, str]:
    from conversations.loop import run_turn

    display = FirstChunks()
    started = time.process_time()
    await run_turn(conversation, text="Make a plan.", user=conversation.user, display=display, interactive=True)
    assert display.first is not None and display.first_text is not None, "the turn sent no answer"
    return (display.first - started) * 1000, (display.first_text - started) * 1000, display.first_kind


class ThreadProfiles:
    """One profiler per database thread: each step ``in_db_thread`` runs is profiled while on."""

    def __init__(self) -> None:
        self.on = False
        self.profiles: dict[int, cProfile.Profile] = {}

    def install(self) -> None:
        from registry import aio

        plain = aio.reconnecting

        def profiled(func):  # noqa: ANN001, ANN202
            step = plain(func)

            def run(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
                if not self.on:
                    return step(*args, **kwargs)
                profile = self.profiles.setdefault(threading.get_ident(), cProfile.Profile())
                profile.enable()
                try:
                    return step(*args, **kwargs)
                finally:
                    profile.disable()

            return run

        aio.reconnecting = profiled

    def add_to(self, stats: pstats.Stats) -> None:
        for profile in self.profiles.values():
            stats.add(profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--skills", type=int, default=0)
    parser.add_argument("--archive-kb", help="MIN-MAX: the skills' archives spread over this size in KB")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    model, port = model_server(chunks=3, delay=0.0)
    os.environ.update(
        {
            "ANTHROPIC_API_KEY": "bench-key",
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "EUNICE_LLM_MAX_RETRIES": "0",
            "EUNICE_LOG_FLUSH_SECONDS": "1",
            "EUNICE_JOBS": "0",
        }
    )
    try:
        database = _django.setup()
        rows = conversations(args.warm + args.turns)
        if args.skills:
            from skill_shelf import make_skills

            make_skills(args.skills, args.archive_kb, tenant="bench")
        profiler, threads = cProfile.Profile(), ThreadProfiles()
        if args.profile:
            threads.install()

        async def run() -> list[tuple[float, float, str]]:
            for conversation in rows[: args.warm]:
                await one_turn(conversation)
            measured = []
            for conversation in rows[args.warm :]:
                if args.profile:
                    threads.on = True
                    profiler.enable()
                measured.append(await one_turn(conversation))
                profiler.disable()
                threads.on = False
            return measured

        measured = asyncio.run(run())
    finally:
        model.kill()
        model.wait()
    first = sorted(m[0] for m in measured)
    text = sorted(m[1] for m in measured)
    results = {
        "database": database,
        "turns": len(measured),
        "skills": f"{args.skills} ({args.archive_kb or 'tiny'} KB)" if args.skills else 0,
        "first_chunk_kind": measured[0][2],
        "cpu_to_first_chunk_p50_ms": statistics.median(first),
        "cpu_to_first_chunk_min_ms": first[0],
        "cpu_to_first_text_p50_ms": statistics.median(text),
        "cpu_to_first_text_min_ms": text[0],
        "load_average": os.getloadavg()[0],
    }
    _django.print_results(results, args.json)
    if args.profile:
        stats = pstats.Stats(profiler, stream=sys.stdout)
        threads.add_to(stats)
        print(f"python_calls_per_turn: {stats.total_calls / len(measured):.0f}")  # type: ignore[attr-defined]
        stats.sort_stats(os.environ.get("PROFILE_SORT", "cumulative")).print_stats(args.profile)


if __name__ == "__main__":
    main()
