"""Streamable HTTP URLs are checked against SSRF before anything connects."""

import pytest

from registry.mcp.urls import UnsafeURL, check_url


@pytest.mark.parametrize(
    "url, why",
    [
        ("ftp://example.com/mcp", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http://127.0.0.1/mcp", "loopback"),
        ("http://localhost:8000/mcp", "loopback"),
        ("http://10.1.2.3/mcp", "private"),
        ("http://192.168.0.1/mcp", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://[::1]/mcp", "loopback"),
        ("http://[fd00::1]/mcp", "unique-local"),
        ("http://[fe80::1]/mcp", "link-local"),
        ("http://[::ffff:127.0.0.1]/mcp", "IPv4-mapped"),
        ("http://[64:ff9b::127.0.0.1]/mcp", "NAT64-embedded loopback"),
        ("http://[64:ff9b::a00:1]/mcp", "NAT64-embedded private"),
        ("http://[64:ff9b:1::a00:1]/mcp", "NAT64 local-use"),
        ("http://2130706433/mcp", "decimal, hex or octal"),
        ("http://0x7f000001/mcp", "decimal, hex or octal"),
        ("http://0177.0.0.1/mcp", "decimal, hex or octal"),
        ("http://127.1/mcp", "decimal, hex or octal"),
        ("http://user:pw@example.com/mcp", "credentials"),
    ],
)
def test_unsafe_urls_are_refused_saying_why(url, why):
    with pytest.raises(UnsafeURL, match=why):
        check_url(url)


def test_a_public_address_is_pinned_to_what_it_resolved_to():
    pinned = check_url("https://93.184.215.14/mcp")
    assert (pinned.host, pinned.port, pinned.address) == ("93.184.215.14", 443, "93.184.215.14")


def test_a_nat64_address_of_a_public_host_is_allowed():
    assert check_url("http://[64:ff9b::5db8:d70e]/mcp").address == "64:ff9b::5db8:d70e"


def test_private_addresses_are_allowed_only_when_asked_for():
    assert check_url("http://127.0.0.1:9/mcp", allow_private=True).address == "127.0.0.1"
