"""The contract's closed sets are enums, and the tables that store them agree with them."""

from __future__ import annotations

import pytest

from conversations.models import Conversation
from registry.contract import (
    ENVELOPE_KINDS,
    HINT_KINDS,
    EnvelopeKind,
    Err,
    Hint,
    HintKind,
    Ok,
    classify,
)
from registry.contract_types import envelope_kind
from registry.models import Outcome
from registry.surface import MODES, Mode, resident_entries


def test_the_execution_log_stores_exactly_the_envelope_kinds():
    assert set(Outcome.values) == set(EnvelopeKind) == ENVELOPE_KINDS


def test_envelopes_are_classified_by_enum_members():
    assert classify(Ok(rows=1, data="x"))[0] is EnvelopeKind.OK
    assert classify(Hint(HintKind.SCHEMA, "bad")) == (EnvelopeKind.HINT, "schema")
    assert classify(Hint("schema", "bad"))[0] is EnvelopeKind.HINT
    assert classify(Err("boom", "Boom"))[0] is EnvelopeKind.ERR
    assert envelope_kind(Err("boom", "Boom")) is EnvelopeKind.ERR


def test_a_hint_kind_given_as_a_plain_string_still_works_and_a_typo_is_refused():
    assert HINT_KINDS == {"schema", "fetch", "ambiguous"}
    assert Hint("fetch", "too many", narrow="add a filter").hint_kind == HintKind.FETCH
    with pytest.raises(ValueError, match="unknown hint_kind 'fecth'; valid kinds: ambiguous, fetch, schema"):
        Hint("fecth", "too many")


def test_the_surface_knows_every_mode_a_conversation_can_have():
    assert set(Conversation.Mode.values) == set(Mode) == set(MODES)


def test_an_unknown_mode_is_refused_naming_the_modes():
    with pytest.raises(ValueError, match="unknown mode 'chatty'; expected one of chat, agentic, delegate"):
        resident_entries("chatty")
