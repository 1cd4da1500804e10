"""A ratchet: files and JSON from outside are parsed only through the bounded readers.

eunice/bounded_read.py (tables, workbooks, documents, archives) and
eunice/jsonlimits.py (JSON) check limits before a parser allocates. A new
``pd.read_csv``, ``load_workbook``, ``ZipFile``, ``PdfReader`` or ``json.loads``
anywhere else fails this test: route it through those modules, or, for input
that never comes from outside, add the line here with the reason.
"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOUNDED = {"eunice/bounded_read.py", "eunice/jsonlimits.py"}

READERS = re.compile(
    r"\b(?:pd|pandas)\.read_\w+\s*\(|\bread_(?:csv|excel|json|parquet|feather|orc|fwf|html|xml|pickle|sas|spss|stata)\s*\("
    r"|\bload_workbook\s*\(|\bZipFile\s*\(|\bPdfReader\s*\(|\bParquetFile\s*\(|\bExcelFile\s*\("
    r"|\bfrom docx import\b|\bdocx\.Document\s*\(|\btarfile\.open\s*\(|\bgzip\.(?:open|decompress)\s*\("
    r"|\bzlib\.decompress\s*\(|\bjson_normalize\s*\("
)
JSON = re.compile(r"\b(?:json|orjson)\.loads?\s*\(")

# path → why its JSON never comes from outside (or is bounded another way).
TRUSTED_JSON = {
    "llm/anthropic_stream.py": "orjson refuses past 1024 levels itself; its fallback is loads_bounded",
    "llm/scripted/script.py": "the demo model server's own script file",
    "llm/scripted/server.py": "the demo model server reading the SDK's requests (our own process)",
    "conversations/recording.py": "event blobs this process wrote",
    "registry/fields.py": "database values this process wrote",
    "registry/migrations/0007_mcp_trust.py": "database values the app wrote (a server's env and headers, sealed)",
    "conversations/management/commands/call_tool.py": "the operator's own command line",
    "registry/management/commands/create_custom_tool.py": "the operator's own command line",
    "registry/sandbox/client.py": "the zygote's own reports (our code, outside any run); run results use loads_bounded",
    "registry/sandbox/protocol.py": "recv_json runs in the sandboxed child, reading the host",
    "registry/sandbox/runner.py": "inside the sandboxed child: a crash there is the run's own",
    "registry/sandbox/zygote.py": "the zygote reading the host",
    "tools/charts.py": "pandas' to_json of a frame (two levels)",
    "tools/data.py": "pandas' to_json of a frame (two levels)",
    "tools/cooccurrence.py": "pandas' to_json of a frame (two levels)",
    "registry/sandbox/bridge.py": "pandas' to_json of a frame, or json.dumps of the host's own value",
    "conversations/records.py": "event blobs this process wrote",
    "conversations/timeline.py": "event blobs this process wrote",
    "registry/killable_child.py": "the parent server's own DATABASES, in the child's environment",
    "tools/lib/geo.py": "pandas' to_json of a frame, and shapely's to_geojson of its shapes",
    "tools/trained_models.py": "pandas' to_json of a frame (two levels)",
}
# path → why it may call a reader directly.
TRUSTED_READERS = {
    "tools/lib/render_docs.py": "writes DOCX (Document() makes a new one); reads nothing",
    "tools/lib/skill_format.py": "writes a skill's export zip; its import reads through check_zip",
    "datacatalog/geofiles.py": "reads a GeoParquet upload only after read_table checked it against the limits",
}


def product_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [p for p in listed.stdout.split() if not p.startswith(("tests/", "bench/")) and p not in BOUNDED]


def offenders(pattern: re.Pattern, trusted: dict[str, str]) -> list[str]:
    found = []
    for path in product_files():
        if path in trusted:
            continue
        for number, line in enumerate((ROOT / path).read_text().splitlines(), 1):
            if pattern.search(line.split("#", 1)[0]):
                found.append(f"{path}:{number}: {line.strip()}")
    return found


def test_no_file_reader_is_called_outside_the_bounded_module():
    assert offenders(READERS, TRUSTED_READERS) == []


def test_no_json_from_outside_is_parsed_without_a_depth_limit():
    assert offenders(JSON, TRUSTED_JSON) == []


def test_every_exception_still_has_a_reason_to_be_there():
    """An allowance for a file that no longer parses anything is removed, not kept."""
    stale = [path for path in TRUSTED_JSON if not JSON.search((ROOT / path).read_text())]
    stale += [path for path in TRUSTED_READERS if not READERS.search((ROOT / path).read_text())]
    assert stale == []
