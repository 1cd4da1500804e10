"""What the loop does with a model call that stopped short: cut off, paused or refused.

``end_turn`` and ``tool_use`` are the loop's ordinary path. The others:

- ``max_tokens`` with text: the answer reached the model's output limit. It is
  continued: the cut message stays in history and a user note asks the model
  to go on where it stopped (at most ``MAX_CONTINUATIONS`` times a turn; then
  the answer ends with ``CUT_NOTICE``, visibly). A note, not an assistant
  prefill: the API refuses a prefill when extended thinking is on, and newer
  models refuse it altogether.
- ``max_tokens`` inside a tool call: its input is half a JSON object. The
  call is never run; the model is told which call was cut and why, and
  answers again (``cut_tool_note``).
- ``pause_turn``: the API paused a long turn. The paused message is sent back
  as the last message of the next request, unchanged, and the API goes on.
- ``refusal``: the provider's safety system stopped the answer. The person
  sees what streamed and ``REFUSAL_NOTICE``; the refused reply is stored as an
  assistant message with no content, so it is never sent back to the model.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_CONTINUATIONS = 3

CONTINUE_NOTE = (
    "Your previous answer was cut off at the output limit. Continue exactly where it stopped, "
    "without repeating what you already wrote."
)
CUT_NOTICE = "(The answer was cut off: it reached the model's output limit.)"
REFUSAL_NOTICE = "(The model declined to answer this.)"
# What the page shows under an answer that stopped short (the websocket's ``done`` carries it).
AWAITING_NOTICE = "Waiting for your decision on the call above; the answer goes on once you decide."
NOTICES = {
    "max_tokens": CUT_NOTICE.strip("()"),
    "refusal": REFUSAL_NOTICE.strip("()"),
    "awaiting_approval": AWAITING_NOTICE,
}
# What a refused reply is stored as: it said nothing the model should read back.
REFUSED_MESSAGE: dict = {"role": "assistant", "content": []}


def cut_tool_note(names: tuple[str, ...], max_tokens: int) -> dict:
    """The text block that tells the model its tool call was cut off and not run."""
    calls = ", ".join(f"`{name}`" for name in names)
    return {
        "type": "text",
        "text": (
            f"Your call to {calls} was cut off at the output limit ({max_tokens} tokens) before its "
            "input was complete, so it was not run. Call it again with a smaller input, or split the "
            "work into several calls."
        ),
    }


def continue_message() -> dict:
    return {"role": "user", "content": [{"type": "text", "text": CONTINUE_NOTE}]}


@dataclass
class Answer:
    """The answer text of one turn, carried across continuations and pauses."""

    carried: str = ""
    continuations: int = 0

    def text(self, last: str) -> str:
        return self.carried + last

    def carry(self, text: str) -> None:
        self.carried += text

    def reset(self) -> None:
        """A tool call ends what was being continued: the next answer is a new one."""
        self.carried = ""

    def may_continue(self) -> bool:
        if self.continuations >= MAX_CONTINUATIONS:
            return False
        self.continuations += 1
        return True


def with_notice(text: str, notice: str) -> str:
    return f"{text}\n\n{notice}".strip()
