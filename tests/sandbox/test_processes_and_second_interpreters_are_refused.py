"""Attack class: starting processes or a second interpreter."""

import pytest

from tests.sandbox.conftest import run

OS = {
    "subprocess.run": "import subprocess\nsubprocess.run(['/bin/true'], check=True)",
    "os.fork": "import os\nos.fork()",
    "os.execv a second python": "import os, sys\nos.execv(sys.executable, [sys.executable, '-c', '1'])",
    "multiprocessing": "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()",
    "kill another process": "import os\nos.kill(1, 0)",
}


@pytest.mark.parametrize("code", OS.values(), ids=OS.keys())
def test_processes_are_stopped_by_the_os_layer_when_the_language_layer_is_off(code):
    outcome = run(code, language=False)
    assert not outcome.ok
    assert outcome.stopped_by == "os", outcome.error


@pytest.mark.parametrize("call", ["os.system(cmd)", "ctypes.CDLL(None).system(cmd.encode())"])
def test_a_shell_never_starts_when_the_language_layer_is_off(call, tmp_path):
    marker = tmp_path / "pwned"
    code = f"import os, ctypes\ncmd = 'touch {marker}'\nresult = {call}"
    outcome = run(code, language=False)
    assert outcome.answer["text"] != "0"
    assert not marker.exists()


@pytest.mark.parametrize("code", ["import subprocess", "result = compile('1', 'x', 'eval')"])
def test_processes_and_compilers_are_stopped_by_the_language_layer(code):
    assert run(code).stopped_by == "language"
