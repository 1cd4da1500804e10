"""The OpenAPI schema describes every REST endpoint, without a warning or an error."""

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command


def test_the_schema_generates_cleanly_and_describes_what_each_endpoint_answers(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--file", str(target))  # raises on any warning or error
    paths = yaml.safe_load(target.read_text())["paths"]

    def answers(path, method, status="200"):
        return sorted(paths[path][method]["responses"][status].get("content", {}))

    assert answers("/api/conversations/{id}/messages/", "get") == ["application/json"]
    assert answers("/api/conversations/{conversation_id}/datasets/", "get") == ["application/json"]
    assert answers("/api/documents/", "post", "201") == ["application/json"]
    assert answers("/files/{file_id}/", "get") == ["application/octet-stream"]


SCHEMA_URLS = ["/api/schema/", "/api/schema/ui/"]


@pytest.mark.django_db
@pytest.mark.parametrize("url", SCHEMA_URLS)
def test_the_schema_and_its_ui_are_refused_to_anonymous_users_by_default(client, url):
    response = client.get(url)
    assert response.status_code in (401, 403)
    assert b"/api/conversations/" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("url", SCHEMA_URLS)
@pytest.mark.parametrize("who", ["staff", "member", "other_tenant_member"])
def test_every_signed_in_user_gets_the_schema_and_its_ui(client, url, who):
    client.force_login(get_user_model().objects.create_user(who, is_staff=who == "staff"))
    assert client.get(url).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("url", SCHEMA_URLS)
def test_a_deployment_may_publish_the_schema_to_anonymous_users(client, settings, url):
    settings.EUNICE_OPENAPI_PUBLIC = True
    assert client.get(url).status_code == 200
