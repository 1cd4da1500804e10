"""The OpenAPI schema describes every REST endpoint, without a warning or an error."""

import yaml
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
