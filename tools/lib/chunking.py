"""Split a document's text into passages sized for the embedding model's window."""

from __future__ import annotations

import re

# all-MiniLM-L6-v2 reads 256 word pieces (about 1,000 characters of English);
# a passage near that size is embedded whole and is still a readable citation.
TARGET_CHARS = 900
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def chunk_text(text: str, target: int = TARGET_CHARS) -> list[str]:
    """Passages of at most about ``target`` characters, cut at paragraph, then sentence bounds.

    Headings stay with the paragraph after them. Never returns an empty passage.
    """
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= target:
            pieces.append(paragraph)
        else:
            pieces.extend(_split_long(paragraph, target))
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 2 + len(piece) > target and not _is_heading(current):
            chunks.append(current)
            current = piece
        else:
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def _is_heading(text: str) -> bool:
    return text.startswith("#") and "\n" not in text


def _split_long(paragraph: str, target: int) -> list[str]:
    out: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > target:  # one endless "sentence": cut at a space near the limit
            cut = sentence.rfind(" ", 0, target)
            cut = cut if cut > target // 2 else target
            out.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > target:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        out.append(current)
    return [piece for piece in out if piece]
