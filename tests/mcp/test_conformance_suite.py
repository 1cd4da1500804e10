"""The official MCP conformance suite's client scenarios pass against Eunice's own client
(manage.py mcp_conformance_client), one scenario at a time: both revisions, every scenario
without an OAuth step and one auth/* scenario of each kind (the script's --requirements runs
every one). Needs npm (the suite and Node 22 are fetched on first use)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from registry.mcp.conformance import arguments_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: the conformance suite cannot be fetched")
@pytest.mark.timeout(600)  # 15 scenarios, each a Node and a manage.py process
def test_the_client_scenarios_pass_on_both_revisions_authorization_included():
    run = subprocess.run(
        [str(ROOT / "scripts" / "mcp-conformance")], cwd=ROOT, capture_output=True, text=True, timeout=1500
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "passed 15 of 15 client scenarios" in run.stdout


def test_the_client_sends_what_a_schema_asks_for_defaults_first():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "verbose": {"type": "boolean", "default": False},
            "note": {"type": "string"},
        },
        "required": ["a", "unit"],
    }
    assert arguments_for(schema) == {"a": 3, "unit": "c", "verbose": False}
