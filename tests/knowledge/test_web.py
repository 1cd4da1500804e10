"""fetch_url under the SSRF rules (local servers on 127.0.0.1 via the private-URL override) and web_search."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.knowledge.documents_fixtures import HTML, pdf_bytes

pytestmark = pytest.mark.django_db(transaction=True)

# Each is refused: loopback, private, link-local, unique-local, mapped, reserved,
# decimal/hex/octal encodings, credentials and other schemes.
REFUSED = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://0/",
    "http://0.0.0.0/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.0.0.1/",
    "http://0177.0.0.1/",
    "http://017700000001/",
    "http://127.000.000.001/",
    "http://[::1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[0:0:0:0:0:ffff:127.0.0.1]/",
    "http://[2002:7f00:1::]/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://192.0.2.1/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://user:pw@example.com/",
    "ftp://example.com/file",
    "file:///etc/passwd",
    "gopher://127.0.0.1:70/",
    "http://[::ffff:169.254.169.254]/",
]

release = threading.Event()


class Site(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server API
        Site.hits.append(self.path)
        port = self.server.server_address[1]
        routes = {
            "/page": (200, "text/html; charset=utf-8", HTML.encode()),
            "/doc.pdf": (200, "application/pdf", pdf_bytes("Turbine count: 14.")),
            "/big": (200, "text/plain", b"x" * 5000),
        }
        if self.path in routes:
            status, kind, body = routes[self.path]
            self._send(status, {"Content-Type": kind}, body)
        elif self.path == "/hop":
            self._send(302, {"Location": "/page"}, b"")
        elif self.path == "/to-encoded":
            self._send(302, {"Location": f"http://0x7f000001:{port}/page"}, b"")
        elif self.path == "/loop":
            self._send(302, {"Location": "/loop"}, b"")
        elif self.path == "/slow":
            release.wait(10)  # bounded: the test releases it as soon as the tool gave up
            self._send(200, {"Content-Type": "text/plain"}, b"late")
        elif self.path.startswith("/search"):
            body = json.dumps(
                {"results": [{"title": "Helios SA", "url": "https://helios.example/", "content": "Solar farms."}]}
            )
            self._send(200, {"Content-Type": "application/json"}, body.encode())
        else:
            self._send(404, {"Content-Type": "text/plain"}, b"no")

    def _send(self, status, headers, body):
        self.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Site.hits.clear()
    release.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def private_allowed(settings):
    settings.MCP_ALLOW_PRIVATE_URLS = True


@pytest.mark.parametrize("url", REFUSED)
def test_an_internal_or_encoded_address_is_refused(call, url):
    result = call("fetch_url", url=url)
    assert result.content.startswith(("✗ error (FetchRefused): refused", "⚠ schema hint: url: only http and https")), (
        result.content
    )


def test_the_list_covers_at_least_25_address_forms():
    assert len(set(REFUSED)) >= 25


def test_a_page_is_fetched_as_readable_text(call, site, private_allowed):
    result = call("fetch_url", url=f"{site}/page")
    assert result.error is None
    assert "Solar farm report" in result.content and "4.2 GWh" in result.content
    assert "var x" not in result.content and "<p>" not in result.content


def test_a_loopback_server_is_refused_without_the_override(call, site):
    assert "loopback" in call("fetch_url", url=f"{site}/page").content
    assert Site.hits == []


def test_a_redirect_is_followed_and_each_hop_checked(call, site, private_allowed):
    assert "after 1 redirect" in call("fetch_url", url=f"{site}/hop").content
    refused = call("fetch_url", url=f"{site}/to-encoded")
    assert refused.content.startswith("✗ error (FetchRefused): refused http://0x7f000001")
    assert Site.hits == ["/hop", "/page", "/to-encoded"]


def test_a_redirect_loop_ends_with_an_error(call, site, private_allowed):
    assert "more than 5 redirects" in call("fetch_url", url=f"{site}/loop").content


def test_a_body_over_the_size_cap_is_refused(call, site, private_allowed, settings):
    settings.WEB_FETCH_MAX_BYTES = 1024
    assert call("fetch_url", url=f"{site}/big").content.startswith("✗ error (TooLarge)")


def test_a_slow_server_hits_the_time_cap(call, site, private_allowed, settings):
    settings.WEB_FETCH_TIMEOUT_SECONDS = 0.3
    assert call("fetch_url", url=f"{site}/slow").content.startswith("✗ error (TimeoutError)")


def test_a_pdf_at_a_url_is_read_as_text(call, site, private_allowed):
    assert "Turbine count: 14." in call("fetch_url", url=f"{site}/doc.pdf").content


def test_an_http_error_is_reported_without_internals(call, site, private_allowed):
    result = call("fetch_url", url=f"{site}/missing?token=secret")
    assert result.content == f"✗ error (FetchFailed): {site}/missing answered HTTP 404 Not Found"


def test_web_search_without_a_backend_is_disabled_with_a_clear_message(call, settings):
    settings.WEB_SEARCH_BACKEND = ""
    result = call("web_search", query="solar")
    assert result.content.startswith(
        "⚠ schema hint: web_search is unavailable here: no web search backend is configured (EUNICE_WEB_SEARCH_BACKEND)"
    )


@pytest.fixture
def search_backend(registry, settings, monkeypatch):
    """Configure web_search's backend as a deployment does: in the environment. The tool is
    killable, so its handler runs in a child process (registry.killable), which reads its
    configuration from the environment it starts with, as the server did; the registry gets
    children started after the change."""
    from registry.killable import KillableProcesses

    pools = []

    def configure(backend: str, url: str = "") -> None:
        monkeypatch.setenv("EUNICE_WEB_SEARCH_BACKEND", backend)
        monkeypatch.setenv("EUNICE_WEB_SEARCH_URL", url)
        settings.WEB_SEARCH_BACKEND, settings.WEB_SEARCH_URL = backend, url  # what this process checks
        pool = KillableProcesses(idle=1)
        pools.append(pool)
        registry._killable = pool

    yield configure
    for pool in pools:
        pool.close()


def test_web_search_uses_a_searxng_backend(call, site, search_backend):
    search_backend("searxng", site)
    result = call("web_search", query="solar")
    assert "Helios SA\n   https://helios.example/\n   Solar farms." in result.content


def fake_backend(query, limit):
    return (
        []
        if query == "nothing"
        else [{"title": f"About {query}", "url": "https://example.com/", "snippet": "…"}][:limit]
    )


def test_web_search_takes_any_backend_by_dotted_path(call, search_backend):
    search_backend("tests.knowledge.test_web.fake_backend")
    assert "About wind" in call("web_search", query="wind").content
    assert call("web_search", query="nothing").content.startswith("⚠ fetch hint")


def test_web_search_can_be_replaced_by_a_model_capability():
    from registry.models import ToolDefinition

    assert ToolDefinition.objects.get(name="web_search").replaced_by_model_capability == "web_search"
