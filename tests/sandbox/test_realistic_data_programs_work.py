"""Ordinary analysis still works under every layer: realistic programs, each an approved
custom tool called through execute_tool in a conversation whose catalog holds
``sales`` (the default dataset, so ``df``) and ``targets``.
"""

from __future__ import annotations

import inspect

import pytest

from conversations.models import Conversation
from conversations.runtime import start_run
from datacatalog.store import ConversationCatalog
from datacatalog.uploads import upload_dataset
from tests.conftest import TENANT, text

pytestmark = pytest.mark.django_db

SALES_CSV = b"""region,product,units,price,day,rep
north,apples,10,2.5,2024-01-03,Ann Lee
south,pears,4,4.0,2024-01-09,Bo Chen
north,apples,7,2.5,2024-01-20,Ann Lee
east,plums,3,10.0,2024-02-02,Cy Diaz
south,plums,8,10.0,2024-02-14,Bo Chen
north,pears,6,4.0,2024-02-21,Ann Lee
east,apples,12,2.5,2024-03-05,Cy Diaz
south,apples,5,2.5,2024-03-18,Bo Chen
north,plums,2,10.0,2024-03-30,Dee Fox
"""
TARGETS_CSV = b"region,target\nnorth,20\nsouth,15\neast,20\n"

PROGRAMS = {
    "groupby with named aggregations": (
        """
by_region = df.groupby('region').agg(orders=('units', 'size'), units=('units', 'sum'),
                                     avg_price=('price', 'mean'))
result = by_region.sort_values('units', ascending=False)
""",
        "north",
    ),
    "merge with a second dataset": (
        """
sold = df.groupby('region', as_index=False)['units'].sum()
both = sold.merge(datasets['targets'], on='region', how='left')
both['gap'] = both['target'] - both['units']
result = both[['region', 'units', 'target', 'gap']]
""",
        "gap",
    ),
    "pivot_table with margins": (
        """
result = df.pivot_table(index='region', columns='product', values='units', aggfunc='sum',
                        fill_value=0, margins=True)
""",
        "All",
    ),
    "resample by month": (
        """
d = df.assign(day=pd.to_datetime(df['day'])).set_index('day')
d['revenue'] = d['units'] * d['price']
result = d.resample('ME')['revenue'].sum().round(2)
""",
        "2024-03-31",
    ),
    "a rolling mean over weeks": (
        """
d = df.assign(day=pd.to_datetime(df['day'])).set_index('day').sort_index()
weekly = d['units'].resample('W').sum()
result = weekly.rolling(3, min_periods=1).mean().round(2).tail(4)
""",
        "2024-",
    ),
    "mixed date formats": (
        """
raw = pd.Series(['2024-01-05', '05/02/2024', 'March 3, 2024', '2024-04-01T10:30:00'])
parsed = pd.to_datetime(raw, format='mixed', dayfirst=False)
result = parsed.dt.strftime('%Y-%m-%d').tolist()
""",
        "2024-03-03",
    ),
    "least squares with np.linalg": (
        """
x = df['price'].to_numpy(dtype=float)
y = df['units'].to_numpy(dtype=float)
A = np.vstack([x, np.ones(len(x))]).T
(slope, intercept), *_ = np.linalg.lstsq(A, y, rcond=None)
result = f"units = {slope:.3f} * price + {intercept:.3f}"
""",
        "units = ",
    ),
    "string methods": (
        """
reps = df['rep'].str.split(' ', expand=True)
reps.columns = ['first', 'last']
reps['initials'] = reps['first'].str[0] + reps['last'].str[0]
reps['is_ann'] = df['rep'].str.contains('ann', case=False)
result = reps.drop_duplicates().sort_values('last')
""",
        "AL",
    ),
    "describe": ("result = df[['units', 'price']].describe().round(2)", "mean"),
    "melt and crosstab": (
        """
long = df.melt(id_vars=['region', 'product'], value_vars=['units', 'price'], var_name='measure')
counts = pd.crosstab(df['region'], df['product'], margins=True)
result = {'message': f"{len(long)} long rows", 'crosstab': counts.to_dict()}
""",
        "18 long rows",
    ),
    "cumsum and rank": (
        """
d = df.sort_values('day').copy()
d['running'] = d.groupby('region')['units'].cumsum()
d['rank'] = d['units'].rank(ascending=False, method='min').astype(int)
result = d[['day', 'region', 'units', 'running', 'rank']]
""",
        "running",
    ),
    "apply and map with lambdas": (
        """
d = df.copy()
d['size'] = d['units'].apply(lambda n: 'big' if n >= 7 else 'small')
d['zone'] = d['region'].map({'north': 'N', 'south': 'S', 'east': 'E'})
d['label'] = d.apply(lambda row: f"{row['zone']}-{row['product'][:2]}", axis=1)
result = d[['label', 'size']].value_counts().sort_index()
""",
        "N-ap",
    ),
    "a DataFrame of the top rows": (
        """
d = df.assign(revenue=df['units'] * df['price'])
result = d.nlargest(3, 'revenue')[['region', 'product', 'revenue']]
""",
        "plums",
    ),
    "a full response dict": (
        """
revenue = float((df['units'] * df['price']).sum())
best = df.groupby('product')['units'].sum().idxmax()
result = {'message': f"Revenue {revenue:.2f}; best seller {best}", 'revenue': revenue}
""",
        "Revenue 255.00; best seller apples",
    ),
    "query and eval": (
        """
d = df.eval('revenue = units * price')
result = d.query('revenue > 20 and region != "east"')[['region', 'revenue']]
""",
        "north",
    ),
    "binning with cut and qcut": (
        """
d = df.copy()
d['band'] = pd.cut(d['price'], bins=[0, 3, 5, 20], labels=['low', 'mid', 'high'])
d['quartile'] = pd.qcut(d['units'], 2, labels=['lower', 'upper'])
result = d.groupby(['band', 'quartile'], observed=True)['units'].sum()
""",
        "high",
    ),
    "a correlation matrix": (
        """
m = np.corrcoef(df['units'].to_numpy(float), df['price'].to_numpy(float))
result = pd.DataFrame(m, index=['units', 'price'], columns=['units', 'price']).round(3)
""",
        "1.0",
    ),
    "month over month growth": (
        """
d = df.assign(month=pd.to_datetime(df['day']).dt.to_period('M').astype(str))
monthly = d.groupby('month')['units'].sum()
result = (monthly.pct_change() * 100).round(1).fillna(0)
""",
        "2024-02",
    ),
}


