"""``skops.io``, imported without its scan of every loaded module.

On import, skops names each of SciPy's special functions (``numpy.ufunc``
objects; SciPy gives them no ``__module__``) by searching ``sys.modules``, in
order, for the first module that holds it: about 860 searches. A server has
some 7,000 modules loaded by then (the Anthropic SDK alone brings 3,400), so
the import cost 1.5 s of CPU on a quiet machine and 6-10 s under load, on
the first predict or explain_prediction call of each process; the tool's
whole cold path was about twice what it is without the scan
(``bench/model_files.py``).

For the length of the import each of those functions is given the
``__module__`` the search would have found: the first ``scipy.special``
module, in ``sys.modules`` order, that holds it (the search cannot find one
earlier: no module imported before ``scipy.special`` can hold its functions).
skops then reads the name straight off the function, and the names it
trusts are the same. The attribute is taken away again afterwards, so SciPy
is left as it was.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from types import ModuleType

_lock = threading.Lock()
_module: ModuleType | None = None


def skops_io() -> ModuleType:
    """The ``skops.io`` module, imported once per process (thread-safe)."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            named = _name_scipy_ufuncs()
            try:
                import skops.io

                _module = skops.io
            finally:
                for ufunc in named:
                    with contextlib.suppress(AttributeError, TypeError):
                        del ufunc.__module__
    return _module


def _name_scipy_ufuncs() -> list:
    """Give each ``scipy.special`` ufunc without a ``__module__`` the one skops's search
    would find; returns those given one."""
    import numpy as np
    import scipy.special

    homes = [
        module
        for name, module in list(sys.modules.items())
        if (name == "scipy.special" or name.startswith("scipy.special.")) and module
    ]
    named = []
    for attribute in dir(scipy.special):
        ufunc = getattr(scipy.special, attribute)
        if not isinstance(ufunc, np.ufunc) or getattr(ufunc, "__module__", None) is not None:
            continue
        home = next((m.__name__ for m in homes if getattr(m, ufunc.__name__, None) is ufunc), None)
        if home is None:
            continue
        try:
            ufunc.__module__ = home
        except (AttributeError, TypeError):  # a NumPy whose ufuncs take no such attribute: skops searches
            continue
        named.append(ufunc)
    return named
