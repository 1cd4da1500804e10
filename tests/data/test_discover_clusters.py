"""discover_clusters: groups of similar rows (by numbers or by meaning) and of documents.

Customers of a shop fall into three kinds by spend and visits; product reviews talk
about three things; a corpus holds contracts and recipes. The clusters must be
those groups, whatever numbers k-means gives them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from datacatalog.store import ConversationCatalog
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)

REVIEWS = {
    "battery": [
        "The battery lasts barely half a day before it needs charging.",
        "Battery life is poor, the phone dies by lunchtime.",
        "Charging takes hours and the battery drains overnight.",
        "After a month the battery holds much less charge.",
    ],
    "shipping": [
        "The parcel arrived two weeks late and the box was crushed.",
        "Delivery took forever, the courier lost my package twice.",
        "Shipping was slow and tracking never updated.",
        "My order was delivered to the wrong address by the courier.",
    ],
    "screen": [
        "The display is bright and colours look vivid.",
        "Screen resolution is sharp, text is crisp and easy to read.",
        "The touchscreen scratched within a week.",
        "Gorgeous screen, deep blacks and great viewing angles.",
    ],
}


@pytest.fixture
def customers(conversation):
    rng = np.random.default_rng(7)
    groups = {"bargain": (200, 1), "regular": (1500, 4), "premium": (9000, 2)}
    rows = [
        {
            "customer": f"{kind}-{n}",
            "annual_spend": spend * rng.uniform(0.9, 1.1),
            "visits_per_month": visits + rng.uniform(-0.3, 0.3),
        }
        for kind, (spend, visits) in groups.items()
        for n in range(10)
    ]
    books = ConversationCatalog(TENANT, conversation.id)
    books.save("customers", pd.DataFrame(rows), source="upload")
    return books


@pytest.fixture
def reviews(conversation):
    rows = [{"topic": topic, "review": text} for topic, texts in REVIEWS.items() for text in texts]
    books = ConversationCatalog(TENANT, conversation.id)
    books.save("reviews", pd.DataFrame(rows), source="upload")
    return books


def groups_of(frame: pd.DataFrame, truth: str) -> set[frozenset]:
    """The true groups, as sets of clusters: one cluster per true group means a perfect split."""
    return {frozenset(part.cluster) for _, part in frame.groupby(truth)}


def test_rows_fall_into_as_many_clusters_as_the_data_has(customers, in_conversation):
    result = in_conversation("discover_clusters", dataset="customers", label_column="customer")
    assert result.ok, result.content
    members = customers.load("clusters")
    members["kind"] = members.customer.str.split("-").str[0]
    found = groups_of(members, "kind")
    assert len(found) == 3 and all(len(clusters) == 1 for clusters in found)
    assert "3 clusters" in result.content and "high annual_spend" in result.content


def test_each_cluster_is_told_by_size_and_typical_members(customers, in_conversation):
    result = in_conversation("discover_clusters", dataset="customers", label_column="customer", k=3)
    assert "schema: cluster:str, size:int64, representatives:str, distinguished_by:str" in result.content
    premium = next(line for line in result.content.splitlines() if "premium-" in line)
    assert "(10 members): high annual_spend" in premium and premium.count("premium-") == 3


def test_the_members_are_drawn_as_a_scatter_chart(customers, in_conversation):
    result = in_conversation("discover_clusters", dataset="customers", k=3, save_as="segments")
    chart, image = result.cards
    assert chart["type"] == "chart" and chart["dataset"] == "segments" and chart["spec"]["mark"]["type"] == "point"
    assert chart["spec"]["encoding"]["color"]["field"] == "cluster"
    assert len(chart["spec"]["data"]["values"]) == 30 and image["type"] == "file_download"
    assert {"cluster", "map_x", "map_y"} <= set(customers.load("segments").columns)


def test_text_rows_are_grouped_by_meaning(reviews, in_conversation):
    result = in_conversation("discover_clusters", dataset="reviews", columns=["review"], k=3)
    assert result.ok, result.content
    found = groups_of(reviews.load("clusters"), "topic")
    assert all(len(clusters) == 1 for clusters in found) and len(set().union(*found)) == 3
    battery = next(line for line in result.content.splitlines() if "battery" in line.split("typical:")[0])
    assert "(4 members)" in battery and "typical: " in battery and "row " not in battery


def test_documents_of_a_corpus_are_grouped_by_meaning(in_conversation, conversation):
    assert in_conversation("create_corpus", name="mixed").ok
    items = [
        {"title": "Steel supply agreement", "text": "The supplier delivers steel beams; payment is due in 30 days."},
        {"title": "Cleaning contract", "text": "The contractor cleans the offices weekly; the contract renews yearly."},
        {"title": "Lease of the warehouse", "text": "The tenant pays rent monthly; the lease ends after five years."},
        {"title": "Pancakes", "text": "Whisk flour, eggs and milk; fry thin pancakes in butter and serve with jam."},
        {"title": "Tomato soup", "text": "Simmer tomatoes, onion and garlic; blend and season with basil."},
        {"title": "Apple pie", "text": "Bake sliced apples with cinnamon and sugar in a buttery crust."},
    ]
    assert in_conversation("index_content", corpus="mixed", items=items).ok
    result = in_conversation("discover_clusters", corpus="mixed", k=2)
    assert result.ok, result.content
    members = ConversationCatalog(TENANT, conversation.id).load("clusters")
    members["recipe"] = members.title.isin(["Pancakes", "Tomato soup", "Apple pie"])
    assert all(len(clusters) == 1 for clusters in groups_of(members, "recipe"))


def test_another_tenants_corpus_is_not_clustered(in_conversation):
    assert in_conversation("create_corpus", tenant="globex", name="secret").ok
    assert in_conversation("discover_clusters", corpus="secret").content.startswith(
        "⚠ schema hint: corpus 'secret' does not exist"
    )


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"columns": ["annual_spend", "customer"]}, "⚠ schema hint: columns: numbers (annual_spend) and text"),
        ({"columns": ["spend"]}, "⚠ schema hint: columns: no column 'spend'"),
        ({"label_column": "name"}, "⚠ schema hint: label_column: no column 'name'"),
        ({"k": 30}, "⚠ schema hint: k: 30 clusters of 30 members"),
    ],
)
def test_bad_input_is_a_hint_naming_the_field(customers, in_conversation, inputs, expected):
    result = in_conversation("discover_clusters", dataset="customers", **inputs)
    assert result.content.startswith(expected), result.content
