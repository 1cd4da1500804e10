"""Fuzz the REST API against its own OpenAPI document with schemathesis, all checks.

Starts the product under uvicorn on loopback with a fresh SQLite database in a
temporary directory, signs in a user of one tenant with a token, and runs
``schemathesis run --checks all`` over every operation (bench/schemathesis.toml
says the one status the schema cannot predict; bench/schemathesis_hooks.py makes
the upload files); exits non-zero unless schemathesis reports no failure. Bounded: ``--max-examples`` per operation
(default 15: 3 to 13 minutes on a 2-core machine, with its load; hence a bench script rather than
a test).

    .venv/bin/python bench/schemathesis.py [--max-examples N]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETUP = """
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from conversations.models import Conversation
from registry.models import TenantMembership
user = get_user_model().objects.create_user("fuzz")
TenantMembership.objects.create(user=user, tenant_id="acme")
conversation = Conversation.objects.create(tenant_id="acme", user=user, title="fuzzed")
print(conversation.pk, Token.objects.create(user=user).key)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the server did not listen on port {port} within {seconds:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=15)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="eunice-fuzz-") as var:
        env = {
            **os.environ,
            "DEBUG": "0",
            "SECRET_KEY": "fuzzing-only-" + "x" * 40,
            "EUNICE_VAR_DIR": var,
            "EUNICE_PRELOAD_TOOL_SEARCH": "0",
            "DJANGO_SETTINGS_MODULE": "eunice.settings",
            "EUNICE_SANDBOX_SCRATCH": f"{var}/sandbox",
            # The fuzzer sends thousands of requests and wrong credentials on purpose.
            "EUNICE_API_RATE": "1000000/min",
            "EUNICE_TURN_RATE": "1000000/min",
            "EUNICE_UPLOAD_RATE": "1000000/min",
            "EUNICE_ANON_RATE": "1000000/min",
            "EUNICE_LOGIN_FAILURE_LIMIT": "1000000",
        }
        for name in ("DATABASE_URL", "REDIS_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
            env.pop(name, None)
        subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        conversation, token = (
            subprocess.run(
                [python, "manage.py", "shell", "-v0", "-c", SETUP],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
            .split()
        )
        port = free_port()
        # The server scripts/run starts: uvicorn (daphne, the test server, answers
        # some malformed multipart bodies itself with a bare 400).
        server = subprocess.Popen(
            [
                python,
                "-m",
                "uvicorn",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--lifespan",
                "off",
                "--log-level",
                "warning",
                "eunice.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(f"{var}/server.log", "w"),
        )
        try:
            wait_for(port, 120)
            started = time.monotonic()
            result = subprocess.run(
                [
                    str(Path(python).parent / "schemathesis"),
                    "--config-file",
                    str(ROOT / "bench" / "schemathesis.toml"),
                    "run",
                    f"http://127.0.0.1:{port}/api/schema/",
                    "--checks",
                    "all",
                    "--max-examples",
                    str(args.max_examples),
                    "--generation-deterministic",
                    # One worker: CPython 3.11's ast.parse is not safe across threads,
                    # and hypothesis parses lambdas while it describes a strategy.
                    "--workers",
                    "1",
                    "-H",
                    f"Authorization: Token {token}",
                ],
                # Its report folder goes with the temporary directory; the hooks make upload files.
                cwd=var,
                env={
                    **env,
                    "EUNICE_FUZZ_CONVERSATION": conversation,
                    "SCHEMATHESIS_HOOKS": "bench.schemathesis_hooks",
                    "PYTHONPATH": str(ROOT),
                },
                timeout=900,
            )
            print(f"schemathesis: exit {result.returncode} after {time.monotonic() - started:.0f} s")
            if result.returncode:  # what the server logged (a 500's traceback), before the folder goes
                print(
                    "--- server log (last 60 lines) ---",
                    *Path(f"{var}/server.log").read_text().splitlines()[-60:],
                    sep="\n",
                )
            return result.returncode
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
