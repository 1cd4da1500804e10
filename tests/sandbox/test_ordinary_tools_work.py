"""The legit suite: ordinary pandas/numpy tool programs must all run under the sandbox."""

import pytest

from tests.sandbox.conftest import SALES, output, run

PROGRAMS = {
    "column arithmetic": ("d = df.copy()\nd['revenue'] = d['units'] * d['price']\nresult = d", "revenue"),
    "loc assignment": ("d = df.copy()\nd.loc[d['units'] > 5, 'big'] = True\nresult = d", "big"),
    "iloc assignment": ("d = df.copy()\nd.iloc[0, 2] = 99\nresult = d", "99"),
    "groupby sum": ("result = df.groupby('region')['units'].sum()", "north"),
    "named aggregation": ("result = df.groupby('region').agg(n=('units', 'count'), avg=('price', 'mean'))", "avg"),
    "pivot table": (
        "result = df.pivot_table(index='region', columns='product', values='units', aggfunc='sum', fill_value=0)",
        "east",
    ),
    "merge": (
        (
            "p = pd.DataFrame({'product': ['a', 'b', 'c'], 'name': ['Ant', 'Bee', 'Cat']})\n"
            "result = df.merge(p, on='product')"
        ),
        "Bee",
    ),
    "concat": ("result = pd.concat([df.head(2), df.tail(2)], ignore_index=True)", "south"),
    "sort and head": ("result = df.sort_values('units', ascending=False).head(3)", "10"),
    "filter with mask": ("result = df[(df['price'] > 3) & (df['region'] != 'east')]", "south"),
    "query": ("result = df.query('units >= 5 and price < 5')", "north"),
    "eval": ("result = df.eval('units * price')", "25.0"),
    "describe": ("result = df['units'].describe()", "mean"),
    "value counts": ("result = df['region'].value_counts()", "north"),
    "string accessor": ("result = df['region'].str.upper().str.startswith('N').sum()", "2"),
    "datetime accessor": ("result = df.groupby(df['day'].dt.month)['units'].sum()", "1"),
    "resample": ("result = df.set_index('day').resample('ME')['units'].sum()", "2024-01-31"),
    "rolling mean": ("result = df['units'].rolling(2, min_periods=1).mean().round(1)", "7.0"),
    "cumulative sum": ("result = df['units'].cumsum().tolist()", "[10, 14, 21"),
    "apply lambda": ("result = df['units'].apply(lambda u: u * 2).max()", "20"),
    "apply along rows": (
        "result = df[['units', 'price']].apply(lambda r: r['units'] * r['price'], axis=1).sum()",
        "188.5",
    ),
    "melt": ("result = df.melt(id_vars=['region'], value_vars=['units', 'price'])", "variable"),
    "cut into bins": ("result = pd.cut(df['units'], bins=[0, 5, 10], labels=['low', 'high']).value_counts()", "high"),
    "dummies": ("result = pd.get_dummies(df['product']).sum()", "a"),
    "rename columns": ("d = df.copy()\nd.columns = [c.upper() for c in d.columns]\nresult = d", "REGION"),
    "fillna and dropna": ("d = df.copy()\nd.loc[0, 'price'] = None\nresult = d.fillna({'price': 0}).dropna()", "0.0"),
    "numpy stats": (
        (
            "a = np.array(df['units'])\n"
            "result = {'message': 'stats', 'mean': float(np.mean(a)), 'p90': float(np.percentile(a, 90))}"
        ),
        "stats",
    ),
    "numpy linear algebra": ("m = np.array([[2.0, 0.0], [0.0, 4.0]])\nresult = np.linalg.inv(m).tolist()", "0.25"),
    "numpy where": ("result = np.where(df['units'] > 5, 'hi', 'lo').tolist()", "hi"),
    "seeded random": ("rng = np.random.default_rng(42)\nresult = round(float(rng.normal(size=1000).mean()), 1)", "0.0"),
    "inputs drive the filter": ("result = df[df['region'] == inputs['region']]", "south"),
    "loops and dicts": (
        (
            "totals = {}\n"
            "for region, units in zip(df['region'], df['units']):\n"
            "    totals[region] = totals.get(region, 0) + units\n"
            "result = sorted(totals.items())"
        ),
        "('east', 8)",
    ),
    "printed output": ("print('hello')\nresult = printed", "hello"),
    "to_csv as a string": ("result = df.head(2).to_csv(index=False)", "region,product"),
    "full response dict": ("result = {'message': 'done', 'rows': len(df)}", "'rows': 6"),
    "no dataset": ("result = 'none' if df is None else 'some'", "none"),
}


@pytest.mark.parametrize("code,expected", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_an_ordinary_tool_program_runs_and_answers(code, expected):
    frame = None if "df is None" in code else SALES
    text = output(run(code, df=frame, inputs={"region": "south"}))
    assert expected in text


def test_there_are_at_least_thirty_ordinary_programs():
    assert len(PROGRAMS) >= 30
