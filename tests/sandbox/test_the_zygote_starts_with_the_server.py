"""With custom tools on, the server starts the sandbox's zygote, so the first call does not."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STARTED_WITH_THE_APP = (
    "import eunice.asgi, eunice.preload; eunice.preload.wait(120); from registry.sandbox import service; "
    "print(service._zygote is not None and service._zygote.alive); service.shutdown()"
)


def zygote_up_after_start(tmp_path, **env: str) -> str:
    """Load the app in a fresh process, as a server does; whether the zygote is running."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "eunice.settings",
        "SECRET_KEY": "test-only",
        "EUNICE_PRELOAD_TOOL_SEARCH": "0",
        "EUNICE_SANDBOX_SCRATCH": str(tmp_path / "scratch"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **env,
    }
    result = subprocess.run(
        [sys.executable, "-c", STARTED_WITH_THE_APP], capture_output=True, text=True, env=env, cwd=ROOT, timeout=180
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_the_zygote_is_running_once_the_app_has_loaded(tmp_path):
    assert zygote_up_after_start(tmp_path, EUNICE_CUSTOM_TOOLS="1") == "True"


def test_preloading_can_be_turned_off(tmp_path):
    assert zygote_up_after_start(tmp_path, EUNICE_CUSTOM_TOOLS="1", EUNICE_PRELOAD_SANDBOX="0") == "False"


def test_without_custom_tools_nothing_is_started(tmp_path):
    assert zygote_up_after_start(tmp_path, EUNICE_CUSTOM_TOOLS="0") == "False"
