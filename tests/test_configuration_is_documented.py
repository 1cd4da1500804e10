"""Every environment variable the product reads has a row in docs/configuration.md.

A setting nobody can find is a setting nobody can use; this ratchet fails the moment
code starts reading a variable the reference does not list.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("eunice", "registry", "tools", "conversations", "llm")
# Read by code, but set by Eunice itself for its own child processes or by the test settings.
INTERNAL = {
    "EUNICE_KILLABLE_DATABASES",
    "EUNICE_SANDBOX_CONTROL_FD",
    "EUNICE_SANDBOX_PATH",
    "EUNICE_TEST_SCRIPTED_MODEL_URL",
}
READS = re.compile(r"""(?:env_[a-z_]+\(\s*|environ\.get\(\s*|environ\[\s*|getenv\(\s*)["']([A-Z][A-Z0-9_]+)["']""")


def variables_the_code_reads() -> set[str]:
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            names.update(READS.findall(path.read_text(encoding="utf-8")))
    return names - INTERNAL


def test_every_variable_the_code_reads_is_in_the_configuration_reference():
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    undocumented = sorted(name for name in variables_the_code_reads() if f"`{name}`" not in reference)
    assert undocumented == [], f"add these to docs/configuration.md: {undocumented}"


def test_the_scan_finds_the_variables_settings_reads():
    assert {"DATABASE_URL", "REDIS_URL", "EUNICE_TOOL_TIMEOUT"} <= variables_the_code_reads()
