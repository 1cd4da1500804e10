import pytest

from tools.catalog import ALL_SYSTEM_TOOLS, TOOL_ORDER, apply_feature_flags, assemble


def entry(name, **overrides):
    base = {
        "name": name,
        "description": f"{name} does things.",
        "input_schema": {"type": "object", "properties": {}},
        "category": "utility",
        "handler_path": f"tools.utility.{name}",
    }
    return {**base, **overrides}


def test_the_catalog_follows_tool_order_exactly():
    assert [tool["name"] for tool in ALL_SYSTEM_TOOLS] == list(TOOL_ORDER)


def test_assemble_returns_entries_in_the_order_given():
    tools = assemble([[entry("b"), entry("a")]], ("a", "b"))
    assert [t["name"] for t in tools] == ["a", "b"]


def test_a_name_in_the_order_without_an_entry_fails_naming_it():
    with pytest.raises(KeyError, match="'ghost' is in TOOL_ORDER but no category declares it"):
        assemble([[entry("a")]], ("a", "ghost"))


def test_an_entry_missing_from_the_order_fails_naming_it():
    with pytest.raises(KeyError, match="'stray' is declared in a category but missing from TOOL_ORDER"):
        assemble([[entry("a"), entry("stray")]], ("a",))


def test_a_tool_declared_twice_fails_naming_it():
    with pytest.raises(KeyError, match="'a' is declared twice"):
        assemble([[entry("a")], [entry("a")]], ("a",))


def test_a_tool_listed_twice_in_the_order_fails_naming_it():
    with pytest.raises(KeyError, match="'a' appears twice in TOOL_ORDER"):
        assemble([[entry("a")]], ("a", "a"))


def test_an_entry_missing_a_required_key_fails_naming_tool_and_key():
    broken = entry("a")
    del broken["handler_path"]
    with pytest.raises(KeyError, match="'a' is missing the required key 'handler_path'"):
        assemble([[broken]], ("a",))


def test_an_entry_with_an_unknown_key_fails_naming_it():
    with pytest.raises(KeyError, match=r"'a' has unknown keys \['colour'\]"):
        assemble([[entry("a", colour="red")]], ("a",))


def test_feature_flags_strip_the_tools_they_gate():
    tools = [entry("a"), entry("b")]
    kept = apply_feature_flags(tools, {"b_enabled": False}, gated={"b": "b_enabled"})
    assert [t["name"] for t in kept] == ["a"]
    kept = apply_feature_flags(tools, {"b_enabled": True}, gated={"b": "b_enabled"})
    assert [t["name"] for t in kept] == ["a", "b"]


def test_a_tool_gated_by_an_undefined_flag_fails_naming_both():
    with pytest.raises(KeyError, match="'b' is gated by unknown feature flag 'nope'"):
        apply_feature_flags([entry("b")], {}, gated={"b": "nope"})


def test_importing_the_system_handlers_loads_every_enabled_tools_module():
    import sys

    from registry.handlers import import_system_handlers
    from tools.catalog import system_tools

    assert import_system_handlers() == []
    assert {e["handler_path"].rpartition(".")[0] for e in system_tools()} <= set(sys.modules)


def test_a_system_handler_module_that_fails_to_import_is_named_not_raised(monkeypatch, caplog):
    import tools.catalog
    from registry.handlers import import_system_handlers

    monkeypatch.setattr(
        tools.catalog, "system_tools",
        lambda: [entry("ghost", handler_path="tools.no_such_module.ghost"), entry("now")],
    )

    assert import_system_handlers() == ["tools.no_such_module"]
    assert "tools.no_such_module failed to import" in caplog.text
