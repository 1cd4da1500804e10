"""Shared fixtures for the retrieval tests: one real embedder, a small catalog."""

from __future__ import annotations

import pytest

from registry.retrieval import Embedder, ToolDocument, ToolSearchIndex


def tool(key: str, description: str, **parameters: str) -> ToolDocument:
    """A tool whose schema has one string parameter per keyword (name -> description)."""
    schema = {
        "type": "object",
        "properties": {name: {"type": "string", "description": text} for name, text in parameters.items()},
    }
    return ToolDocument(key=key, name=key, description=description, input_schema=schema if parameters else None)


CATALOG = [
    tool("get_weather_forecast", "Get the weather forecast for a city for the next days.", city="City name"),
    tool("send_email", "Send an email message to a recipient.", to="Recipient address", body="Message text"),
    tool("mcp_github_create_issue", "Open a new issue in a GitHub repository.", repo="owner/name", title="Issue title"),
    tool("convertCurrency", "Convert an amount of money between two currencies.", amount="How much", target="ISO code"),
    tool("write_file", "Write text content to a file on disk.", path="Where to write", content="What to write"),
    tool("create_calendar_event", "Create an event in the user's calendar.", start="When it starts"),
    tool("translate_text", "Translate text from one language into another.", text="Text", target_language="Language"),
    tool("get_stock_price", "Look up the latest market price of a stock by its ticker symbol.", symbol="Ticker"),
    tool("run_sql", "Execute a read-only query against the analytics warehouse.", sql="The statement"),
    tool("geocode_address", "Turn a street address into latitude and longitude.", address="Postal address"),
]


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder.default()


@pytest.fixture()
def index(embedder: Embedder) -> ToolSearchIndex:
    """A fresh index over CATALOG."""
    index = ToolSearchIndex(embedder)
    index.add_many(CATALOG)
    return index


def keys(hits: list) -> list[str]:
    return [hit.key for hit in hits]
