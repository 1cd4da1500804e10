"""The model half of the ToolBuilder and ToolAuditor: one call each, answered in strict JSON.

The builder (role ``tool_builder``) turns a natural-language request into a
proposal — description, input schema, code and test cases; the auditor (role
``tool_auditor``) reads the proposal with the static checks and sandbox
results and gives a verdict. Both replies must be one JSON object (a single
```json fence around it is tolerated, nothing else); anything else fails the
build with a message that says what was wrong. Every message here is safe to
show the requester: no traceback, no secret.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from eunice.jsonlimits import JSONTooDeep, loads_bounded
from llm import LLMConfigError, LLMError, LLMRequest
from llm.errors import RoleOffline
from llm.models import ModelConfig
from llm.provider import Provider
from llm.roles import callable_model_for_role
from registry.usage import charge_model

BUILDER_ROLE = "tool_builder"
AUDITOR_ROLE = "tool_auditor"
MAX_CODE_CHARS = 20_000
MAX_DESCRIPTION_CHARS = 2_000
MAX_TEST_CASES = 10
VERDICTS = ("approve", "revise", "reject")

BUILDER_FORMAT = (
    '{"description": "what the tool does, written for a model choosing it", '
    '"input_schema": {"type": "object", "properties": {...}, "required": [...]}, '
    '"code": "Python source that assigns result", '
    '"dependencies": ["names of the tools the code calls with call_tool"], '
    '"test_cases": [{"inputs": {...}, "expect": "text the output must contain"}]}'
)
AUDITOR_FORMAT = '{"verdict": "approve" | "revise" | "reject", "summary": "one paragraph", "concerns": ["..."]}'

BUILDER_SYSTEM = f"""You write custom tools for Eunice, an LLM agent platform.
A custom tool is Python source run in a sandbox. Its code sees only:
- inputs: a dict of the tool's arguments, already validated against its input schema;
- df: the conversation's default dataset as a pandas DataFrame, or None;
- pd and np: restricted pandas and numpy (no file, URL or pickle I/O);
- call_tool(name, inputs): runs another tool and returns its text; only the tools listed in
  "dependencies" may be called (list none if the code calls none);
and must assign its answer to `result` (a DataFrame/Series becomes a table, a dict with a
"message" key is the full response, anything else is stringified).
No imports, no names starting with an underscore, no open/exec/eval, no network, no files.
Give 1 to {MAX_TEST_CASES} test cases that do not need df.
Reply with exactly one JSON object and nothing else, in this format:
{BUILDER_FORMAT}"""

AUDITOR_SYSTEM = f"""You audit custom tools for Eunice before a staff member reviews them.
You get the tool's description, input schema, code, the static checks and the results of
its test cases in the sandbox. Judge whether the code does what the description says,
handles bad or missing inputs, and does nothing beyond its purpose. You never approve a
tool yourself: a staff member reads your verdict.
Reply with exactly one JSON object and nothing else, in this format:
{AUDITOR_FORMAT}"""


class BuildFailed(Exception):
    """The build cannot go on; the message says why and is safe to show the requester."""


@dataclass(frozen=True)
class Proposal:
    description: str
    input_schema: dict[str, Any]
    code: str
    test_cases: list[dict[str, Any]]
    dependencies: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoleModel:
    """A role's model, and whom its calls are charged to (the usage log)."""

    config: ModelConfig
    client: Provider
    tenant_id: str = ""
    user_id: str = ""
    conversation_id: str = ""

    def ask(self, system: str, prompt: str) -> str:
        """One completion, charged; raises BuildFailed with the provider's (safe) message."""
        request = LLMRequest.for_model(self.config, system=system, messages=[{"role": "user", "content": prompt}])
        try:
            response = self.client.complete(request)
        except LLMError as exc:
            raise BuildFailed(f"the {self.config.role} model call failed: {exc}") from None
        charge_model(
            self.config,
            response.usage,
            tenant_id=self.tenant_id,
            user_id=self.user_id,
            conversation_id=self.conversation_id,
        )
        return response.text


def model_for(role: str, **charged_to: str) -> RoleModel:
    """The configured model of ``role``, its calls charged to ``charged_to`` (``tenant_id``,
    ``user_id``, ``conversation_id``). Raises BuildFailed when none is configured."""
    try:
        config, client = callable_model_for_role(role)
    except RoleOffline as exc:
        # The offline provider would answer with setup advice, not a tool: stop here instead.
        raise BuildFailed(
            f"{exc} Tool building needs a model for the {role!r} role: add an active "
            "ModelConfig row for it in the admin (Language models → Model configs), or set ANTHROPIC_API_KEY."
        ) from None
    except LLMConfigError as exc:
        raise BuildFailed(str(exc)) from None
    return RoleModel(config, client, **charged_to)


