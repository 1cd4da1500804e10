"""A fetch hint for a name that is not there, with the closest names that are."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from registry.contract import HintException


def not_found(message: str, wanted: str, names: Iterable[str], *, narrow: str) -> HintException:
    """The hint to raise: ``message``, up to three names close to ``wanted`` scored by spelling, and ``narrow``."""
    close = difflib.get_close_matches(wanted, list(names), n=3, cutoff=0.5)
    scored = [{"label": name, "score": round(difflib.SequenceMatcher(None, wanted, name).ratio(), 3)} for name in close]
    return HintException("fetch", message, scored, narrow=narrow)
