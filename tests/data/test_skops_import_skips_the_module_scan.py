"""Importing skops (the trained models' file format) costs no search of every loaded module,
trusts the same names as a plain import, and leaves SciPy as it was.

Each test runs in a fresh interpreter: the import happens once per process.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(script: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


# A module loaded before SciPy that counts the attribute reads made on it: skops's search
# for a function's module reads every loaded module it passes, in order.
COUNTING_MODULE = """
import json, sys, threading, types

class Counting(types.ModuleType):
    reads = 0
    def __getattr__(self, name):
        Counting.reads += 1
        raise AttributeError(name)

sys.modules["counting_module"] = Counting("counting_module")
import numpy as np
import scipy.special
"""


def test_skops_is_imported_without_searching_the_loaded_modules_and_scipy_is_left_as_it_was():
    found = run(
        COUNTING_MODULE
        + """
from tools.lib.skops_io import skops_io
modules = []
threads = [threading.Thread(target=lambda: modules.append(skops_io())) for _ in range(4)]
for thread in threads: thread.start()
for thread in threads: thread.join()
import skops.io
print(json.dumps({
    "reads": Counting.reads,
    "same_module": all(module is skops.io for module in modules) and len(modules) == 4,
    "named_after": sorted(
        name for name in dir(scipy.special)
        if isinstance(getattr(scipy.special, name), np.ufunc) and hasattr(getattr(scipy.special, name), "__module__")
    ),
}))
"""
    )
    assert found["reads"] == 0
    assert found["same_module"]
    # SciPy's own: the functions that had a module name before have it still, and no others.
    plain = run(
        COUNTING_MODULE
        + """
print(json.dumps({"named_before": sorted(
    name for name in dir(scipy.special)
    if isinstance(getattr(scipy.special, name), np.ufunc) and hasattr(getattr(scipy.special, name), "__module__")
)}))
"""
    )
    assert found["named_after"] == plain["named_before"]


def test_a_plain_import_does_search_them_so_the_counting_module_would_see_it():
    """The other test's zero is not for want of a search to count."""
    found = run(COUNTING_MODULE + "import skops.io\nprint(json.dumps({'reads': Counting.reads}))")
    assert found["reads"] > 100


@pytest.mark.once
def test_the_names_skops_trusts_are_those_of_a_plain_import_in_a_process_loaded_like_a_server():
    found = run(
        """
import importlib, json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "eunice.test_settings"
import django
django.setup()
import anthropic, pandas, shap, sklearn.ensemble  # what a server has loaded by a model's first load
from tools.lib.skops_io import skops_io

def trusted():
    from skops.io import _trusted_types
    return {name: getattr(_trusted_types, name) for name in dir(_trusted_types) if name.isupper()}

skops_io()
quick = trusted()
importlib.reload(importlib.import_module("skops.io._trusted_types"))  # its plain search, now
print(json.dumps({"quick": quick, "plain": trusted(), "count": len(quick["SCIPY_UFUNC_TYPE_NAMES"])}, default=str))
"""
    )
    assert found["count"] > 100
    assert found["quick"] == found["plain"]
