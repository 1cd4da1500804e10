"""The whole flow: a natural-language request → builder → auditor → staff approval → execute_tool."""

import pytest

from registry.models import JobStatus, ToolDefinition, ToolJob, ToolStatus
from registry.tool_jobs import run_build_job
from tests.builder.conftest import APPROVE, PLUS_ONE, auditor_turn, builder_turn
from tests.conftest import TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


def request(build, staff, name="plus_one"):
    result = build(name, user_id=staff.pk)
    assert result.error is None, result.content
    return ToolJob.objects.get(tool_name=name)


def test_a_built_tool_waits_in_testing_with_the_audit_and_the_review(models, build, call, staff, custom_tools_on):
    server = models(builder_turn(PLUS_ONE), auditor_turn(APPROVE))
    job = request(build, staff)
    assert job.status == JobStatus.QUEUED and job.tenant_id == TENANT

    assert run_build_job(job.pk) == JobStatus.TESTING
    job.refresh_from_db()
    tool = ToolDefinition.objects.get(name="plus_one")
    assert (job.status, job.progress_pct) == (JobStatus.TESTING, 100)
    assert job.result["audit_passed"] is True and job.result["verdict"] == "approve"
    assert tool.status == ToolStatus.TESTING and tool.tenant_id == TENANT and tool.created_by == f"builder:{job.pk}"
    assert [r["passed"] for r in tool.test_results["results"]] == [True, True]
    assert tool.test_results["review"]["summary"] == APPROVE["summary"]
    assert "Take an integer n" in server.requests[0].messages[0]["content"][0]["text"]
    assert '"code": "result = inputs' in server.requests[1].messages[0]["content"][0]["text"]


def test_staff_approve_it_on_the_review_page_and_then_it_is_callable(
    models, build, call, client, staff, custom_tools_on
):
    models(builder_turn(PLUS_ONE), auditor_turn(APPROVE))
    job = request(build, staff)
    run_build_job(job.pk)
    tool = ToolDefinition.objects.get(name="plus_one")
    assert call("plus_one", n=1).content.startswith("⚠ schema hint")  # not callable before approval

    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    page = client.get(f"/admin/registry/tooldefinition/{tool.pk}/review/").content.decode()
    assert "Adds one, as described" in page and 'class="codehilite"' in page
    client.post(
        f"/admin/registry/tooldefinition/{tool.pk}/review/", {"approve": "1", "definition_hash": tool.definition_hash}
    )

    job.refresh_from_db()
    assert job.status == JobStatus.APPROVED
    assert text(call("plus_one", n=41)).strip() == "42"


def test_rejecting_the_tool_closes_its_job_as_rejected(models, build, call, staff, custom_tools_on):
    from registry.custom_tools import reject_custom_tool

    models(builder_turn(PLUS_ONE), auditor_turn({**APPROVE, "verdict": "revise"}))
    job = request(build, staff)
    run_build_job(job.pk)
    reject_custom_tool(ToolDefinition.objects.get(name="plus_one"), acting_user=staff, reason="not needed")
    job.refresh_from_db()
    assert job.status == JobStatus.REJECTED and job.result["verdict"] == "revise"


def test_tool_job_status_reports_progress_and_the_wait_for_staff(models, build, call, staff, custom_tools_on):
    models(builder_turn(PLUS_ONE), auditor_turn(APPROVE))
    job = request(build, staff)
    assert "is queued (0%)" in text(call("tool_job_status", job_id=job.pk))
    run_build_job(job.pk)
    status = text(call("tool_job_status", job_id=job.pk))
    assert "is testing (100%)" in status and "waiting for a staff member" in status


def test_the_builders_and_auditors_calls_are_charged_to_the_requesters_tenant_and_user(
    models, build, staff, custom_tools_on
):
    from conversations.models import UsageLog
    from llm.models import ModelConfig

    usage = {"usage": {"input_tokens": 1000, "output_tokens": 100}}
    models({**builder_turn(PLUS_ONE), **usage}, {**auditor_turn(APPROVE), **usage})
    ModelConfig.objects.update(input_price_per_mtok=3, output_price_per_mtok=15)
    job = request(build, staff)
    assert run_build_job(job.pk) == JobStatus.TESTING
    rows = UsageLog.objects.filter(kind="llm").order_by("id")
    assert [(r.tenant_id, r.user_id, r.name, r.input_tokens, r.output_tokens) for r in rows] == [
        (TENANT, str(staff.pk), "claude-test", 1000, 100)
    ] * 2
    assert [r.cost_usd for r in rows] == [pytest.approx(1000 * 3e-6 + 100 * 15e-6)] * 2
