"""Handler of create_observation: a note of how the person works, kept per person and
shown back to the model in each call's [CURRENT_STATE] block (conversations.observations)."""

from __future__ import annotations

from registry.context import ToolContext
from registry.contract import Err, HintException, Ok, uniform_contract
from registry.conversation_records import conversation_records
from registry.declarations import Tool

# The kinds conversations.observations.NOTE_KINDS accepts (this layer cannot import it).
KINDS = ["preference", "habit", "expertise", "correction"]


@uniform_contract(name="create_observation", is_tabular=False)
def create_observation(inputs: dict, context: ToolContext) -> Ok | Err:
    """Note (or reinforce) an observation of the caller; says how often it has been noted."""
    note = " ".join(inputs["observation"].split())
    if len(note) < 3:
        raise HintException("schema", "observation: write the observation as a short sentence")
    if not context.user_id:
        return Err("no signed-in person is behind this call, so there is nobody to note it of", "NoPerson")
    kind = inputs.get("kind", "habit")
    times = conversation_records().note_observation(
        tenant_id=context.tenant_id, user_id=context.user_id, kind=kind, text=note
    )
    if context.recorder is not None:
        context.recorder.record("behavioral_observation", {"kind": kind, "observation": note, "count": times})
    again = f" (noted {times} times now)" if times > 1 else ""
    return Ok(rows=1, data=f"Noted as {kind}: {note}{again}. It will be in [CURRENT_STATE] from the next call.")


TOOLS = (
    Tool(
        name="create_observation",
        description=(
            "Record a lasting trait of the signed-in user's way of working (a preference such as "
            "charts over tables, a habit, their expertise, a correction they made) so that later "
            "conversations adapt to them. One sentence about the person, not about the data; "
            "recording it again reinforces it. It shows in [CURRENT_STATE] under 'observed of this person'."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "observation": {
                    "type": "string",
                    "minLength": 3,
                    "maxLength": 200,
                    "description": "One sentence about the user's way of working.",
                },
                "kind": {"type": "string", "enum": KINDS, "default": "habit"},
            },
            "required": ["observation"],
            "additionalProperties": False,
        },
        handler=create_observation,
        category="utility",
        status_message="Noting that",
        inline=True,
    ),
)
