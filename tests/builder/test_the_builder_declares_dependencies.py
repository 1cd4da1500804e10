"""The builder's proposal names the tools its code calls; the tool is registered with them, checked."""

import pytest

from registry.models import JobStatus, ToolDefinition
from registry.tool_jobs import request_build, run_build_job
from tests.builder.conftest import APPROVE, PLUS_ONE, auditor_turn, builder_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


def test_the_builder_declares_the_dependencies_it_proposes(models, custom_tools_on):
    models(builder_turn({**PLUS_ONE, "dependencies": ["create_chart"]}), auditor_turn(APPROVE))
    job = request_build(name="plus_one", request="Add one and chart it.", tenant_id=TENANT)
    assert run_build_job(job.pk) == JobStatus.TESTING
    assert ToolDefinition.objects.get(name="plus_one").dependencies == ["create_chart"]


def test_a_builder_proposal_with_an_unknown_dependency_fails_the_job_clearly(models, custom_tools_on):
    models(builder_turn({**PLUS_ONE, "dependencies": ["no_such_tool"]}))
    job = request_build(name="plus_one", request="Add one.", tenant_id=TENANT)
    assert run_build_job(job.pk) == JobStatus.FAILED
    job.refresh_from_db()
    assert "no tool named 'no_such_tool'" in job.result["error"]
    assert not ToolDefinition.objects.filter(name="plus_one").exists()
