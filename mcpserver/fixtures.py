"""The conformance suite's fixture tools, as Eunice tools (manage.py mcp_conformance_server).

Each is a handler the registry runs like any other; what the suite expects to read back
(image, audio, an embedded resource) travels as the cards the MCP client makes of such
content (registry/mcp/results.py), and the endpoint turns them back into content blocks.
"""

from __future__ import annotations

import time
from typing import Any

from registry.cards import CardType
from registry.context import ToolContext
from registry.contract import Effects, Err, Ok

TENANT = "conformance"
BUNDLE = "conformance"
# A 1×1 red PNG and a 1-sample WAV.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="


def _text(text: str, *cards: dict) -> Ok:
    return Ok(rows=1, data=text, effects=Effects(cards=list(cards)))


def simple_text(inputs: dict, context: ToolContext) -> Ok:
    return _text("This is a simple text response for testing.")


def image_content(inputs: dict, context: ToolContext) -> Ok:
    return _text("A red pixel.", {"type": CardType.IMAGE, "mime_type": "image/png", "data": PNG})


def audio_content(inputs: dict, context: ToolContext) -> Ok:
    return _text("A moment of silence.", {"type": CardType.AUDIO, "mime_type": "audio/wav", "data": WAV})


def embedded_resource(inputs: dict, context: ToolContext) -> Ok:
    text = "This is an embedded resource content."
    return _text(
        text, {"type": CardType.RESOURCE, "uri": "test://embedded-resource", "mime_type": "text/plain", "text": text}
    )


def multiple_content_types(inputs: dict, context: ToolContext) -> Ok:
    return _text(
        "Multiple content types test:",
        {"type": CardType.IMAGE, "mime_type": "image/png", "data": PNG},
        {
            "type": CardType.RESOURCE,
            "uri": "test://mixed-content-resource",
            "mime_type": "application/json",
            "text": '{"test":"data","value":123}',
        },
    )


def error_handling(inputs: dict, context: ToolContext) -> Err:
    return Err("This tool intentionally returns an error for testing", "ConformanceError")


def tool_with_progress(inputs: dict, context: ToolContext) -> Ok:
    for fraction in (0.0, 0.5, 1.0):
        context.progress(f"{int(fraction * 100)} of 100", fraction)
        if fraction < 1.0:
            time.sleep(0.05)
    return _text("Progress reported.")


def tool_with_logging(inputs: dict, context: ToolContext) -> Ok:
    for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        context.progress(step)
        time.sleep(0.05)
    return _text("Logging completed.")


def missing_capability(inputs: dict, context: ToolContext) -> Ok:
    # Served only to clients that declare sampling (REQUIRES); it never asks for a sample.
    return _text("This client declared the sampling capability.")


def trigger_tool_change(inputs: dict, context: ToolContext) -> Ok:
    """Turn ``test_changing_tool`` off or on: the served list changes, and listeners hear it."""
    from registry.models import ToolDefinition

    tool = ToolDefinition.objects.get(name="test_changing_tool")
    tool.enabled = not tool.enabled
    tool.save(update_fields=["enabled", "updated_at"])
    return _text(f"test_changing_tool is now {'served' if tool.enabled else 'withdrawn'}.")


NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}

# name → (handler, description)
FIXTURES = {
    "test_simple_text": (simple_text, "Returns a simple text response."),
    "test_image_content": (image_content, "Returns an image (a red pixel)."),
    "test_audio_content": (audio_content, "Returns audio (a WAV)."),
    "test_embedded_resource": (embedded_resource, "Returns an embedded text resource."),
    "test_multiple_content_types": (multiple_content_types, "Returns text, an image and a resource."),
    "test_error_handling": (error_handling, "Always fails, to test error reporting."),
    "test_tool_with_progress": (tool_with_progress, "Reports progress three times."),
    "test_tool_with_logging": (tool_with_logging, "Reports three steps while it runs."),
    "test_missing_capability": (missing_capability, "Needs a client that declares sampling."),
    "test_trigger_tool_change": (trigger_tool_change, "Withdraws or restores test_changing_tool."),
    "test_changing_tool": (simple_text, "Comes and goes with test_trigger_tool_change."),
}

# The client capabilities a fixture needs (MCPEndpoint's ``requires``).
REQUIRES: dict[str, dict[str, dict]] = {"test_missing_capability": {"sampling": {}}}


def install(registry: Any) -> None:
    """The fixture tools as approved tools of the conformance tenant, their handlers registered,
    and the bundle that serves them. Idempotent."""
    from mcpserver.models import Bundle
    from registry.models import ToolDefinition, ToolStatus, ToolType

    for name, (handler, description) in FIXTURES.items():
        row: dict[str, Any] = {
            "description": description,
            "input_schema": NO_ARGUMENTS,
            "tool_type": ToolType.SYSTEM,
            "status": ToolStatus.APPROVED,
            "category": "conformance",
            "tenant_id": TENANT,
            "handler_path": f"{handler.__module__}.{handler.__qualname__}",
        }
        ToolDefinition.objects.update_or_create(name=name, defaults=row)
        registry.register_handler(name, handler)
    Bundle.objects.update_or_create(
        tenant_id=TENANT,
        slug=BUNDLE,
        defaults={"title": "Conformance fixtures", "tools": sorted(FIXTURES), "all_tools": False},
    )
    registry.invalidate()
