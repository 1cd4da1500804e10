"""What a tool looks like to the search index: its key, name, description and schema.

`ToolDocument` is the only input the index takes; it turns a tool into the
weighted fields BM25 scores and the one passage the embedding model reads.
`query_passage` is the query's counterpart of that passage.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# Identifier boundaries: `createIssue` -> create|Issue, `HTTPServer` -> HTTP|Server,
# `get2fa` -> get|2fa. Separators (`_`, `-`, `.`, `/`, `:`) are handled by the word regex.
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[a-zA-Z])(?=[0-9])")
_WORD = re.compile(r"[A-Za-z0-9]+")
# A free-standing number: "45", "$1800" (the digits), "11:00", "2203.12277",
# "-5", "45%". Not a digit inside a word or a path: "GPT-4", "mp3", "2fa",
# "v1.2", "/root/2024.pdf" stay.
_NUMBER = re.compile(r"(?<![\w.\-/])[-+]?\d+(?:[.,:]\d+)*%?(?![\w\-/])")

# A schema can be arbitrarily deep or recursive in shape; tool search only needs
# the parameters a caller sees first, and a bound keeps one odd tool from
# dominating the lexical index.
_MAX_SCHEMA_DEPTH = 3
_MAX_PARAMETERS = 40

# Field weights for BM25 (term-frequency multipliers). A query word that names
# the tool is stronger evidence than one in running text. Parameter text counts
# like the description: on LiveMCPBench halving it cost 1.4 points of R@5.
NAME_WEIGHT = 3.0
DESCRIPTION_WEIGHT = 1.0
PARAMETER_NAME_WEIGHT = 1.0
PARAMETER_DESCRIPTION_WEIGHT = 1.0

# Every entry in the catalog is a tool, so "tool" in a name (`FinanceTool`,
# `build_custom_tool`) says nothing about what it does; in the embedded passage
# it only pulls all such tools together and towards any request that says
# "this tool". Measured (MetaTool, 39 of 199 names): R@5 79.8 -> 80.5, R@1
# 58.6 -> 59.1; LiveMCPBench has no such names and is unchanged. BM25 keeps
# the word: idf already discounts it, and passages (search_documents) share
# the tokenizer, where "tool" is a word like any other; so are their titles
# (`as_document` there passes no generic words).
GENERIC_NAME_WORDS = frozenset({"tool", "tools"})

#: How much of a tool's passage the encoders read, in MiniLM word pieces.
#: all-MiniLM-L6-v2 was trained on sequences of at most 128 (its model card);
#: past them a long tool description is usage detail (chunking advice,
#: parameter notes) that blurs the mean-pooled vector, and USE, which has no
#: window, read all of it. Both encoders read the same clipped passage
#: (`Embedder.embed(max_tokens=...)`); BM25 still indexes everything.
#: Measured: LiveMCPBench R@5 45.1 -> 47.1, nDCG@10 43.3 -> 44.0 (55 of 510
#: descriptions are longer); MetaTool unchanged (none is). Document passages
#: and entities (tools/lib/hybrid.py) are embedded whole, as before.
PASSAGE_TOKENS = 128


def split_identifier(identifier: str) -> list[str]:
    """Split a snake, kebab, dotted or camel-case identifier into lower-case words.

    `mcp_github_create_issue` -> ["mcp", "github", "create", "issue"];
    `createIssue` -> ["create", "issue"]. Never raises.
    """
    words: list[str] = []
    for chunk in _WORD.findall(identifier):
        words.extend(part.lower() for part in _CAMEL_BOUNDARY.split(chunk) if part)
    return words


@dataclass(frozen=True)
class Parameter:
    """One (possibly nested) input parameter: dotted path words and its description."""

    name: str
    description: str


@dataclass(frozen=True)
class ToolDocument:
    """A tool as the search index sees it.

    `key` is the caller's stable identifier (a ToolDefinition primary key or
    name); everything else is display text. `input_schema` is a JSON Schema
    object or None.
    """

    key: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] | None = field(default=None, compare=False)
    #: Name words left out of the embedded passage. A passage or an entity
    #: (tools/lib/hybrid.py) passes none: in a title, "tool" is a real word.
    generic_name_words: frozenset[str] = field(default=GENERIC_NAME_WORDS, compare=False)

    @property
    def name_words(self) -> list[str]:
        """The tool name split into words."""
        return split_identifier(self.name)

    @property
    def telling_name_words(self) -> list[str]:
        """The name words without generic ones like "tool", unless nothing else is left."""
        words = self.name_words
        return [w for w in words if w not in self.generic_name_words] or words

    def parameters(self) -> list[Parameter]:
        """Input parameters with descriptions, breadth-first, at most `_MAX_PARAMETERS`."""
        if not isinstance(self.input_schema, Mapping):
            return []
        return list(_walk_properties(self.input_schema, prefix="", depth=0))[:_MAX_PARAMETERS]

    def lexical_fields(self) -> list[tuple[str, float]]:
        """(text, weight) pairs for BM25: name words, description, parameters."""
        fields: list[tuple[str, float]] = [
            (" ".join(self.name_words), NAME_WEIGHT),
            (self.description, DESCRIPTION_WEIGHT),
        ]
        for parameter in self.parameters():
            fields.append((" ".join(split_identifier(parameter.name)), PARAMETER_NAME_WEIGHT))
            if parameter.description:
                fields.append((parameter.description, PARAMETER_DESCRIPTION_WEIGHT))
        return fields

    def embedding_text(self) -> str:
        """The passage the embedding models read for this tool: telling name words and description.

        Parameters are left to BM25: measured on MetaTool and LiveMCPBench,
        adding them to the passage lowered dense recall (they crowd the
        description out of the window the encoders read, `PASSAGE_TOKENS`,
        and pull every tool that takes a `path` or `query` towards each other).
        """
        return f"{' '.join(self.telling_name_words)}: {' '.join(self.description.split())}"


def query_passage(query: str) -> str:
    """The text the embedding models read for a search query: the query without its numbers.

    A request's quantities, dates and identifiers ("top 100 addresses", "at
    11:00", "arxiv 2203.12277") are the values a tool will be called with, not
    what it does; both encoders are sensitive to them (the USE port documents
    a cosine of 0.6-0.8 between sentences differing only in a number).
    Measured: LiveMCPBench R@1 16.6 -> 17.6 and nDCG@10 44.0 -> 44.6 (R@5
    47.1 either way); MetaTool unchanged (R@5 80.5). A query of numbers
    alone is kept as it is.
    """
    return " ".join(_NUMBER.sub(" ", query).split()) or query


def _walk_properties(schema: Mapping[str, Any], prefix: str, depth: int) -> Iterator[Parameter]:
    """Yield the properties of an object schema, descending into objects and arrays."""
    if depth >= _MAX_SCHEMA_DEPTH:
        return
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    nested: list[tuple[str, Mapping[str, Any]]] = []
    for name, spec in properties.items():
        path = f"{prefix}.{name}" if prefix else str(name)
        if not isinstance(spec, Mapping):
            yield Parameter(path, "")
            continue
        description = spec.get("description")
        yield Parameter(path, description.strip() if isinstance(description, str) else "")
        items = spec.get("items")
        child = items if isinstance(items, Mapping) else spec
        nested.append((path, child))
    for path, child in nested:
        yield from _walk_properties(child, path, depth + 1)
