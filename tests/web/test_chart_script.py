"""The chat page's chart library is built from vl-convert's bundle, once, and served with
a year's caching under a URL naming its versions (eunice/chart_script.py)."""

import gzip

import pytest
import vl_convert

from eunice import chart_script

pytestmark = pytest.mark.django_db


def test_the_script_is_current_vega_served_for_a_year_and_gzipped_when_asked(client):
    url = chart_script.url()
    assert f"vega-{vl_convert.get_vega_version()}" in url

    plain = client.get(url)
    packed = client.get(url, headers={"Accept-Encoding": "gzip, br"})

    assert plain.status_code == 200 and plain["Content-Type"].startswith("text/javascript")
    assert plain["Cache-Control"] == "public, max-age=31536000, immutable"
    assert packed["Content-Encoding"] == "gzip" and gzip.decompress(packed.content) == plain.content
    assert len(packed.content) < len(plain.content) / 2


def test_its_names_stay_inside_it_but_the_three_libraries(client):
    """The bundle's top-level names (one is `L`) overwrote Leaflet's on the page."""
    body = client.get(chart_script.url()).content.decode()
    assert body.startswith("(function () {\n") and body.rstrip().endswith("})();")
    assert "window.vegaEmbed=" in body and "window.vega=" in body


def test_a_page_drawn_before_an_upgrade_is_sent_to_the_current_script(client):
    response = client.get("/assets/charts-vega-5.21.0-lite-4.17-embed-6.20.0.js")
    assert response.status_code == 302 and response["Location"] == chart_script.url()


def test_the_chat_page_loads_it_and_allows_no_eval(client, django_user_model):
    from conversations.models import Conversation
    from registry.models import TenantMembership
    from tests.conftest import TENANT

    user = django_user_model.objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user)
    client.force_login(user)
    page = client.get(f"/c/{conversation.pk}/")
    assert f'<script src="{chart_script.url()}"></script>' in page.content.decode()
    assert "'unsafe-eval'" not in page["Content-Security-Policy"]


def test_the_servers_preload_builds_it_so_no_chart_page_waits_for_the_build(settings, tmp_path):
    from eunice import preload

    settings.VAR_DIR = tmp_path  # a fresh install: no script built yet
    chart_script.script.cache_clear()
    try:
        preload._chart_script()  # as the server runs it (eunice.preload.STEPS)

        built = tmp_path / "assets" / f"charts-{chart_script.version_tag()}.js"
        assert built.is_file() and built.read_bytes().startswith(b"(function () {\n")
        assert chart_script.script.cache_info().currsize == 1  # and held, gzipped, for the first page
        assert preload._chart_script in preload.STEPS
    finally:
        chart_script.script.cache_clear()
