"""Attack class: pandas' string dispatch and expression engines as a way to call anything."""

import pytest

from tests.sandbox.conftest import SALES, output, run

DISPATCH = {
    "agg to_csv": "df.agg('to_csv', 0, 'x.csv')",
    "apply to_pickle": "df.apply('to_pickle', args=('x.pkl',))",
    "transform by name": "result = df.transform('to_json')",
    "groupby agg by name": "result = df.groupby('region').agg('to_csv')",
    "named aggregation": "result = df.groupby('region').agg(x=('units', 'to_csv'))",
    "dict aggregation": "result = df.agg({'units': 'to_pickle'})",
    "pivot_table aggfunc": "result = pd.pivot_table(df, values='units', index='region', aggfunc='to_csv')",
    "query with @ local": "result = df.query('@pd.io.common.os.system(\"id\")', engine='python')",
    "query with attribute access": "result = df.query('units.to_csv()')",
    "query on the python engine": "result = df.query('units > 1', engine='python')",
    "eval with a call": "result = df.eval('units.sum()')",
}


@pytest.mark.parametrize("code", DISPATCH.values(), ids=DISPATCH.keys())
def test_string_dispatch_is_stopped_by_the_language_layer(code):
    outcome = run(code, df=SALES)
    assert not outcome.ok
    assert outcome.stopped_by == "language", outcome.error


def test_aggregations_by_ordinary_name_still_work():
    text = output(run("result = df.groupby('region').agg(total=('units', 'sum'), top=('price', 'max'))", df=SALES))
    assert "north" in text and "17" in text


def test_a_vetted_query_runs_on_numexpr():
    assert "east" in output(run("result = df.query('units > 4 and price >= 4.0')", df=SALES))
