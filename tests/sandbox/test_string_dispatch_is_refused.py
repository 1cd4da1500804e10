"""Attack class: pandas' string dispatch and expression engines as a way to call anything."""

import pytest

from tests.conftest import text
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


# Through the real path: an approved custom tool, called with execute_tool. Each
# names a function pandas would look up with getattr (to_csv writes into the
# run's scratch directory; any other name reaches any method of the receiver).
FRAME = (
    "d = pd.DataFrame({'region': ['n', 's', 'n'], 'units': [1, 2, 3],\n"
    "                  'day': pd.to_datetime(['2024-01-01', '2024-01-02', '2024-01-05'])})\n"
)
REAL_PATH_DISPATCH = {
    "NamedAgg (no longer a tuple)": "result = d.groupby('region').agg(x=pd.NamedAgg('units', 'to_csv'))",
    "NamedAgg by keyword": "result = d.groupby('region').agg(x=pd.NamedAgg(column='units', aggfunc='to_json'))",
    "a tuple of names": "result = d[['units']].agg(('to_csv', 'sum'), 0)",
    "a pair's label outside a groupby": "result = d[['units']].agg([('to_json', 'sum')])",
    "a Series of names": "result = d[['units']].agg(pd.Series(['to_json']))",
    "a generator of names": "result = d[['units']].agg(n for n in ['to_json'])",
    "a dict of lists": "result = d.agg({'units': ['sum', 'to_json']})",
    "groupby transform": "result = d.groupby('region')['units'].transform('to_json')",
    "groupby filter by name": "result = d.groupby('region')['units'].filter('to_json')",
    "resample transform by name (its parameter is arg)": (
        "result = d.set_index('day').resample('D')['units'].transform('to_json')"
    ),
    "groupby apply by name": "result = d.groupby('region').apply('to_json')",
    "series groupby named str": "result = d.groupby('region')['units'].agg(x='to_json')",
    "resample agg": "result = d.set_index('day').resample('D')['units'].agg('to_json')",
    "rolling agg": "result = d['units'].rolling(2).agg(['sum', 'to_json'])",
    "expanding aggregate": "result = d[['units']].expanding().aggregate({'units': 'to_json'})",
    "series apply by name": "result = d['units'].apply('to_json')",
    "a numpy function by name": "result = d['units'].agg('info')",
    "the method read from the class": "result = pd.DataFrame.agg(d, 'to_json')",
    "pivot_table method aggfunc": "result = d.pivot_table(values='units', index='region', aggfunc='to_json')",
    "crosstab aggfunc": "result = pd.crosstab(d['region'], d['units'], values=d['units'], aggfunc='to_json')",
    "an engine object": "result = d.apply(lambda r: r, engine=d)",
    "engine_kwargs": "result = d.groupby('region')['units'].agg('sum', engine_kwargs={})",
    "rolling win_type looked up in scipy": "result = d['units'].rolling(2, win_type='get_window').sum()",
}


@pytest.mark.django_db
@pytest.mark.parametrize("code", REAL_PATH_DISPATCH.values(), ids=REAL_PATH_DISPATCH.keys())
def test_string_dispatch_through_the_real_path_is_refused(approved_tool, call, code):
    approved_tool("dispatch", FRAME + code)
    result = call("dispatch")
    assert result.error is not None and "[stopped by: language]" in result.error, result.content


REAL_PATH_ORDINARY = {
    "named aggregation": (
        "result = d.groupby('region').agg(total=('units', 'sum'), n=pd.NamedAgg('units', 'count'))",
        "total",
    ),
    "a groupby's (label, function) pairs": (
        "result = d.groupby('region')['units'].agg([('top', 'max'), ('low', 'min')])",
        "top",
    ),
    "a lambda": ("result = d.groupby('region')['units'].agg(lambda s: s.max() - s.min())", "2"),
    "a dict of names": ("result = d.agg({'units': ['sum', 'mean']})", "mean"),
    "pivot_table with a column as values": ("result = d.pivot_table('units', index='region', aggfunc='sum')", "4"),
    "resample agg": ("result = d.set_index('day').resample('D')['units'].agg('sum')", "2024-01-05"),
    "rolling agg": ("result = d['units'].rolling(2).agg(['sum', 'max'])", "max"),
    "apply with args": ("result = d['units'].apply(lambda v, k: v * k, args=(10,))", "30"),
    "map with a dict": ("result = d['region'].map({'n': 'north', 's': 'south'})", "north"),
}


@pytest.mark.django_db
@pytest.mark.parametrize(("code", "expected"), REAL_PATH_ORDINARY.values(), ids=REAL_PATH_ORDINARY.keys())
def test_ordinary_dispatch_through_the_real_path_works(approved_tool, call, code, expected):
    approved_tool("ordinary", FRAME + code)
    result = call("ordinary")
    assert result.error is None, result.error
    assert expected in text(result)
