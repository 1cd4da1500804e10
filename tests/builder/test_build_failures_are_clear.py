"""A build that cannot go on fails its job with a message the requester can act on."""

import pytest

from llm.models import ModelConfig
from registry.models import JobStatus, ToolDefinition, ToolJob
from registry.tool_jobs import request_build, run_build_job
from tests.builder.conftest import APPROVE, PLUS_ONE, auditor_turn, builder_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


def queued(name="plus_one"):
    return request_build(name=name, request="Take an integer n and return n plus one.", tenant_id=TENANT)


def outcome(job):
    run_build_job(job.pk)
    job.refresh_from_db()
    return job


def test_with_no_model_configured_the_job_fails_saying_how_to_configure_one(settings):
    settings.ANTHROPIC_API_KEY, settings.EUNICE_DEFAULT_MODEL = "", None
    job = outcome(queued())
    assert job.status == JobStatus.FAILED
    assert "No language model is configured for the 'tool_builder' role" in job.result["error"]
    assert "ModelConfig" in job.result["error"] and not ToolDefinition.objects.filter(name="plus_one").exists()


def test_a_role_set_to_an_unknown_provider_fails_naming_it():
    ModelConfig.objects.create(role="tool_builder", provider="nonesuch", model="x")
    job = outcome(queued())
    assert job.status == JobStatus.FAILED and "unknown provider 'nonesuch'" in job.result["error"]


def test_a_reply_that_is_not_json_fails_the_job_naming_the_format(models):
    models(builder_turn("Sure! Here is your tool: result = inputs['n'] + 1"))
    job = outcome(queued())
    assert job.status == JobStatus.FAILED
    assert "the tool_builder model's reply is not JSON" in job.result["error"]
    assert '"test_cases"' in job.result["error"]


def test_a_reply_missing_fields_lists_every_problem(models):
    models(builder_turn({"description": "", "input_schema": {"type": "array"}, "code": "result = 1", "extra": 1}))
    error = outcome(queued()).result["error"]
    for problem in ("unknown key(s) extra", "description must be", "input_schema must be", "test_cases must be"):
        assert problem in error


def test_a_fenced_json_reply_is_accepted(models, custom_tools_on):
    import json

    models(builder_turn("```json\n" + json.dumps(PLUS_ONE) + "\n```"), auditor_turn(APPROVE))
    assert outcome(queued()).status == JobStatus.TESTING


def test_a_malformed_auditor_reply_fails_the_job_and_leaves_nothing_to_approve(models, custom_tools_on):
    models(builder_turn(PLUS_ONE), auditor_turn({"verdict": "ship it"}))
    job = outcome(queued())
    assert job.status == JobStatus.FAILED and "verdict must be one of approve, revise, reject" in job.result["error"]
    assert not ToolDefinition.objects.filter(name="plus_one").exists()


def test_after_a_failed_audit_job_the_same_name_builds_again(models, custom_tools_on, staff):
    from registry.custom_tools import approve_custom_tool

    models(builder_turn(PLUS_ONE), auditor_turn({"verdict": "ship it"}), builder_turn(PLUS_ONE), auditor_turn(APPROVE))
    assert outcome(queued()).status == JobStatus.FAILED
    assert outcome(queued()).status == JobStatus.TESTING
    assert approve_custom_tool(ToolDefinition.objects.get(name="plus_one"), acting_user=staff).status == "approved"


def test_a_failed_auditor_model_call_leaves_no_approvable_tool(models, custom_tools_on):
    models(builder_turn(PLUS_ONE), {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}})
    job = outcome(queued())
    assert job.status == JobStatus.FAILED and job.result["error"].startswith("the tool_auditor model call failed")
    assert not ToolDefinition.objects.filter(name="plus_one").exists()


def test_a_failing_model_call_fails_the_job_with_the_providers_message(models):
    models({"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}})
    job = outcome(queued())
    assert job.status == JobStatus.FAILED and job.result["error"].startswith("the tool_builder model call failed")
    assert "Traceback" not in job.result["error"]


def test_a_job_is_claimed_by_one_worker_only(models):
    models(builder_turn(PLUS_ONE), auditor_turn(APPROVE))
    job = queued()
    ToolJob.objects.filter(pk=job.pk).update(status=JobStatus.BUILDING)  # another worker has it
    assert run_build_job(job.pk) == "not claimed"
    assert ToolJob.objects.get(pk=job.pk).status == JobStatus.BUILDING


def test_a_taken_name_or_an_open_build_is_refused_up_front():
    from django.core.exceptions import ValidationError

    queued()
    with pytest.raises(ValidationError, match="already under way"):
        queued()
    with pytest.raises(ValidationError, match="already exists"):
        queued("search_tools")
    with pytest.raises(ValidationError, match="lower-case"):
        queued("Bad-Name")


def test_the_admin_job_list_shows_progress_and_why_a_job_failed(admin_client, settings):
    settings.ANTHROPIC_API_KEY, settings.EUNICE_DEFAULT_MODEL = "", None
    outcome(queued())
    page = admin_client.get("/admin/registry/tooljob/").content.decode()
    assert '<progress value="5" max="100">' in page and "No language model is configured" in page
