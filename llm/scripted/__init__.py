"""A scripted Messages API server: replays scripted turns over real HTTP.

For tests (the real ``anthropic`` SDK talks to it through ANTHROPIC_BASE_URL)
and for demos (``manage.py fake_model_server``). It never calls a model.
"""

from llm.scripted.script import Expect, ScriptError, ToolUse, Turn, load_script
from llm.scripted.server import RecordedRequest, ScriptedMessagesServer

__all__ = ["Expect", "RecordedRequest", "ScriptError", "ScriptedMessagesServer", "ToolUse", "Turn", "load_script"]
