"""Text out of a document's bytes: plain text, Markdown, HTML, PDF and DOCX."""

from __future__ import annotations

from pathlib import PurePath

from eunice.bounded_read import InputTooLarge, open_docx, pdf_page_texts
from tools.lib.html_text import html_to_text

FORMATS = ("text", "markdown", "html", "pdf", "docx")

_BY_EXTENSION = {
    ".txt": "text",
    ".text": "text",
    ".csv": "text",
    ".log": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
_BY_MIME = {
    "text/plain": "text",
    "text/csv": "text",
    "text/markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
}


class UnsupportedFormat(ValueError):
    """The document is not one of FORMATS."""


class UnreadableDocument(ValueError):
    """The bytes do not parse as the format they claim (a corrupt PDF, say)."""


class RefusedDocument(UnreadableDocument):
    """The document is past an input limit (eunice.bounded_read); the message names it."""


def detect_format(name: str = "", mime_type: str = "", data: bytes = b"") -> str:
    """The format of a document from its name, MIME type or first bytes. Raises UnsupportedFormat."""
    by_name = _BY_EXTENSION.get(PurePath(name).suffix.lower()) if name else None
    by_mime = _BY_MIME.get(mime_type.split(";")[0].strip().lower()) if mime_type else None
    found = by_name or by_mime or _sniff(data)
    if found is None:
        raise UnsupportedFormat(
            f"cannot tell the format of {name or mime_type or 'the document'!r}; supported: {', '.join(FORMATS)}"
        )
    return found


def _sniff(data: bytes) -> str | None:
    head = data[:512].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "pdf"
    if head.startswith(b"pk\x03\x04"):
        return "docx"
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "text"


def extract_text(data: bytes, fmt: str) -> tuple[str, str]:
    """``(title, text)`` of a document; title may be "". Raises UnsupportedFormat, UnreadableDocument."""
    if fmt in ("text", "markdown"):
        return _markdown_title(data.decode("utf-8", errors="replace")) if fmt == "markdown" else ("", _decode(data))
    if fmt == "html":
        return html_to_text(_decode(data))
    if fmt == "pdf":
        return "", _pdf_text(data)
    if fmt == "docx":
        return "", _docx_text(data)
    raise UnsupportedFormat(f"unsupported format {fmt!r}; supported: {', '.join(FORMATS)}")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _markdown_title(text: str) -> tuple[str, str]:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip(), text
        if line.strip():
            break
    return "", text


def _pdf_text(data: bytes) -> str:
    from pypdf.errors import PyPdfError

    try:
        pages = pdf_page_texts(data)
    except InputTooLarge as error:
        raise RefusedDocument(f"the PDF is refused: {error}") from None
    except (PyPdfError, ValueError, KeyError, OSError) as error:
        raise UnreadableDocument(f"the PDF cannot be read ({type(error).__name__})") from error
    return "\n\n".join(page.strip() for page in pages if page.strip())


def _docx_text(data: bytes) -> str:
    import zipfile

    try:
        document = open_docx(data)
    except InputTooLarge as error:
        raise RefusedDocument(f"the DOCX is refused: {error}") from None
    except (zipfile.BadZipFile, KeyError, ValueError, SyntaxError) as error:  # SyntaxError: lxml's XMLSyntaxError
        raise UnreadableDocument(f"the DOCX cannot be read ({type(error).__name__})") from error
    blocks = []
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        style = (paragraph.style.name or "") if paragraph.style is not None else ""
        level = style.removeprefix("Heading ").strip()
        blocks.append(f"{'#' * int(level)} {text}" if style.startswith("Heading ") and level.isdigit() else text)
    for table in document.tables:
        for row in table.rows:
            blocks.append(" | ".join(cell.text.strip() for cell in row.cells))
    return "\n\n".join(blocks)