def propose(model: RoleModel, *, name: str, request: str) -> Proposal:
    """Ask the builder model for a tool. Raises BuildFailed on a failed call or a malformed reply."""
    prompt = f"Tool name: {name}\nWhat the tool should do:\n{request}"
    return parse_proposal(model.ask(BUILDER_SYSTEM, prompt))


def review(model: RoleModel, *, name: str, proposal: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """Ask the auditor model for a verdict. Raises BuildFailed on a failed call or a malformed reply."""
    prompt = json.dumps(
        {
            "name": name,
            **proposal,
            "static_problems": report.get("static_problems", []),
            "test_results": report.get("results", []),
        },
        indent=2,
        default=str,
    )
    return parse_review(model.ask(AUDITOR_SYSTEM, prompt))


def parse_proposal(reply: str) -> Proposal:
    """The builder's reply as a Proposal. Raises BuildFailed listing every problem."""
    data = _json_object(reply, BUILDER_ROLE, BUILDER_FORMAT)
    problems = _unknown_keys(data, {"description", "input_schema", "code", "test_cases", "dependencies", "name"})
    description, schema, code, cases = (data.get(k) for k in ("description", "input_schema", "code", "test_cases"))
    dependencies = data.get("dependencies", [])
    if not isinstance(description, str) or not description.strip() or len(description) > MAX_DESCRIPTION_CHARS:
        problems.append(f"description must be a non-empty string of at most {MAX_DESCRIPTION_CHARS} characters")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append('input_schema must be a JSON Schema object with "type": "object"')
    if not isinstance(code, str) or not code.strip() or len(code) > MAX_CODE_CHARS:
        problems.append(f"code must be a non-empty string of at most {MAX_CODE_CHARS} characters")
    if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
        problems.append("dependencies must be a list of tool names")
    if not isinstance(cases, list) or not 1 <= len(cases) <= MAX_TEST_CASES:
        problems.append(f"test_cases must be a list of 1 to {MAX_TEST_CASES} cases")
    else:
        problems += [
            f'test_cases[{i}] must be {{"inputs": object, "expect": string}}'
            for i, case in enumerate(cases)
            if not _is_case(case)
        ]
    if problems:
        raise BuildFailed(
            f"the {BUILDER_ROLE} model's reply is unusable: {'; '.join(problems)}. Expected: {BUILDER_FORMAT}"
        )
    return Proposal(
        description.strip(),
        schema,
        code,
        [{"inputs": c["inputs"], "expect": c["expect"]} for c in cases],
        tuple(dependencies),
    )


def parse_review(reply: str) -> dict[str, Any]:
    """The auditor's reply as ``{"verdict", "summary", "concerns"}``. Raises BuildFailed."""
    data = _json_object(reply, AUDITOR_ROLE, AUDITOR_FORMAT)
    problems = _unknown_keys(data, {"verdict", "summary", "concerns"})
    if data.get("verdict") not in VERDICTS:
        problems.append(f"verdict must be one of {', '.join(VERDICTS)}, not {data.get('verdict')!r}")
    if not isinstance(data.get("summary"), str):
        problems.append("summary must be a string")
    concerns = data.get("concerns", [])
    if not isinstance(concerns, list) or not all(isinstance(c, str) for c in concerns):
        problems.append("concerns must be a list of strings")
    if problems:
        raise BuildFailed(
            f"the {AUDITOR_ROLE} model's reply is unusable: {'; '.join(problems)}. Expected: {AUDITOR_FORMAT}"
        )
    return {"verdict": data["verdict"], "summary": data["summary"], "concerns": concerns}


def _json_object(reply: str, role: str, expected: str) -> dict[str, Any]:
    text = reply.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text[3:-3].removeprefix("json").strip()
    try:
        data = loads_bounded(text, what=f"the {role} model's reply")
    except JSONTooDeep as exc:
        raise BuildFailed(f"{exc}. Expected one object: {expected}") from None
    except json.JSONDecodeError as exc:
        raise BuildFailed(
            f"the {role} model's reply is not JSON ({exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}). Expected one object: {expected}"
        ) from None
    if not isinstance(data, dict):
        raise BuildFailed(f"the {role} model's reply is JSON but not an object. Expected: {expected}")
    return data


def _unknown_keys(data: dict[str, Any], known: set[str]) -> list[str]:
    unknown = sorted(set(data) - known)
    return [f"unknown key(s) {', '.join(unknown)}"] if unknown else []


def _is_case(case: Any) -> bool:
    return isinstance(case, dict) and isinstance(case.get("inputs"), dict) and isinstance(case.get("expect"), str)
