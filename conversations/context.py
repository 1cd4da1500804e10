"""The context window's estimate, kept per conversation and model across turns.

The loop estimates a request's tokens from its size in characters
(``prompt.TokenEstimator``) and learns the ratio from what the provider
counted. The ratio is stored on the conversation (``context_calibration``, one
entry per model), so a turn starts from what the last call measured instead of
a guess: JSON, code and numbers run 2–3 characters per token, and a guess of 4
let a long history through to a "prompt is too long" refusal.
"""

from __future__ import annotations

from conversations.models import Conversation
from conversations.prompt import TokenEstimator

# A ratio that moved less than this since it was stored is not written again.
_STORE_TOLERANCE = 0.05


def stored_estimator(conversation: Conversation, model: str) -> TokenEstimator:
    """The conversation's estimator for ``model`` (the default ratio if it has none yet).
    Reads the conversation as loaded for the turn: no query."""
    ratio = (conversation.context_calibration or {}).get(model, {}).get("chars_per_token")
    estimator = TokenEstimator() if not ratio else TokenEstimator(float(ratio))
    estimator.stored_ratio = estimator.chars_per_token if ratio else None
    return estimator


def store_estimator(conversation: Conversation, model: str, estimator: TokenEstimator) -> None:
    """Keep the estimator's ratio for the conversation's next turns: on ``conversation``
    and in its row (one UPDATE, only when the ratio moved). Database work."""
    ratio = estimator.chars_per_token
    if not estimator.measured:
        return
    if estimator.stored_ratio and abs(ratio - estimator.stored_ratio) <= _STORE_TOLERANCE * estimator.stored_ratio:
        return
    calibration = {**(conversation.context_calibration or {}), model: {"chars_per_token": round(ratio, 4)}}
    conversation.context_calibration = calibration
    Conversation.objects.filter(pk=conversation.pk).update(context_calibration=calibration)
    estimator.stored_ratio = ratio
