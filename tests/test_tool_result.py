from registry.result import ToolResult, succeeded


def test_a_tool_result_passes_through_unchanged():
    result = ToolResult(content="hi", cost=0.5)
    assert ToolResult.from_any(result) is result


def test_the_legacy_message_dict_becomes_content_and_cards():
    result = ToolResult.from_any({"message": "3 rows", "cards": [{"type": "chart"}], "metadata": {"rows": 3}})
    assert result.content == "3 rows"
    assert result.cards == [{"type": "chart"}]
    assert result.error is None


def test_a_legacy_dict_with_an_error_is_a_failure():
    result = ToolResult.from_any({"error": "table missing"})
    assert result.error == "table missing"
    assert "table missing" in result.content


def test_a_single_legacy_card_dict_is_wrapped_in_a_list():
    assert ToolResult.from_any({"message": "m", "cards": {"type": "chart"}}).cards == [{"type": "chart"}]


def test_plain_strings_and_none_are_content():
    assert ToolResult.from_any("done").content == "done"
    assert ToolResult.from_any(None).content == ""


def test_other_dicts_are_rendered_as_json_for_the_model():
    assert ToolResult.from_any({"temperature": 21}).content == '{"temperature": 21}'


def test_a_succeeded_result_is_the_one_its_class_makes_of_the_same_fields():
    cards, datasets, exports = [{"type": "chart"}], {"t": 1}, {"f": {"path": "x"}}
    made = succeeded("✓ ok. 1 row.\n5", cards, 0.25, datasets, exports)
    assert type(made) is ToolResult
    assert made == ToolResult("✓ ok. 1 row.\n5", cards, 0.25, datasets, exports)
    assert made.cards is cards and made.datasets is datasets and made.exports is exports
    assert made.error is None and made.ok