@pytest.fixture(autouse=True)
def files_dir(settings, tmp_path):
    settings.EUNICE_FILES_DIR = tmp_path / "files"


@pytest.fixture
def conversation(django_user_model):
    owner = django_user_model.objects.create_user("analyst", password="pw")
    conversation = Conversation.objects.create(id="conv-sales", tenant_id=TENANT, user=owner)
    books = ConversationCatalog(TENANT, conversation.id)
    upload_dataset(books, "targets.csv", TARGETS_CSV)
    upload_dataset(books, "sales.csv", SALES_CSV)  # the newest: df
    return conversation


@pytest.mark.parametrize(("code", "expected"), PROGRAMS.values(), ids=PROGRAMS.keys())
def test_a_realistic_program_runs_in_a_conversation(approved_tool, registry, conversation, code, expected):
    approved_tool("analysis", code.strip())
    result = _in_conversation(registry, conversation, "analysis")
    assert result.error is None, result.error
    assert expected in text(result), text(result)


CHART = """
answer = call_tool('create_chart', {'dataset': 'sales', 'x': 'region', 'y': 'units',
                                    'aggregate': 'sum', 'title': 'Units by region'})
result = {'message': answer}
"""


@pytest.mark.django_db(transaction=True)  # create_chart runs on a worker thread: its own connection
def test_a_program_draws_a_chart_through_call_tool(approved_tool, registry, conversation):
    # Where custom tools declare the tools they call (the host layer's dependencies),
    # this one declares create_chart; before that the keyword does not exist.
    declared = (
        {"dependencies": ["create_chart"]} if "dependencies" in inspect.signature(approved_tool).parameters else {}
    )
    approved_tool("chart_units", CHART.strip(), **declared)
    result = _in_conversation(registry, conversation, "chart_units")
    assert result.error is None, result.error
    assert "error" not in text(result) and "chart" in text(result).lower(), text(result)


def _in_conversation(registry, conversation, name: str):
    runtime = start_run(conversation, user=conversation.user, turn=1)
    return registry.execute_tool(name, {}, runtime.tool_context("toolu_1", name, None))


def test_there_are_at_least_fifteen_programs():
    assert len(PROGRAMS) + 1 >= 15
