"""Run the code paths tools use once, in the zygote, before any run is locked down.

pandas and numpy import submodules lazily on first use; after Landlock a run
cannot read the Python installation, so whatever a tool may touch is touched
here first. No Django import.
"""

from __future__ import annotations

import io
import json

WARMUP_PROGRAM = """
d = pd.DataFrame({"city": ["a", "b", "a", "c"], "n": [1, 2, 3, 4], "x": [0.5, 1.5, 2.5, None],
                  "when": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-02-01", "2024-03-05"])})
d["y"] = d["n"] * 2
d.loc[d["n"] > 2, "flag"] = True
d.iloc[0, 1] = 7
g = d.groupby("city").agg(total=("n", "sum"), avg=("x", "mean")).reset_index()
m = d.merge(g, on="city", how="left").sort_values(["city", "n"], ascending=[True, False])
p = pd.pivot_table(d, values="n", index="city", columns=d["when"].dt.month, aggfunc="sum", fill_value=0)
c = pd.crosstab(d["city"], d["flag"].fillna(False))
q = d.query("n > 1 and city == 'a'")
e = d.eval("n * 2 + 1")
r = d.set_index("when").resample("ME")["n"].sum().rolling(2, min_periods=1).mean()
s = d["city"].str.upper().str.contains("A").value_counts()
melted = d.melt(id_vars=["city"], value_vars=["n", "y"])
wide = melted.pivot_table(index="city", columns="variable", values="value", aggfunc="max")
cuts = pd.cut(d["n"], bins=2).astype(str), pd.qcut(d["n"], 2, labels=False)
dummies = pd.get_dummies(d["city"])
stats = d.describe(include="all")
cat = d["city"].astype("category").cat.codes
ranked = d["n"].rank(pct=True).pct_change().fillna(0).cumsum().shift(1).diff()
period = d["when"].dt.to_period("M").astype(str)
text = d.to_csv(index=False) + d.to_json(orient="records", date_format="iso") + str(d.to_dict("records"))
arr = np.array([[1.0, 2.0], [3.0, 4.0]])
lin = np.linalg.inv(arr) @ arr + np.linalg.norm(arr) + np.linalg.det(arr)
rng = np.random.default_rng(0).normal(size=5).round(3)
vals = np.where(arr > 2, arr, np.nan), np.nanmean(arr), np.percentile(arr, 90), np.unique([1, 1, 2])
hist = np.histogram(rng, bins=3), np.polyfit([0, 1, 2], [0, 1, 4], 2), np.corrcoef(arr)
apply = d["n"].apply(lambda v: v + 1).map(lambda v: v * 2).sum() + d[["n", "y"]].apply(sum, axis=1).max()
t = d.transform({"n": "cumsum"}), d.groupby("city")["n"].transform("mean"), d.agg(["min", "max"])
dt = pd.date_range("2024-01-01", periods=3, freq="D"), pd.Timestamp("2024-01-01") + pd.Timedelta(days=2)
con = pd.concat([d, d], ignore_index=True).drop_duplicates().dropna(subset=["x"]).nlargest(2, "n")
printed_out = str(d.dtypes) + repr(g) + f"{lin[0][0]:.2f}"
result = m.head(30)
"""


def exercise() -> None:
    """Compile and run the warm-up program, and render its results, in this process."""
    from registry.sandbox import runner

    code = runner.compile_tool(WARMUP_PROGRAM)
    glb = runner.namespace({}, None, lambda name, inputs=None: "")
    exec(code, glb)
    for value in (glb["result"], glb["g"]["total"], {"message": "m", "n": 1}, 1.5):
        json.dumps(runner.render(value), default=str)
    io.StringIO().write(glb["stats"].to_string(max_rows=30, max_cols=15))
    _touch_error_paths()


def _touch_error_paths() -> None:
    import pandas as pd

    frame = pd.DataFrame({"a": [1]})
    for failing in (lambda: frame["missing"], lambda: frame.query("zz > 1", engine="numexpr"), lambda: 1 / 0):
        try:
            failing()
        except Exception:  # noqa: BLE001 - loading the exception machinery is the point
            pass
