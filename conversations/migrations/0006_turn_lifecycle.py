"""Turns are reserved when they begin (status, owner, heartbeat) and closed as
finished or interrupted; policy escalation is counted per conversation.

Turns that broke before this (events stored under a number with no record:
a turn that raised or whose server was killed) are closed as interrupted from
their events, so replay covers them and their numbers are never reused.
"""

import base64

import django.db.models.deletion
from django.db import migrations, models

REASON = "closed when turns became reservations: this turn had stopped without a record"


def close_broken_turns(apps, schema_editor):
    Event = apps.get_model("conversations", "ConversationEvent")
    Turn = apps.get_model("conversations", "TurnRecord")
    recorded = set(Turn.objects.values_list("conversation_id", "turn"))
    broken = sorted(set(Event.objects.values_list("conversation_id", "turn")) - recorded)
    for conversation_id, turn in broken:
        events = list(
            Event.objects.filter(conversation_id=conversation_id, turn=turn).select_related("blob").order_by("sequence")
        )
        ending = {"turn": turn, "reason": REASON}
        effects = [
            {
                "kind": "TelemetryEvent",
                "event_type": e.event_type,
                "data": e.data,
                "blob": base64.b64encode(bytes(e.blob.data)).decode() if e.blob_id else None,
            }
            for e in events
        ]
        effects.append({"kind": "TelemetryEvent", "event_type": "interrupted", "data": ending, "blob": None})
        Event.objects.create(
            conversation_id=conversation_id,
            turn=turn,
            sequence=events[-1].sequence + 1,
            event_type="interrupted",
            data=ending,
        )
        Turn.objects.create(
            conversation_id=conversation_id, turn=turn, status="interrupted", interrupted_reason=REASON, effects=effects
        )


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0005_file_owner"),
    ]

    operations = [
        migrations.CreateModel(
            name="PolicyViolationTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("count", models.PositiveIntegerField(default=0)),
            ],
            options={
                "db_table": "conversation_policy_violations",
            },
        ),
        migrations.AddField(
            model_name="turnrecord",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="turnrecord",
            name="interrupted_reason",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="turnrecord",
            name="owner",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="turnrecord",
            name="status",
            field=models.CharField(
                choices=[("running", "Running"), ("finished", "Finished"), ("interrupted", "Interrupted")],
                default="finished",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="conversationevent",
            name="event_type",
            field=models.CharField(
                choices=[
                    ("user_message", "User Message"),
                    ("llm_request", "Llm Request"),
                    ("tool_call", "Tool Call"),
                    ("tool_result", "Tool Result"),
                    ("thinking", "Thinking"),
                    ("status", "Status"),
                    ("text_delta", "Text Delta"),
                    ("card", "Card"),
                    ("progress", "Progress"),
                    ("error", "Error"),
                    ("policy_violation", "Policy Violation"),
                    ("behavioral_observation", "Behavioral Observation"),
                    ("decision", "Decision"),
                    ("outcome", "Outcome"),
                    ("correction", "Correction"),
                    ("friction", "Friction"),
                    ("export", "Export"),
                    ("done", "Done"),
                    ("text_position_stats", "Text Position Stats"),
                    ("contract_envelope", "Contract Envelope"),
                    ("interrupted", "Interrupted"),
                ],
                db_index=True,
                max_length=32,
            ),
        ),
        migrations.AddConstraint(
            model_name="turnrecord",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "running")), fields=("conversation",), name="one_running_turn"
            ),
        ),
        migrations.AddField(
            model_name="policyviolationtally",
            name="conversation",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="conversations.conversation"
            ),
        ),
        migrations.AddField(
            model_name="policyviolationtally",
            name="rule",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="conversations.policyrule"
            ),
        ),
        migrations.AddConstraint(
            model_name="policyviolationtally",
            constraint=models.UniqueConstraint(fields=("conversation", "rule"), name="violation_tally_once"),
        ),
        migrations.RunPython(close_broken_turns, migrations.RunPython.noop),
    ]
