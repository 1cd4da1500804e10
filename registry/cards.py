"""The card types: what a tool result can show the user beside its text.

A card is a JSON object with a ``type``; tools, the MCP client, citations and
approvals make them, and the chat page (static/eunice/chat.js) draws them.
This is the one list of types. tests/web/test_card_types.py holds the server
and the page to it both ways: every type either names is listed here, and
every type listed here is drawn the way ``DRAWN_AS`` says.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType


class CardType(StrEnum):
    FILE_DOWNLOAD = "file_download"  # a button to a generated file
    TABLE = "table"  # rows of a dataset (present_rows)
    CHART = "chart"  # a Vega-Lite spec (create_chart)
    MAP_DISPLAY = "map_display"  # GeoJSON layers on a map (display_map), merged by display_id
    DOCUMENT_PASSAGES = "document_passages"  # what search_documents found; becomes a cited_answer
    CITED_ANSWER = "cited_answer"  # the response's claims linked to the passages they cite
    CLASSIFICATION_RESULT = "classification_result"  # a document's labels with their cited passages
    EXTRACTION_RESULT = "extraction_result"  # fields extracted from a document, each with its passages
    APPROVAL = "approval"  # a call waiting for a person's approval
    MCP_STRUCTURED = "mcp_structured"  # an MCP tool's structured content
    RESOURCE = "resource"  # an MCP tool's binary resource
    IMAGE = "image"  # an MCP tool's image content
    AUDIO = "audio"  # an MCP tool's audio content
    TRAINING_RESULTS = "training_results"  # a trained model's cross-validated figures (train_model)
    MODEL_RECOMMENDATION = "model_recommendation"  # the algorithms compared, and the one kept
    SHAP_EXPLANATION = "shap_explanation"  # each column's contribution to a prediction (explain_prediction)


class Drawing(StrEnum):
    OWN = "own"  # renderCard has a branch of its own for the type
    ROWS = "rows"  # drawn as a table from the card's columns and rows
    APPROVAL = "approval"  # drawn in the thread with its buttons, not in the panel
    DATA = "data"  # shown as the card's JSON


DRAWN_AS: Mapping[CardType, Drawing] = MappingProxyType(
    {
        CardType.FILE_DOWNLOAD: Drawing.OWN,
        CardType.TABLE: Drawing.ROWS,
        CardType.CHART: Drawing.OWN,
        CardType.MAP_DISPLAY: Drawing.OWN,
        CardType.DOCUMENT_PASSAGES: Drawing.DATA,
        CardType.CITED_ANSWER: Drawing.OWN,
        CardType.CLASSIFICATION_RESULT: Drawing.OWN,
        CardType.EXTRACTION_RESULT: Drawing.OWN,
        CardType.APPROVAL: Drawing.APPROVAL,
        CardType.MCP_STRUCTURED: Drawing.DATA,
        CardType.RESOURCE: Drawing.DATA,
        CardType.IMAGE: Drawing.DATA,
        CardType.AUDIO: Drawing.DATA,
        CardType.TRAINING_RESULTS: Drawing.OWN,
        CardType.MODEL_RECOMMENDATION: Drawing.OWN,
        CardType.SHAP_EXPLANATION: Drawing.OWN,
    }
)

# Drawn under the message that made them as well as in the side panel.
INLINE: frozenset[CardType] = frozenset({CardType.FILE_DOWNLOAD, CardType.CHART})

if set(DRAWN_AS) != set(CardType):
    raise KeyError(f"card types without a drawing: {sorted(set(CardType) - set(DRAWN_AS))}")
