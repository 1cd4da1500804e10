"""Handler of convene: a panel of helper agents discusses a question in rounds, then a
moderator sums the discussion up.

Each speech is a delegated task of the calling turn (``SubtaskRunner``, the machinery of
delegate): it streams into a pane labelled with the participant's name, never into the
answer, spends from its own allowance, and can use tools. Within a round participants
speak in turn, so that each answers what was said before it, the previous rounds' and
this one's; the budget, if given, is shared out speech by speech (what is left over the
speeches still to come, the moderator's included) and the discussion ends early when it
is spent. What each participant cost is reported beside the moderator's summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from registry.ports import SubtaskOutcome
from tools.agent import subtask_runner

MODERATOR = "Moderator"
SPEECH_WORDS = 150
# What a speech may quote of the discussion so far: the newest part, if it is long.
TRANSCRIPT_CHARS = 12_000


@dataclass
class Speaker:
    name: str
    perspective: str
    speeches: int = 0
    cost_usd: float = 0.0


@dataclass
class Panel:
    """The discussion so far: who spoke, what they said, what is left to spend."""

    question: str
    speakers: list[Speaker]
    budget_usd: float | None
    transcript: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)

    @property
    def spent(self) -> float:
        return sum(s.cost_usd for s in self.speakers)

    def allowance(self, speeches_left: int) -> float | None:
        """What the next speech may spend: an equal share of what is left."""
        if self.budget_usd is None:
            return None
        return max(0.0, self.budget_usd - self.spent) / speeches_left

    def heard(self, speaker: Speaker, label: str, outcome: SubtaskOutcome) -> None:
        speaker.speeches += 1
        speaker.cost_usd += outcome.cost_usd
        if not outcome.finished:  # its text is the loop's note of why, not a view to answer
            self.stopped.append(f"{label} ({outcome.stop_reason})")
        elif outcome.text.strip():
            self.transcript.append(f"{speaker.name}: {outcome.text.strip()}")


@uniform_contract(name="convene", is_tabular=False, is_cost_rollup=True)
async def convene(inputs: dict, context: ToolContext) -> Ok:
    """Run the rounds of the discussion, then the moderator; the summary and each one's cost."""
    subtasks = subtask_runner(context, "convene")
    panel = Panel(inputs["question"], _speakers(inputs["participants"]), inputs.get("max_cost_usd"))
    rounds = inputs.get("rounds", 2)
    speeches_left = rounds * len(panel.speakers) + 1
    for round_number in range(1, rounds + 1):
        for speaker in panel.speakers:
            if panel.budget_usd is not None and panel.spent >= panel.budget_usd:
                break
            label = f"{speaker.name} · round {round_number}"
            brief = _participant_brief(panel, speaker, round_number, rounds)
            outcome = await subtasks.run(brief, budget_usd=panel.allowance(speeches_left), label=label)
            speeches_left -= 1
            panel.heard(speaker, label, outcome)
            context.progress(f"{label} has spoken", 1 - speeches_left / (rounds * len(panel.speakers) + 1))
    moderator = Speaker(MODERATOR, "")
    summary = await subtasks.run(_moderator_brief(panel), budget_usd=panel.allowance(1), label=MODERATOR)
    panel.heard(moderator, MODERATOR, summary)
    return _report(panel, moderator, summary)


def _speakers(participants: list[dict]) -> list[Speaker]:
    """The panel, in the order given. Raises a Hint for two participants of one name."""
    names = [" ".join(p["name"].split()) for p in participants]
    if not all(names):
        raise HintException("schema", "participants: every participant needs a name, e.g. 'Skeptic'")
    taken = {name.casefold() for name in names}
    if len(taken) < len(names) or MODERATOR.casefold() in taken:
        raise HintException("schema", f"participants: give each participant a different name, not {MODERATOR!r}")
    return [Speaker(name, p.get("perspective", "").strip()) for name, p in zip(names, participants, strict=True)]


def _participant_brief(panel: Panel, speaker: Speaker, round_number: int, rounds: int) -> str:
    others = ", ".join(s.name for s in panel.speakers if s is not speaker)
    view = f"Argue from this perspective: {speaker.perspective}\n" if speaker.perspective else ""
    return (
        f"You are {speaker.name}, one of a panel ({others} are the others) discussing a question "
        f"in {rounds} round(s); this is round {round_number}.\n{view}"
        f"Question: {panel.question}\n\n{_transcript(panel)}\n\n"
        f"Give your view in at most {SPEECH_WORDS} words. Answer the others by name where you "
        "agree or disagree; bring evidence (you may use tools) rather than repeating yourself."
    )


def _moderator_brief(panel: Panel) -> str:
    return (
        f"You moderated a panel ({', '.join(s.name for s in panel.speakers)}) on this question: "
        f"{panel.question}\n\n{_transcript(panel)}\n\n"
        "Sum the discussion up for the person who asked: where the panel agrees, where it "
        "disagrees and why, and what you recommend. Attribute views by name. Do not add views "
        "nobody put forward."
    )


def _transcript(panel: Panel) -> str:
    if not panel.transcript:
        return "Nobody has spoken yet."
    text = "\n\n".join(panel.transcript)
    if len(text) > TRANSCRIPT_CHARS:
        text = "… (earlier speeches left out)\n" + text[-TRANSCRIPT_CHARS:]
    return f"The discussion so far:\n\n{text}"


def _report(panel: Panel, moderator: Speaker, summary: SubtaskOutcome) -> Ok:
    everyone = [*panel.speakers, moderator]
    costs = "\n".join(f"| {s.name} | {s.speeches} | ${s.cost_usd:.4f} |" for s in everyone)
    text = (
        f"## Summary by the moderator\n{summary.text.strip() or '(no summary)'}\n\n"
        f"## Cost by participant\n| participant | speeches | cost |\n| --- | --- | --- |\n{costs}\n"
        f"| total | {sum(s.speeches for s in everyone)} | ${panel.spent + moderator.cost_usd:.4f} |"
    )
    warnings = []
    silent = [s.name for s in panel.speakers if s.speeches == 0]
    if silent:
        warnings.append(Warning("incomplete", f"the budget ran out before {', '.join(silent)} spoke"))
    if panel.stopped:
        warnings.append(Warning("incomplete", f"stopped early: {'; '.join(panel.stopped)}"))
    cost = sum(s.cost_usd for s in everyone)
    return Ok(rows=len(everyone), data=text, warnings=warnings, effects=Effects(cost=cost))


TOOLS = (
    Tool(
        name="convene",
        description=(
            "Hold a panel debate: 2-5 named helper agents argue opposing positions on a decision "
            "over rounds, each rebutting the others, then a moderator sums up where they agree, "
            "where they differ and what to do. For contested judgement calls; for a plain task use "
            "delegate. Optionally cap the total cost. Returns the moderator's summary and each "
            "panelist's cost; their speeches appear in panes of their own."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": 1, "description": "The decision to debate, in full."},
                "participants": {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 5,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "minLength": 1, "maxLength": 40},
                            "perspective": {"type": "string", "description": "The position this panelist argues."},
                        },
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                },
                "rounds": {"type": "integer", "minimum": 1, "maximum": 3, "default": 2},
                "max_cost_usd": {"type": "number", "exclusiveMinimum": 0, "description": "For the whole panel."},
            },
            "required": ["question", "participants"],
            "additionalProperties": False,
        },
        handler=convene,
        category="utility",
        status_message="Convening a panel",
        timeout_seconds=3600,
    ),
)
