"""How fast Eunice starts: a CLI tool call, a server ready to serve, the first search.

Three figures, each the best of --runs fresh processes (wall time; CPU beside it):
- ``cli_call_tool``: ``manage.py call_tool plan …`` from exec to exit (goal ≤ 1 s);
- ``server_ready``: the server as scripts/run serves it (uvicorn, every preload on),
  from exec to its first ``/health/`` answer (goal ≤ 3 s); it serves while its
  preloads load (eunice/preload.py), and ``server_preloaded`` is when ``/health/``
  first says they are done;
- ``first_search_tools``: the first ``search_tools`` call of a process that loaded
  what the server loads before serving (``eunice.asgi``, preloads on; goal ≤ 50 ms).
Then the libraries the CLI call imports that cost the most (``-X importtime``).

Usage: python bench/startup.py [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import _django
from _machine import reference_ms
from turns import listening_socket, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
GOALS_MS = {"cli_call_tool": 1000, "server_ready": 3000, "first_search_tools": 50}

FIRST_SEARCH = """
import json, time
import eunice.asgi  # everything the server loads before it serves
from eunice.preload import wait
wait(300)  # and what it preloads while it serves
from registry.context import ToolContext
from registry.registry import execute_tool
started = time.perf_counter()
result = execute_tool("search_tools", {"query": "make a plan"}, ToolContext(tenant_id="default"))
elapsed = (time.perf_counter() - started) * 1000
assert result.error is None, result.content
print(json.dumps({"ms": elapsed}))
"""


def timed(command: list[str], env: dict) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child run, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[:4]} failed: {done.stderr[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def preload_done(port: int, process: subprocess.Popen, timeout: float = 120) -> None:
    """Poll /health/ until it says the preloads are in."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited while preloading")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/", timeout=10) as answer:
            if json.loads(answer.read())["preload"] == "done":
                return
        time.sleep(0.05)
    raise TimeoutError("the preloads did not finish")


def server_ready(env: dict) -> tuple[float, float, float]:
    listener = listening_socket()
    fd, port = listener.fileno(), listener.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", "--fd", str(fd), "--log-level", "warning"]
    command += ["--loop", "uvloop", "--http", "httptools", "--lifespan", "off", "eunice.asgi:application"]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(fd,)
    )
    listener.close()
    try:
        wait_for_port(port, process, path="/health/")
        wall = time.perf_counter() - started
        ticks = os.sysconf("SC_CLK_TCK")
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        preload_done(port, process)
        preloaded = time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(30)
    return wall, cpu, preloaded


def costliest_imports(env: dict, command: list[str], top: int = 6) -> list[tuple[str, float]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command], env=env, cwd=ROOT, capture_output=True, text=True
    )
    found = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].startswith(" ") and not parts[2].startswith("  "):
            try:
                found.append((parts[2].strip(), int(parts[1]) / 1000))
            except ValueError:
                continue
    return sorted(found, key=lambda item: -item[1])[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    database = _django.setup()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "eunice.settings",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "EUNICE_VAR_DIR": tempfile.mkdtemp(prefix="eunice-startup-"),
    }
    cli = [sys.executable, "manage.py", "call_tool", "plan", "--input", '{"goal": "start fast"}']
    cli += ["--conversation", "bench-startup"]
    results: dict = {"database": database, "machine_reference_ms": reference_ms()}
    servers = [server_ready(env) for _ in range(args.runs)]
    figures = {
        "cli_call_tool": [timed(cli, env)[:2] for _ in range(args.runs)],
        "server_ready": [(wall, cpu) for wall, cpu, _ in servers],
    }
    searches = [json.loads(timed([sys.executable, "-c", FIRST_SEARCH], env)[2].splitlines()[-1])["ms"]]
    searches += [json.loads(timed([sys.executable, "-c", FIRST_SEARCH], env)[2].splitlines()[-1])["ms"]]
    for name, runs in figures.items():
        wall, cpu = min(runs)
        results[f"{name}_ms"] = wall * 1000
        results[f"{name}_cpu_ms"] = cpu * 1000
        results[f"{name}_goal_ms"] = GOALS_MS[name]
    results["server_preloaded_ms"] = min(preloaded for _, _, preloaded in servers) * 1000
    results["first_search_tools_ms"] = min(searches)
    results["first_search_tools_goal_ms"] = GOALS_MS["first_search_tools"]
    results["load_average"] = os.getloadavg()[0]
    for module, ms in costliest_imports(env, cli[1:]):
        results[f"import_{module}_ms"] = ms
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()
