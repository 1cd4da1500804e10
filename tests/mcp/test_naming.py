"""Registered names are provider-safe, deterministic, and never silently merged."""

import pytest

from registry.mcp.naming import NameCollision, description_flags, names_for, tenant_tag, tool_name


def test_a_tool_is_registered_as_mcp_tenant_conn_tool():
    assert tool_name("acme", "my_server", "search") == f"mcp_{tenant_tag('acme')}_my_server_search"


def test_two_tenants_servers_of_one_name_register_different_names():
    assert tool_name("acme", "github", "search") != tool_name("globex", "github", "search")
    assert len(tenant_tag("acme")) == 8 and tenant_tag("acme") == tenant_tag("acme")


def test_characters_a_provider_rejects_become_underscores():
    assert tool_name("acme", "srv", "files.read/v2").endswith("_srv_files_read_v2")


def test_a_long_name_is_cut_to_64_with_a_stable_hash_suffix():
    name = tool_name("acme", "srv", "x" * 100)
    assert len(name) == 64 and name == tool_name("acme", "srv", "x" * 100)
    assert name != tool_name("acme", "srv", "x" * 99)


def test_two_tools_mapping_to_one_name_raise_naming_both():
    with pytest.raises(NameCollision, match="'a.b' and 'a_b'"):
        names_for("acme", "srv", ["a.b", "a_b"])


def test_hidden_characters_and_overlong_descriptions_are_flagged():
    assert description_flags("Reads a file.") == []
    assert "zero-width" in description_flags("Reads\u200b a file.")[0]
    assert "bidirectional" in description_flags("Reads \u202ea file.")[0]
    assert "longer than" in description_flags("x" * 5000)[0]
