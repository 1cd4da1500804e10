"""Scripted model servers: replay scripted turns over real HTTP.

The Messages API (``ScriptedMessagesServer``), the OpenAI-compatible Chat
Completions API (``ScriptedChatCompletionsServer``) and the Responses API
(``ScriptedResponsesServer``) answer from the same scripts. For tests (the
real ``anthropic`` and ``openai`` SDKs talk to them) and for demos
(``manage.py fake_model_server``). They never call a model.
"""

from llm.scripted.chat import ScriptedChatCompletionsServer
from llm.scripted.responses import ScriptedResponsesServer
from llm.scripted.script import Expect, ScriptError, ToolUse, Turn, load_script
from llm.scripted.server import RecordedRequest, ScriptedMessagesServer

__all__ = [
    "Expect",
    "RecordedRequest",
    "ScriptError",
    "ScriptedChatCompletionsServer",
    "ScriptedMessagesServer",
    "ScriptedResponsesServer",
    "ToolUse",
    "Turn",
    "load_script",
]
