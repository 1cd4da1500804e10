"""Handler of run_program: one short program the model writes, calling tools from the sandbox.

A multi-step task done with ordinary calls sends every intermediate result through
the model's context; a program makes the same calls in the custom-tool sandbox (every
limit applies) and hands back only its ``result``. Each inner ``call`` goes through the
registry's one gate, as the model's own call would: the caller's policy rules, a
person's approval, the execution log and the conversation's events. Only tools that
sandboxed code may call are reachable (tools/catalog.py ``SANDBOX_CALLABLE``).
"""

from __future__ import annotations

from django.conf import settings

from datacatalog.access import is_staff
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, uniform_contract
from registry.declarations import Tool
from registry.sandbox import service
from tools.analysis import refused_run


@uniform_contract(name="run_program", is_tabular=False)
def run_program(inputs: dict, context: ToolContext) -> Ok | Err:
    """Run the program; its ``result`` is the answer, and what its calls made for the
    user (charts, files, saved datasets) is handed on. A failing call or line is a Hint."""
    if settings.DATA["ANALYZE_DATA_FOR"] == "staff" and not is_staff(context):
        return Err("run_program runs code and is limited to staff here (EUNICE_ANALYZE_DATA_FOR)", "PermissionDenied")
    outcome, made = service.run_program(inputs["code"], context)
    if not outcome.ok:
        return refused_run(outcome)
    answer = outcome.answer or {}
    text = answer.get("text") or ""
    if answer.get("kind") == "response":
        text = str(answer["response"].get("message", ""))
    if not text:
        raise HintException("schema", "code: the program set no `result`; assign what the user needs to `result`")
    effects = Effects(cards=made.cards, datasets=made.datasets, exports=made.exports)
    return Ok(rows=1, data=text, effects=effects)


DESCRIPTION = (
    "Run one short Python program that calls other tools and returns only what you need. "
    "Use it for a task of several dependent steps (find, filter, aggregate, chart) whose "
    "intermediate results you do not need to read: one call instead of one per step, and "
    "only the answer enters the conversation. In the code, `call('tool_name', arg=value)` "
    "returns a tool's data (a table as a list of row dicts, else its text or object) and "
    "raises if the tool answers with a hint or an error (catch it with try/except to go on "
    "without that step); assign the answer to `result`. "
    "pd and np are available; no imports or files. Tools that start processes, register "
    "data sources or change configuration cannot be called from a program; a call that "
    "needs a person's approval ends the program, and runs alone once the person approves."
)

TOOLS = (
    Tool(
        name="run_program",
        description=DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Python that calls tools with call(name, **inputs) and sets result.",
                },
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        handler=run_program,
        category="data",
        status_message="Running a program",
        timeout_seconds=60,
    ),
)
