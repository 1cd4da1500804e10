"""create_chart, display_map, export, export_excel, manipulate_excel, query_telemetry."""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import load_workbook

from conversations.side_effects import merge_cards
from datacatalog.models import GeneratedFile
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_chart_is_a_vega_lite_card_with_an_svg_file(sales, in_conversation):
    result = in_conversation("create_chart", dataset="sales", x="region", y="units", aggregate="sum")
    assert result.error is None, result.content
    chart, download = result.cards
    assert chart["type"] == "chart" and chart["spec"]["encoding"]["y"]["aggregate"] == "sum"
    assert len(chart["spec"]["data"]["values"]) == 5 and "url" not in chart["spec"]["data"]
    assert download["type"] == "file_download"
    generated = GeneratedFile.objects.get(pk=download["file_id"])
    assert generated.tenant_id == TENANT and Path(generated.path).read_text().startswith("<svg")


def test_a_chart_can_be_a_png(sales, in_conversation):
    result = in_conversation("create_chart", dataset="sales", x="day", y="units", mark="line", format="png")
    file_id = result.cards[1]["file_id"]
    assert Path(GeneratedFile.objects.get(pk=file_id).path).read_bytes()[:4] == b"\x89PNG"


def test_a_chart_of_an_unknown_column_names_the_field(sales, in_conversation):
    result = in_conversation("create_chart", dataset="sales", x="regions", y="units")
    assert result.content.startswith("⚠ schema hint: x: no column 'regions'") and "region" in result.content


def test_a_map_takes_points_from_lat_lon_columns(sales, in_conversation):
    result = in_conversation("display_map", dataset="sales", display_id="norway")
    (card,) = result.cards
    assert card["type"] == "map_display" and card["display_id"] == "norway"
    assert len(card["sources"][0]["data"]["features"]) == 5
    assert card["bounds"] == [[58.15, 5.73], [63.43, 11.38]]


def test_two_maps_with_the_same_display_id_merge_into_one(sales, in_conversation):
    first = in_conversation("display_map", dataset="sales", display_id="m", layer="shops")
    geojson = {"type": "Feature", "geometry": {"type": "Point", "coordinates": [18.95, 69.65]}, "properties": {}}
    second = in_conversation("display_map", geojson=geojson, display_id="m", layer="tromso")
    (merged,) = merge_cards(first.cards + second.cards)
    assert [layer["id"] for layer in merged["layers"]] == ["shops", "tromso"]
    assert merged["bounds"][1][0] == 69.65


def test_a_map_without_coordinates_is_a_schema_hint(conversation, in_conversation):
    import pandas as pd

    from datacatalog.store import ConversationCatalog

    ConversationCatalog(TENANT, conversation.id).save("cities", pd.DataFrame({"city": ["Oslo"]}), source="upload")
    assert in_conversation("display_map", dataset="cities").content.startswith("⚠ schema hint:")


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_export_writes_a_downloadable_file(sales, in_conversation, fmt):
    result = in_conversation("export", dataset="sales", format=fmt)
    (card,) = result.cards
    generated = GeneratedFile.objects.get(pk=card["file_id"])
    assert generated.filename == f"sales.{fmt}" and generated.size_bytes > 0
    assert card["url"] == f"/files/{generated.pk}/"
    assert list(result.exports) == [f"sales.{fmt}"]


def test_export_excel_writes_formats_and_formulas(sales, in_conversation):
    result = in_conversation(
        "export_excel",
        sheets=[
            {
                "dataset": "sales",
                "name": "Sales",
                "number_formats": {"price": "#,##0.00"},
                "formulas": {"Total units": "=SUM(C2:C6)"},
            }
        ],
    )
    assert result.error is None, result.content
    workbook = load_workbook(GeneratedFile.objects.get(pk=result.cards[0]["file_id"]).path)
    sheet = workbook["Sales"]
    assert sheet["A1"].font.bold and sheet.freeze_panes == "A2"
    assert sheet["D2"].number_format == "#,##0.00" and sheet["B7"].value == "=SUM(C2:C6)"


def test_manipulate_excel_reads_and_edits_into_a_new_file(sales, in_conversation):
    exported = in_conversation("export_excel", sheets=[{"dataset": "sales"}], filename="book")
    file_id = exported.cards[0]["file_id"]
    read = in_conversation("manipulate_excel", file_id=file_id, range="A1:C2")
    assert "A2='north'" in read.content
    edited = in_conversation(
        "manipulate_excel",
        file_id=file_id,
        operations=[
            {"op": "set_cells", "cells": {"H1": "note", "H2": "=C2*2"}},
            {"op": "add_sheet", "name": "copy", "dataset": "sales"},
            {"op": "rename_sheet", "sheet": "sales", "name": "orig"},
        ],
    )
    workbook = load_workbook(GeneratedFile.objects.get(pk=edited.cards[0]["file_id"]).path)
    assert workbook.sheetnames == ["orig", "copy"] and workbook["orig"]["H2"].value == "=C2*2"
    assert workbook["copy"].max_row == 6


def test_manipulate_excel_cannot_open_another_tenants_workbook(sales, in_conversation, other_conversation):
    exported = in_conversation("export_excel", sheets=[{"dataset": "sales"}])
    file_id = exported.cards[0]["file_id"]
    result = in_conversation(
        "manipulate_excel", tenant=OTHER_TENANT, context={"conversation_id": other_conversation.id}, file_id=file_id
    )
    assert result.content.startswith("⚠ schema hint: file_id:") and "north" not in result.content


