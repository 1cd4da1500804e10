"""The class, not the instance: every pandas/numpy method tool code can reach that takes
a function-like or expression argument is in the policy's table, vetted or shown to
only ever call what it is given. A pandas upgrade that adds one fails here first.

This walks the real classes and runs the real policy in-process (no sandbox run is
needed to read a signature); the attacks themselves go through the real path in
test_string_dispatch_is_refused.py and test_expression_engines_are_vetted.py.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from registry.sandbox import policy
from registry.sandbox.facade import build_numpy, build_pandas

# Parameter names under which pandas/numpy accept a function, a function's name or code.
CODE_PARAMETERS = frozenset(
    {"func", "arg", "aggfunc", "expr", "f", "function", "mapper", "win_type", "engine", "pyfunc", "callable"}
)
TRIPWIRE = "sbx_tripwire"


def _samples() -> dict[str, object]:
    frame = pd.DataFrame(
        {"r": ["a", "b", "a"], "u": [1, 2, 3], "s": ["x", "y", "z"], "t": pd.date_range("2024-01-01", periods=3)}
    )
    return {
        "DataFrame": frame,
        "Series": frame["u"],
        "Index": frame.index,
        "DatetimeIndex": pd.DatetimeIndex(frame["t"]),
        "MultiIndex": pd.MultiIndex.from_frame(frame[["r", "s"]]),
        "Categorical": pd.Categorical(["a"]),
        "DataFrameGroupBy": frame.groupby("r"),
        "SeriesGroupBy": frame.groupby("r")["u"],
        "Resampler": frame.set_index("t").resample("D"),
        "Rolling": frame[["u"]].rolling(2),
        "Expanding": frame[["u"]].expanding(),
        "ExponentialMovingWindow": frame[["u"]].ewm(com=0.5),
        "RollingGroupby": frame.groupby("r")["u"].rolling(2),
        "ResamplerGroupby": frame.set_index("t").groupby("r").resample("D"),
        "StringMethods": frame["s"].str,
        "DatetimeProperties": frame["t"].dt,
        "CategoricalAccessor": frame["s"].astype("category").cat,
        "Timestamp": pd.Timestamp("2024-01-01"),
        "Timedelta": pd.Timedelta(days=1),
        "ndarray": np.arange(3),
        "Generator": np.random.default_rng(0),
    }


def _methods(sample: object):
    """(name, function) for each public method of the sample's class, read statically
    (reading properties would run them)."""
    for name, member in inspect.getmembers_static(type(sample)):
        if name.startswith("_"):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if callable(member) and not isinstance(member, type):
            yield name, member


def _parameters(func) -> set[str]:
    try:
        return set(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return set()


def _code_taking_methods() -> dict[str, dict[str, set[str]]]:
    found: dict[str, dict[str, set[str]]] = {}
    for label, sample in _samples().items():
        for name, func in _methods(sample):
            hits = _parameters(func) & CODE_PARAMETERS
            if hits:
                found.setdefault(name, {})[label] = hits
    return found


FOUND = _code_taking_methods()
ENGINE_ONLY = sorted(name for name, where in FOUND.items() if all(hits == {"engine"} for hits in where.values()))
TAKES_CODE = sorted(set(FOUND) - set(ENGINE_ONLY))


def test_the_walk_finds_the_known_entry_points():
    # Guards the walk itself: if it found nothing, every other test here would pass vacuously.
    assert {"agg", "apply", "transform", "eval", "query", "map", "pipe", "pivot_table"} <= set(TAKES_CODE)


@pytest.mark.parametrize("name", TAKES_CODE)
def test_each_method_taking_code_is_vetted_or_only_calls_what_it_is_given(name):
    assert name in policy.ENTRY_POINTS or name in policy.NEVER_LOOKED_UP, (
        f"{name} takes {FOUND[name]}: add it to policy.ENTRY_POINTS (vetted) or, if pandas only "
        "ever calls that argument, to policy.NEVER_LOOKED_UP"
    )


@pytest.mark.parametrize("name", sorted(policy.ENTRY_POINTS))
def test_every_code_parameter_of_a_vetted_method_is_one_the_gate_checks(name):
    # A renamed parameter (Resampler.transform's is `arg`) would slip past vet_call unchecked.
    entry = policy.ENTRY_POINTS[name]
    checked = set(entry.functions) | {entry.expression, "engine"} | set(entry.choices) | set(entry.labels)
    for label, hits in FOUND.get(name, {}).items():
        unchecked = hits - checked
        assert not unchecked or name in policy.NEVER_LOOKED_UP, f"{label}.{name}: {sorted(unchecked)} is not checked"


@pytest.mark.parametrize("name", ENGINE_ONLY)
def test_methods_taking_only_an_engine_never_run_an_engine_object(name):
    # pandas 3 runs an object's __pandas_udf__ in apply/map; elsewhere engine is compared to "numba".
    for label, sample in _samples().items():
        for method_name, func in _methods(sample):
            if method_name == name and inspect.isfunction(func):
                assert "__pandas_udf__" not in inspect.getsource(func), f"{label}.{name} runs engine objects"


@pytest.fixture
def tripwire(monkeypatch):
    """A public attribute on every sampled class (and numpy) that records any lookup by name."""
    fired: list[str] = []

    def trip(self):
        fired.append(type(self).__name__)
        raise RuntimeError("tripwire")

    for sample in _samples().values():
        for cls in type(sample).__mro__:
            if cls.__module__.startswith(("pandas", "numpy")) and cls is not object:
                try:
                    monkeypatch.setattr(cls, TRIPWIRE, property(trip), raising=False)
                except TypeError:  # a C type that takes no attributes
                    pass
    monkeypatch.setattr(np, TRIPWIRE, lambda *a, **k: fired.append("numpy"), raising=False)
    return fired


def _call_quietly(method, *args, **kwargs) -> None:
    try:
        method(*args, **kwargs)
    except Exception:  # noqa: BLE001 - only whether the tripwire fired matters here
        pass


LABEL_TAKING = sorted(set(policy.NEVER_LOOKED_UP) | {n for n, e in policy.ENTRY_POINTS.items() if e.labels})


@pytest.mark.parametrize("name", LABEL_TAKING)
def test_a_parameter_said_never_to_be_looked_up_is_not(tripwire, name):
    entry = policy.ENTRY_POINTS.get(name)
    for sample in [*_samples().values(), pd]:
        method = getattr(sample, name, None)
        if not callable(method):
            continue
        parameters = _parameters(method)
        if entry is not None and parameters & set(entry.functions):
            continue  # this receiver's method looks names up: vetted, tested below
        _call_quietly(method, TRIPWIRE)
        for parameter in parameters & CODE_PARAMETERS:
            _call_quietly(method, **{parameter: TRIPWIRE})
    assert tripwire == [], f"{name} looked {TRIPWIRE!r} up on {tripwire}"


def test_the_unvetted_methods_do_look_names_up(tripwire):
    # The tripwire works: without the policy, agg on a frame finds the attribute.
    _call_quietly(_samples()["Series"].agg, TRIPWIRE)
    assert tripwire


@pytest.mark.parametrize("name", sorted(n for n, e in policy.ENTRY_POINTS.items() if e.functions))
def test_each_vetted_function_parameter_refuses_an_unknown_name(tripwire, name):
    entry = policy.ENTRY_POINTS[name]
    for sample in _samples().values():
        if not callable(getattr(sample, name, None)):
            continue
        method = policy.guarded_getattr(sample, name)
        for parameter in entry.functions:
            if parameter in _parameters(getattr(sample, name)):
                with pytest.raises(policy.SandboxRefusal):
                    method(**{parameter: TRIPWIRE})
    assert tripwire == []


def test_the_facades_offer_code_taking_functions_only_behind_the_gate():
    for facade, module in ((build_pandas(), pd), (build_numpy(), np)):
        for name in dir(facade):
            member = getattr(facade, name)
            if callable(member) and not isinstance(member, type) and _parameters(member) & CODE_PARAMETERS:
                vetted = member is not getattr(module, name)
                assert vetted or name in policy.NEVER_LOOKED_UP, f"{facade!r}.{name} takes code and is offered unvetted"
    with pytest.raises(policy.SandboxRefusal, match="df.eval"):
        build_pandas().eval  # noqa: B018 - reading it is the refusal


def test_a_method_pandas_adds_tomorrow_is_caught_by_the_walk(monkeypatch):
    def summarise(self, func="sum"):
        return getattr(self, func)()

    monkeypatch.setattr(pd.DataFrame, "summarise", summarise, raising=False)
    unclassified = {
        name
        for name in _code_taking_methods()
        if name not in policy.ENTRY_POINTS and name not in policy.NEVER_LOOKED_UP and name not in ENGINE_ONLY
    }
    assert unclassified == {"summarise"}


@pytest.mark.parametrize("method", ["agg", "aggregate", "transform", "apply", "filter"])
def test_a_groupbys_pair_labels_are_never_looked_up(tripwire, method):
    # The gate lets a (label, function) pair's label through on a GroupBy only: hold pandas to it.
    samples = _samples()
    for receiver in (samples["DataFrameGroupBy"], samples["SeriesGroupBy"]):
        for spec in ([(TRIPWIRE, "sum")], {"u": [(TRIPWIRE, "sum")]}, ((TRIPWIRE, "sum"),)):
            try:
                policy.guarded_getattr(receiver, method)(spec)
            except Exception:  # noqa: BLE001 - refused or rejected by pandas: either is fine
                pass
    assert tripwire == []
