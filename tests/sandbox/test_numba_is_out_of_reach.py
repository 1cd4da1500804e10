"""Attack class: a JIT compiler in the environment as a way around the policy.

shap (``explain_prediction``) brings numba into the environment the sandbox runs from.
pandas hands functions to numba when asked for ``engine="numba"``, and the policy vets
``engine=`` only on the methods that take code (``apply``, ``agg``, …); window and
group-by reductions take it unvetted. Two layers stop it: a run cannot read files of
the installation it did not load before lockdown (Landlock; pandas' numba kernels are
among them), and the zygote blocks the compilers' imports for itself and every run,
for a host where the first layer is missing.
"""

import pytest

from tests.conftest import text

pytestmark = pytest.mark.django_db

ATTEMPTS = (
    "d = pd.DataFrame({'r': ['a', 'b', 'a'], 'u': [1.0, 2.0, 3.0]})\n"
    "seen = []\n"
    "for attempt in (\n"
    "    lambda: d[['u']].rolling(2).mean(engine='numba'),\n"
    "    lambda: d.groupby('r')['u'].sum(engine='numba'),\n"
    "    lambda: d[['u']].expanding().max(engine='numba'),\n"
    "):\n"
    "    try:\n"
    "        attempt()\n"
    "        seen.append('compiled')\n"
    "    except Exception:\n"
    "        seen.append('refused')\n"
    "result = ' | '.join(seen)\n"
)


def test_engine_numba_fails_in_the_sandbox_as_if_numba_were_not_installed(approved_tool, call):
    approved_tool("jit", ATTEMPTS)
    shown = text(call("jit"))
    assert "compiled" not in shown, shown
    assert shown.strip().strip("'\"") == "refused | refused | refused", shown
