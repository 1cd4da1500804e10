"""The fault suite's in-process cast: the scripted model, a user and a conversation
(tests/conversations), approved custom tools (tests/sandbox), a fresh MCP manager per
test and the demo server over HTTP (tests/mcp), and job clusters of a test's own
(jobs_cast)."""

from tests.conversations.conftest import conversation, model, user, weather_tool  # noqa: F401
from tests.faults.jobs_cast import clusters  # noqa: F401
from tests.mcp.conftest import http_demo, manager  # noqa: F401
from tests.sandbox.conftest import approved_tool, custom_tools_on, staff  # noqa: F401
