"""Attack class: modules reachable through pandas and numpy without an underscore."""

import pytest

from tests.sandbox.conftest import SALES, run

GADGETS = {
    "pd.io.common.os.system": "result = pd.io.common.os.system('id')",
    "pd.core.common.builtins.open": "result = pd.core.common.builtins.open('/etc/passwd').read()",
    "np.ctypeslib.ctypes.CDLL": "result = np.ctypeslib.ctypes.CDLL(None)",
    "ndarray.ctypes": "result = np.ones(3).ctypes.data",
    "pd.api accessor registration": "pd.api.extensions.register_dataframe_accessor('x')",
    "pd.options": "pd.options.display.max_rows = 1",
    "np.lib": "result = np.lib.format",
    "import statement": "import os\nresult = os.getcwd()",
    "from import": "from subprocess import run\nresult = run(['id'])",
    "df.style renders with jinja2": "result = df.style.to_html()",
    "pd.eval": "result = pd.eval('1+1')",
}


@pytest.mark.parametrize("code", GADGETS.values(), ids=GADGETS.keys())
def test_module_gadgets_are_stopped_by_the_language_layer(code):
    outcome = run(code, df=SALES)
    assert not outcome.ok
    assert outcome.stopped_by == "language", outcome.error


def test_the_facades_refuse_with_a_message_naming_the_attribute():
    assert "pd.io is not available" in run("result = pd.io").error
