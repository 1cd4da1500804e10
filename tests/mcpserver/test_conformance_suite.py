"""The official MCP conformance suite's server scenarios pass against the product's endpoint
(manage.py mcp_conformance_server serving the fixture tools at /mcp), on both revisions.
Needs npm (the suite and Node 22 are fetched on first use)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: the conformance suite cannot be fetched")
def test_every_listed_server_scenario_passes_on_both_revisions():
    run = subprocess.run(
        [str(ROOT / "scripts" / "mcp-conformance"), "--server"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "passed 22 of 22 server scenarios" in run.stdout
