"""create_observation: a note of how the person works, kept per person (noting it again
reinforces it), shown back in the [CURRENT_STATE] block of their later calls with the
policies they broke, never to anyone else, and to their tenant's staff in the admin.

The turns run through the real anthropic SDK against the scripted Messages API server.
"""

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from conversations.loop import run_turn
from conversations.models import Observation, PolicyRule, WorkingSetEntry
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT
from tests.conversations.test_subtasks_are_their_own import state_block

pytestmark = pytest.mark.django_db(transaction=True)

HABIT = "Checks every total against last month before trusting it"


def note(observation, **extra):
    return {"tool_uses": [{"name": "create_observation", "input": {"observation": observation, **extra}, "id": "o1"}]}


@pytest.fixture
def offered(conversation):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="create_observation")
    return conversation


def test_a_noted_observation_is_in_the_state_block_from_the_next_call_on(model, offered, user):
    server = model(
        [
            note(HABIT, kind="habit"),
            {"text": ["Noted."], "expect": {"tool_result_contains": "Noted as habit"}},
            {"text": ["Here are the totals."]},
        ]
    )

    async_to_sync(run_turn)(offered, text="I always compare with last month.", user=user)
    async_to_sync(run_turn)(offered, text="Totals please.", user=user)

    first, after, next_turn = server.requests
    assert "observed of this person" not in state_block(first)
    assert f"habit: {HABIT} (noted 1×)" in state_block(after)
    assert f"habit: {HABIT} (noted 1×)" in state_block(next_turn)


def test_noting_the_same_thing_again_reinforces_one_row(call, user):
    as_ann = {"user_id": str(user.pk)}
    call("create_observation", context=as_ann, observation=HABIT, kind="habit")
    again = call(
        "create_observation",
        context=as_ann,
        observation="  checks every total against LAST month before trusting it ",
        kind="habit",
    )

    assert again.error is None and "noted 2 times now" in again.content
    row = Observation.objects.get(user_id=str(user.pk))
    assert (row.kind, row.count, row.tenant_id) == ("habit", 2, TENANT)


def test_another_persons_and_another_tenants_observations_never_show(model, offered, user):
    bob = get_user_model().objects.create_user("bob")
    Observation.objects.create(
        tenant_id=TENANT, user_id=str(bob.pk), kind="habit", key="bob's", text="BOB-NOTE", count=5
    )
    Observation.objects.create(
        tenant_id=OTHER_TENANT, user_id=str(user.pk), kind="habit", key="elsewhere", text="OTHER-TENANT", count=5
    )
    server = model([{"text": ["Hello."]}])

    async_to_sync(run_turn)(offered, text="Hi", user=user)

    block = state_block(server.requests[0])
    assert "BOB-NOTE" not in block and "OTHER-TENANT" not in block and "observed of this person" not in block


def test_a_broken_policy_is_observed_and_shown_with_the_notes_most_reinforced_first(model, weather_tool, offered, user):
    PolicyRule.objects.create(
        name="map first", tool_name="weather", kind="requires_prior_tool", parameter="display_map"
    )
    Observation.objects.create(
        tenant_id=TENANT, user_id=str(user.pk), kind="preference", key="k", text="Likes maps", count=1
    )
    server = model(
        [
            {"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "w1"}]},
            {"tool_uses": [{"name": "weather", "input": {"city": "Bergen"}, "id": "w2"}]},
            {"text": ["Rain in both."]},
        ]
    )

    async_to_sync(run_turn)(offered, text="Weather?", user=user)

    block = state_block(server.requests[2])
    assert block.index("broke the policy 'map first' 2×") < block.index("preference: Likes maps (noted 1×)")


def test_a_blank_observation_is_a_hint_naming_the_field(call, user):
    result = call("create_observation", context={"user_id": str(user.pk)}, observation="   ")
    assert result.content.startswith("⚠ schema hint: observation:")
    assert not Observation.objects.exists()


def test_with_nobody_signed_in_there_is_nobody_to_note_it_of(call):
    result = call("create_observation", context={"user_id": ""}, observation=HABIT)
    assert result.error and "no signed-in person" in result.content
    assert not Observation.objects.exists()


def test_staff_read_their_tenants_observations_in_the_admin_and_no_other_tenants(client, user):
    Observation.objects.create(tenant_id=TENANT, user_id=str(user.pk), kind="habit", key="mine", text=HABIT, count=1)
    Observation.objects.create(tenant_id=OTHER_TENANT, user_id="9", kind="habit", key="theirs", text="THEIRS", count=1)
    staff = get_user_model().objects.create_user("ops", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_observation"))
    TenantMembership.objects.create(user=staff, tenant_id=TENANT)
    client.force_login(staff)

    page = client.get("/admin/conversations/observation/").content.decode()

    assert "mine" in page and "theirs" not in page
    assert client.get("/admin/conversations/observation/add/").status_code == 403
