import pydantic
import pytest

from registry.contract import Ok, uniform_contract
from registry.declarations import DeclarationError, Tool
from tools.catalog import (
    TOOL_ORDER,
    all_system_tools,
    apply_feature_flags,
    assemble,
    declared_tools,
    module_declarations,
)


def handle_a(inputs, context):
    return "a"


def handle_b(inputs, context):
    return "b"


def handle_shadowed(inputs, context):
    return "the first one"


first_shadowed = handle_shadowed


def handle_shadowed(inputs, context):  # noqa: F811 - the point of the test
    return "the second one"


@uniform_contract(name="contracted_elsewhere", is_tabular=False)
def handle_contracted(inputs, context):
    return Ok(data="done")


def tool(name, handler=handle_a, **overrides):
    fields = {
        "name": name,
        "description": f"{name} does things.",
        "input_schema": {"type": "object", "properties": {}},
        "handler": handler,
        "category": "utility",
    }
    return Tool(**{**fields, **overrides})


def entry(name, **overrides):
    return {**tool(name).entry(), **overrides}


def test_the_catalog_follows_tool_order_exactly():
    assert [tool.name for tool in declared_tools()] == list(TOOL_ORDER)
    assert [entry["name"] for entry in all_system_tools()] == list(TOOL_ORDER)


def test_every_declared_handler_path_leads_back_to_its_handler():
    from registry.handlers import import_handler

    assert all(import_handler(tool.handler_path) is tool.handler for tool in declared_tools())


def test_assemble_returns_declarations_in_the_order_given():
    tools = assemble([[tool("b"), tool("a")]], ("a", "b"))
    assert [t.name for t in tools] == ["a", "b"]


def test_a_name_in_the_order_without_a_declaration_fails_naming_it():
    with pytest.raises(DeclarationError, match="'ghost' is in TOOL_ORDER but no module in TOOL_MODULES declares it"):
        assemble([[tool("a")]], ("a", "ghost"))


def test_a_declaration_missing_from_the_order_fails_naming_it():
    with pytest.raises(DeclarationError, match="'stray' is declared but missing from TOOL_ORDER"):
        assemble([[tool("a"), tool("stray")]], ("a",))


def test_a_tool_declared_twice_fails_naming_it_within_a_module_or_across_modules():
    with pytest.raises(DeclarationError, match="'a' is declared twice"):
        assemble([[tool("a")], [tool("a", handle_b)]], ("a",))
    with pytest.raises(DeclarationError, match="'a' is declared twice"):
        assemble([[tool("a"), tool("a", handle_b)]], ("a",))


def test_a_tool_listed_twice_in_the_order_fails_naming_it():
    with pytest.raises(DeclarationError, match="'a' appears twice in TOOL_ORDER"):
        assemble([[tool("a")]], ("a", "a"))


def test_a_handler_its_dotted_path_does_not_lead_to_fails_naming_the_tool():
    with pytest.raises(DeclarationError, match=r"'a': tests.test_catalog.handle_shadowed is not the handler"):
        assemble([[tool("a", first_shadowed)]], ("a",))


def test_a_module_in_the_list_without_declarations_fails_naming_it():
    with pytest.raises(DeclarationError, match="tools.datacommon is in TOOL_MODULES but has no TOOLS"):
        module_declarations(["tools.utility", "tools.datacommon"])


def test_a_module_in_the_list_that_does_not_import_fails_naming_it():
    with pytest.raises(DeclarationError, match="tools.no_such_module is in TOOL_MODULES but does not import"):
        module_declarations(["tools.no_such_module"])


def test_catalog_errors_stay_key_errors_for_the_system_check():
    assert issubclass(DeclarationError, KeyError)
    assert str(DeclarationError("tool 'a' is broken")) == "tool 'a' is broken"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"description": ""}, "'a' needs a description"),
        ({"category": ""}, "'a' needs a category"),
        ({"input_schema": {"type": "array"}}, "'a' needs an input_schema of type 'object'"),
        ({"input_schema": ["not", "a", "schema"]}, "'a' needs an input_schema of type 'object'"),
        ({"handler": lambda inputs, context: None}, "'a' needs a module-level handler function"),
        ({"handler": "tools.utility.plan"}, "'a' needs a module-level handler function"),
        ({"handler": handle_contracted}, "'a' is declared with a handler whose contract names 'contracted_elsewhere'"),
    ],
)
def test_a_broken_declaration_fails_naming_the_tool(overrides, message):
    with pytest.raises(DeclarationError, match=message):
        tool("a", **overrides)


def test_a_declaration_without_a_name_fails():
    with pytest.raises(DeclarationError, match="needs a name"):
        tool("")


def test_an_unknown_declaration_field_is_refused():
    with pytest.raises(TypeError, match="colour"):
        tool("a", colour="red")


def test_an_entry_has_the_required_keys_then_only_the_flags_that_are_set():
    plain = tool("a").entry()
    assert list(plain) == ["name", "description", "input_schema", "category", "handler_path"]
    assert plain["handler_path"] == "tests.test_catalog.handle_a"
    flagged = tool("a", status_message="Working", inline=True, timeout_seconds=30, sequential=True).entry()
    assert {k: flagged[k] for k in list(flagged)[5:]} == {
        "status_message": "Working",
        "inline": True,
        "timeout_seconds": 30,
        "sequential": True,
    }


class Greeting(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    name: str
    times: int = 1


def test_a_pydantic_model_can_declare_the_input_schema():
    schema = tool("greet", input_schema=Greeting).entry()["input_schema"]
    assert schema == Greeting.model_json_schema()
    assert (schema["type"], schema["required"], schema["additionalProperties"]) == ("object", ["name"], False)


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
        tools.catalog,
        "system_tools",
        lambda: [entry("ghost", handler_path="tools.no_such_module.ghost"), entry("now")],
    )

    assert import_system_handlers() == ["tools.no_such_module"]
    assert "tools.no_such_module failed to import" in caplog.text


@pytest.fixture
def recomposed(monkeypatch):
    """The catalog composed afresh from whatever the test changed, and afresh again after it."""
    import tools.catalog

    for cached in (tools.catalog.declared_tools, tools.catalog.all_system_tools):
        cached.cache_clear()
    yield tools.catalog
    for cached in (tools.catalog.declared_tools, tools.catalog.all_system_tools):
        cached.cache_clear()


def test_a_broken_catalog_is_reported_by_the_system_check_naming_the_tool(recomposed, monkeypatch):
    from registry.checks import check_tool_system_settings

    monkeypatch.setattr(recomposed, "TOOL_ORDER", (*TOOL_ORDER, "ghost"))

    problems = [p for p in check_tool_system_settings() if p.id == "eunice.E002"]
    assert len(problems) == 1
    assert "'ghost' is in TOOL_ORDER but no module in TOOL_MODULES declares it" in problems[0].msg


def test_a_declaration_dropped_from_its_module_is_reported_by_the_system_check(recomposed, monkeypatch):
    import tools.web
    from registry.checks import check_tool_system_settings

    monkeypatch.setattr(tools.web, "TOOLS", tools.web.TOOLS[:1])

    problems = [p for p in check_tool_system_settings() if p.id == "eunice.E002"]
    assert "'web_search' is in TOOL_ORDER but no module in TOOL_MODULES declares it" in problems[0].msg
