"""The fault suite's in-process cast: the scripted model, a user and a conversation (tests/conversations)."""

from tests.conversations.conftest import conversation, model, user, weather_tool  # noqa: F401
