"""Attack class: files, URLs, pickles and sockets, through pandas and in plain Python."""

from pathlib import Path

import pytest

from tests.sandbox.conftest import SALES, run

LANGUAGE = {
    "read_csv of environ": "result = pd.read_csv('/proc/self/environ')",
    "read_pickle": "result = pd.read_pickle('x.pkl')",
    "to_csv to a path": "df.to_csv('/tmp/x.csv')",
    "to_pickle": "df.to_pickle('x.pkl')",
    "np.load": "result = np.load('x.npy', allow_pickle=True)",
    "read_json from a URL": "result = pd.read_json('http://169.254.169.254/latest/meta-data')",
    "open builtin": "result = open('/etc/passwd').read()",
    "ndarray.tofile": "np.ones(3).tofile('/tmp/x')",
}

SETTINGS_SOURCE = str(Path(__file__).resolve().parents[2] / "eunice" / "settings.py")

OS = {
    "read a file outside scratch": "result = open('/etc/passwd').read()",
    "read the environ of the run": "result = open('/proc/self/environ').read()",
    "read the parent's environ": "import os\nresult = open(f'/proc/{os.getppid()}/environ').read()",
    "read the Django settings source": f"result = open({SETTINGS_SOURCE!r}).read()",
    "write outside scratch": "open('/tmp/escaped.txt', 'w').write('x')",
    "a TCP connection": "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(('127.0.0.1', 5432))",
    "a unix socket": "import socket\nsocket.socket(socket.AF_UNIX).connect('/var/run/postgresql/.s.PGSQL.5432')",
    "pickle round trip through a file": ("import pickle\nopen('/tmp/p.pkl', 'wb').write(pickle.dumps(1))"),
}


@pytest.mark.parametrize("code", LANGUAGE.values(), ids=LANGUAGE.keys())
def test_io_is_stopped_by_the_language_layer(code):
    outcome = run(code, df=SALES)
    assert outcome.stopped_by == "language", outcome.error


@pytest.mark.parametrize("code", OS.values(), ids=OS.keys())
def test_io_is_stopped_by_the_os_layer_when_the_language_layer_is_off(code):
    outcome = run(code, language=False)
    assert not outcome.ok
    assert outcome.stopped_by == "os", outcome.error


def test_a_run_may_use_its_own_scratch_directory_when_the_language_layer_is_off():
    outcome = run("open('mine.txt', 'w').write('hi')\nresult = open('mine.txt').read()", language=False)
    assert outcome.answer == {"kind": "text", "text": "hi"}


def test_a_csv_pickle_smuggled_into_scratch_cannot_be_loaded_by_tool_code():
    code = "df.to_csv('evil.pkl')\nresult = pd.read_pickle('evil.pkl')"
    assert run(code, df=SALES).stopped_by == "language"
