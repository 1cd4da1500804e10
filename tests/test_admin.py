import pytest
from django.contrib.auth import get_user_model

from registry.models import ToolDefinition, ToolExecutionLog

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    staff = get_user_model().objects.create_user("staff", password="pw", is_staff=True, is_superuser=True)
    client.force_login(staff)
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/admin/registry/tooldefinition/",
        "/admin/registry/tooldefinition/?tool_type__exact=system&status__exact=approved",
        "/admin/registry/toolexecutionlog/",
        "/admin/registry/tooljob/",
        "/admin/llm/modelconfig/",
        "/admin/registry/seedlog/",
    ],
)
def test_staff_can_open_each_registry_admin_page(staff_client, url):
    assert staff_client.get(url).status_code == 200


def test_the_tool_list_can_be_searched_by_description(staff_client):
    page = staff_client.get("/admin/registry/tooldefinition/", {"q": "step-by-step"}).content.decode()
    assert ">plan<" in page and ">search_tools<" not in page


def test_a_tool_definition_opens_for_editing(staff_client):
    tool = ToolDefinition.objects.get(name="plan")
    assert staff_client.get(f"/admin/registry/tooldefinition/{tool.pk}/change/").status_code == 200


def test_the_execution_log_is_read_only(staff_client, call):
    call("search_tools", query="plan")
    row = ToolExecutionLog.objects.get()
    assert staff_client.get("/admin/registry/toolexecutionlog/add/").status_code == 403
    response = staff_client.post(f"/admin/registry/toolexecutionlog/{row.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert ToolExecutionLog.objects.filter(pk=row.pk).exists()


def test_a_user_who_is_not_staff_is_sent_to_the_login_page(client):
    user = get_user_model().objects.create_user("pat", password="pw")
    client.force_login(user)
    response = client.get("/admin/registry/tooldefinition/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