@pytest.mark.parametrize(
    "cell_range, expected",
    [
        (None, "A2='north'"),  # the whole sheet
        ("A2", "A2='north'"),  # one cell
        ("A2:B3", "B3="),  # a rectangle
    ],
)
def test_manipulate_excel_reads_a_sheet_a_cell_or_a_range(sales, in_conversation, cell_range, expected):
    file_id = in_conversation("export_excel", sheets=[{"dataset": "sales"}], filename="book").cards[0]["file_id"]
    inputs = {"file_id": file_id, **({"range": cell_range} if cell_range else {})}
    read = in_conversation("manipulate_excel", **inputs)
    assert read.error is None and expected in read.content


def test_manipulate_excel_with_an_unknown_sheet_lists_the_real_ones(sales, in_conversation):
    file_id = in_conversation("export_excel", sheets=[{"dataset": "sales"}]).cards[0]["file_id"]
    result = in_conversation("manipulate_excel", file_id=file_id, sheet="Sheet9")
    assert result.content.startswith("⚠ schema hint: sheet:") and "sales" in result.content


def test_query_telemetry_shows_this_tenants_calls_only(sales, in_conversation, other_conversation):
    in_conversation("preview_data", dataset="sales")
    in_conversation("preview_data", tenant=OTHER_TENANT, context={"conversation_id": other_conversation.id})
    mine = in_conversation("query_telemetry", tool="preview_data")
    assert "preview_data" in text(mine) and OTHER_TENANT not in text(mine)
    refused = in_conversation("query_telemetry", all_tenants=True)
    assert refused.error and "superusers only" in refused.content


def test_query_telemetry_will_not_read_a_colleagues_conversation(sales, in_conversation, django_user_model):
    from conversations.models import Conversation

    ann = django_user_model.objects.create_user("ann")
    colleague = Conversation.objects.create(
        id="conv-bob", tenant_id=TENANT, user=django_user_model.objects.create_user("bob")
    )
    mine = Conversation.objects.create(id="conv-ann", tenant_id=TENANT, user=ann)
    as_ann = {"user_id": str(ann.pk)}

    for what in ("events", "tool_calls"):
        refused = in_conversation("query_telemetry", context=as_ann, what=what, conversation_id=colleague.id)
        assert refused.content.startswith("⚠ schema hint: conversation_id: no conversation 'conv-bob' of yours")
    assert in_conversation("query_telemetry", context=as_ann, what="events", conversation_id=mine.id).error is None
    staff = {"user_id": str(django_user_model.objects.create_user("ops", is_staff=True).pk)}
    assert in_conversation("query_telemetry", context=staff, what="events", conversation_id=colleague.id).error is None


def test_a_colleagues_files_cannot_be_read_or_copied_by_id(sales, in_conversation, django_user_model):
    from conversations.models import Conversation

    bob = django_user_model.objects.create_user("bob")
    ann = django_user_model.objects.create_user("ann")
    Conversation.objects.create(id="conv-bob", tenant_id=TENANT, user=bob)
    Conversation.objects.create(id="conv-ann", tenant_id=TENANT, user=ann)
    as_bob = {"user_id": str(bob.pk), "conversation_id": "conv-bob"}
    as_ann = {"user_id": str(ann.pk), "conversation_id": "conv-ann"}
    bobs = in_conversation("export_excel", sheets=[{"dataset": "sales"}], filename="bob").cards[0]
    GeneratedFile.objects.filter(pk=bobs["file_id"]).update(conversation_id="conv-bob")  # made in bob's

    read = in_conversation("manipulate_excel", context=as_ann, file_id=bobs["file_id"])
    assert in_conversation("create_corpus", context=as_ann, name="c").error is None
    indexed = in_conversation("index_content", context=as_ann, corpus="c", items=[{"file_id": bobs["file_id"]}])

    assert read.content.startswith(f"⚠ schema hint: file_id: no workbook {bobs['file_id']} of yours")
    assert "bob.xlsx" not in read.content  # the hint lists only ann's own workbooks
    assert indexed.content.startswith(f"⚠ schema hint: file_id {bobs['file_id']} is not one of your files")
    assert in_conversation("manipulate_excel", context=as_bob, file_id=bobs["file_id"]).error is None


def test_a_superuser_may_read_every_tenants_calls(sales, in_conversation, other_conversation, django_user_model):
    root = django_user_model.objects.create_user("ops", is_staff=True, is_superuser=True)
    in_conversation("preview_data", tenant=OTHER_TENANT, context={"conversation_id": other_conversation.id})
    result = in_conversation("query_telemetry", context={"user_id": str(root.pk)}, all_tenants=True)
    assert OTHER_TENANT in text(result)


def test_a_scatter_plot_spans_its_data_not_zero():
    import pandas as pd

    from tools.charts import vega_lite

    frame = pd.DataFrame({"year": [2001, 2010], "rain": [800.5, 950.0], "city": ["a", "b"]})
    spec = vega_lite(frame, {"x": "year", "y": "rain", "mark": "point"})
    assert spec["encoding"]["x"]["scale"] == {"zero": False} and spec["encoding"]["y"]["scale"] == {"zero": False}
    assert "scale" not in vega_lite(frame, {"x": "city", "y": "rain", "mark": "bar"})["encoding"]["y"]
