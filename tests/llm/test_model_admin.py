"""The model configuration's admin: where each price comes from, and "Test this model"."""

import json

import pytest

from llm.models import ModelConfig

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/llm/modelconfig/"


def test_an_unpriced_model_is_flagged_and_a_known_one_shows_its_catalog_price(admin_client):
    ModelConfig.objects.create(role="chat", provider="openai", model="my-finetune", base_url="http://127.0.0.1:1/v1")
    ModelConfig.objects.create(role="builder", provider="anthropic", model="claude-sonnet-4-5")
    page = admin_client.get(CHANGELIST).content.decode()
    assert "⚠ unknown: set its prices" in page
    assert "$3 / $15 (catalog)" in page


def test_the_list_says_what_each_role_serves_and_the_form_names_the_roles(admin_client):
    ModelConfig.objects.create(role="delegate", provider="anthropic", model="claude-haiku-4-5")
    assert "tasks the agent delegates" in admin_client.get(CHANGELIST).content.decode()
    assert "delegate: tasks the agent delegates" in admin_client.get(CHANGELIST + "add/").content.decode()


def test_testing_a_model_reports_its_answer_and_cost(admin_client, scripted_chat):
    server = scripted_chat([{"text": "ready", "usage": {"input_tokens": 12, "output_tokens": 1}}])
    row = ModelConfig.objects.create(role="delegate", provider="openai", model="gpt-4o-mini", base_url=server.url)
    response = admin_client.post(CHANGELIST, {"action": "test_model", "_selected_action": [row.pk]}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert shown == ["delegate: openai/gpt-4o-mini: answered 'ready' (12 in, 1 out, $0.000002)"]
    assert server.requests[0].body["max_tokens"] == 16


def test_testing_a_responses_api_model_reports_its_answer_and_cost(admin_client, scripted_responses):
    server = scripted_responses([{"text": "ready", "usage": {"input_tokens": 12, "output_tokens": 1}}])
    row = ModelConfig.objects.create(role="chat", provider="openai_responses", model="gpt-4o-mini", base_url=server.url)
    response = admin_client.post(CHANGELIST, {"action": "test_model", "_selected_action": [row.pk]}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert shown == ["chat: openai_responses/gpt-4o-mini: answered 'ready' (12 in, 1 out, $0.000002)"]
    assert server.requests[0].body["max_output_tokens"] == 16


def test_testing_a_model_that_fails_says_why_without_a_traceback(admin_client, scripted_chat):
    server = scripted_chat([{"error": {"status": 404, "type": "model_not_found", "message": "no such model"}}])
    row = ModelConfig.objects.create(role="chat", provider="openai", model="nope", base_url=server.url)
    response = admin_client.post(CHANGELIST, {"action": "test_model", "_selected_action": [row.pk]}, follow=True)
    (shown,) = [str(m) for m in response.context["messages"]]
    assert "failed: The model provider rejected the request (404 model_not_found): no such model" in shown
    assert "Traceback" not in shown


@pytest.mark.parametrize(
    ("capabilities", "said"),
    [
        ({"web_serch": True}, "unknown capability &#x27;web_serch&#x27;; known: strict_tools, web_search"),
        ({"web_search": "yes"}, "&#x27;web_search&#x27; must be true or false"),
        (["web_search"], "must be a JSON object of capability names to true or false"),
    ],
)
def test_a_capability_claim_the_admin_cannot_use_is_refused_saying_how_to_fix_it(admin_client, capabilities, said):
    form = {
        "role": "chat",
        "provider": "openai_responses",
        "model": "gpt-5-mini",
        "capabilities": json.dumps(capabilities),
        "max_output_tokens": 4096,
        "is_active": "on",
    }
    page = admin_client.post(CHANGELIST + "add/", form).content.decode()
    assert said in page
    assert not ModelConfig.objects.exists()


def test_the_form_names_the_known_capabilities(admin_client):
    assert "known: strict_tools, web_search" in admin_client.get(CHANGELIST + "add/").content.decode()


def test_a_staff_member_who_is_not_a_superuser_cannot_test_models(client, django_user_model):
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    row = ModelConfig.objects.create(role="chat", provider="offline", model="offline")
    response = client.post(CHANGELIST, {"action": "test_model", "_selected_action": [row.pk]})
    assert response.status_code == 403


@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY"])
def test_the_form_refuses_a_key_variable_not_named_for_a_model_key(admin_client, variable):
    form = {
        "role": "chat",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "base_url": "https://collector.example.com/v1",
        "api_key_env": variable,
        "capabilities": "{}",
        "max_output_tokens": 4096,
        "is_active": "on",
    }
    page = admin_client.post(CHANGELIST + "add/", form).content.decode()
    assert "must name an environment variable ending in _API_KEY" in page
    assert not ModelConfig.objects.exists()
