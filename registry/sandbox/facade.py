"""``pd`` and ``np`` as tool code sees them: allowlists, never the modules.

A facade hands out only the names listed here; anything else, including every
submodule (``pd.io``, ``np.ctypeslib``) and every reader (``pd.read_pickle``,
``np.load``), is refused by the language layer. No Django import.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from registry.sandbox.policy import SandboxRefusal, facade_refusal, vetted

PANDAS_NAMES = (
    "DataFrame",
    "Series",
    "Index",
    "MultiIndex",
    "RangeIndex",
    "DatetimeIndex",
    "Categorical",
    "CategoricalDtype",
    "Timestamp",
    "Timedelta",
    "Period",
    "Interval",
    "NamedAgg",
    "IndexSlice",
    "NA",
    "NaT",
    "concat",
    "merge",
    "merge_asof",
    "merge_ordered",
    "melt",
    "wide_to_long",
    "to_datetime",
    "to_numeric",
    "to_timedelta",
    "date_range",
    "period_range",
    "timedelta_range",
    "interval_range",
    "isna",
    "isnull",
    "notna",
    "notnull",
    "cut",
    "qcut",
    "get_dummies",
    "factorize",
    "unique",
    "json_normalize",
    "Grouper",
    "DateOffset",
)
NUMPY_NAMES = (
    "array",
    "asarray",
    "arange",
    "linspace",
    "zeros",
    "ones",
    "full",
    "empty",
    "eye",
    "zeros_like",
    "ones_like",
    "full_like",
    "where",
    "select",
    "clip",
    "round",
    "floor",
    "ceil",
    "sqrt",
    "exp",
    "log",
    "log10",
    "log2",
    "log1p",
    "abs",
    "absolute",
    "sign",
    "power",
    "mod",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "arctan2",
    "hypot",
    "degrees",
    "radians",
    "sum",
    "mean",
    "median",
    "std",
    "var",
    "min",
    "max",
    "amin",
    "amax",
    "argmin",
    "argmax",
    "nansum",
    "nanmean",
    "nanmedian",
    "nanstd",
    "nanmin",
    "nanmax",
    "percentile",
    "quantile",
    "cumsum",
    "cumprod",
    "diff",
    "prod",
    "average",
    "corrcoef",
    "cov",
    "histogram",
    "digitize",
    "unique",
    "sort",
    "argsort",
    "concatenate",
    "stack",
    "vstack",
    "hstack",
    "reshape",
    "transpose",
    "dot",
    "matmul",
    "outer",
    "isnan",
    "isfinite",
    "isinf",
    "nan_to_num",
    "maximum",
    "minimum",
    "logical_and",
    "logical_or",
    "logical_not",
    "allclose",
    "isclose",
    "count_nonzero",
    "nonzero",
    "repeat",
    "tile",
    "searchsorted",
    "interp",
    "polyfit",
    "polyval",
    "bincount",
    "cross",
    "trace",
    "flip",
    "roll",
    "meshgrid",
    "vectorize",
    "nan",
    "inf",
    "pi",
    "e",
    "newaxis",
    "ndarray",
    "dtype",
    "datetime64",
    "timedelta64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bool_",
    "str_",
    "object_",
    "integer",
    "floating",
    "number",
)
NUMPY_RANDOM_NAMES = (
    "default_rng",
    "seed",
    "rand",
    "randn",
    "randint",
    "normal",
    "uniform",
    "choice",
    "permutation",
    "shuffle",
)
NUMPY_LINALG_NAMES = ("norm", "inv", "det", "solve", "eig", "eigh", "svd", "lstsq", "pinv", "matrix_rank", "qr")


class Facade:
    """A read-only namespace that refuses every name it was not given."""

    __slots__ = ("_label", "_members")

    def __init__(self, label: str, members: dict[str, Any]) -> None:
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_members", members)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._members[name]
        except KeyError:
            raise facade_refusal(self._label, name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise SandboxRefusal(f"{self._label} is read-only in a custom tool")

    def __dir__(self) -> list[str]:
        return sorted(self._members)

    def __repr__(self) -> str:
        return f"<{self._label} (sandbox facade)>"


def _pick(module: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(module, name) for name in names if hasattr(module, name)}


def build_pandas() -> Facade:
    members = _pick(pd, PANDAS_NAMES)
    # String-evaluating functions go through the same gate as the methods of that name.
    members["pivot_table"] = vetted(pd.pivot_table, "pivot_table")
    members["crosstab"] = vetted(pd.crosstab, "crosstab")
    return Facade("pd", members)


def build_numpy() -> Facade:
    members = _pick(np, NUMPY_NAMES)
    members["random"] = Facade("np.random", _pick(np.random, NUMPY_RANDOM_NAMES))
    members["linalg"] = Facade("np.linalg", _pick(np.linalg, NUMPY_LINALG_NAMES))
    return Facade("np", members)
