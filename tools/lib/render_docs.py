"""Write an outline as Markdown, DOCX (python-docx) or PDF (fpdf2).

An outline is ``{"title": str, "sections": [{"heading", "paragraphs",
"bullets", "table": {"columns", "rows"}}]}``, every part optional but the title.
"""

from __future__ import annotations

from pathlib import Path

MIME_TYPES = {
    "markdown": ("md", "text/markdown"),
    "docx": ("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    "pdf": ("pdf", "application/pdf"),
}


def write_document(outline: dict, fmt: str, path: Path) -> None:
    """Write ``outline`` to ``path`` in ``fmt`` (a key of MIME_TYPES). Raises KeyError for another format."""
    {"markdown": _markdown, "docx": _docx, "pdf": _pdf}[fmt](outline, path)


def _cells(row) -> list[str]:
    return ["" if value is None else str(value) for value in row]


def _rows(table: dict) -> list[list[str]]:
    """The table's rows as text, each padded or cut to the number of columns (a grid needs it)."""
    width = len(table["columns"])
    return [(_cells(row) + [""] * width)[:width] for row in table.get("rows", [])]


def _markdown(outline: dict, path: Path) -> None:
    lines = [f"# {outline['title']}", ""]
    for section in outline.get("sections", []):
        if section.get("heading"):
            lines += [f"## {section['heading']}", ""]
        for paragraph in section.get("paragraphs", []):
            lines += [paragraph, ""]
        if section.get("bullets"):
            lines += [f"- {bullet}" for bullet in section["bullets"]] + [""]
        table = section.get("table")
        if table and table.get("columns"):
            lines.append("| " + " | ".join(table["columns"]) + " |")
            lines.append("|" + "---|" * len(table["columns"]))
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _rows(table)]
            lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def _docx(outline: dict, path: Path) -> None:
    from docx import Document

    document = Document()
    document.core_properties.title = outline["title"]
    document.add_heading(outline["title"], level=0)
    for section in outline.get("sections", []):
        if section.get("heading"):
            document.add_heading(section["heading"], level=1)
        for paragraph in section.get("paragraphs", []):
            document.add_paragraph(paragraph)
        for bullet in section.get("bullets", []):
            document.add_paragraph(bullet, style="List Bullet")
        table = section.get("table")
        if table and table.get("columns"):
            grid = document.add_table(rows=1, cols=len(table["columns"]))
            grid.style = "Table Grid"
            for cell, name in zip(grid.rows[0].cells, table["columns"], strict=True):
                cell.text = str(name)
            for row in _rows(table):
                for cell, value in zip(grid.add_row().cells, row, strict=True):
                    cell.text = value
    document.save(str(path))


# The PDF core fonts are Latin-1; these common characters get their nearest
# Latin-1 spelling and anything else a "?", rather than failing the document.
_LATIN1 = str.maketrans(
    {
        "—": "-",
        "–": "-",
        "‘": "'",
        "’": "'",
        "“": '"',
        "”": '"',
        "…": "...",
        "•": "-",
        "→": "->",
        "←": "<-",
        "✓": "v",
        "✗": "x",
        "⚠": "!",
        "€": "EUR",
    }
)


def _latin1(text: str) -> str:
    return str(text).translate(_LATIN1).encode("latin-1", "replace").decode("latin-1")


def _pdf(outline: dict, path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(_latin1(outline["title"]))
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.multi_cell(0, 10, _latin1(outline["title"]), new_x="LMARGIN", new_y="NEXT")
    for section in outline.get("sections", []):
        if section.get("heading"):
            pdf.ln(3)
            pdf.set_font("Helvetica", "B", 14)
            pdf.multi_cell(0, 8, _latin1(section["heading"]), new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        for paragraph in section.get("paragraphs", []):
            pdf.multi_cell(0, 6, _latin1(paragraph), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        for bullet in section.get("bullets", []):
            pdf.multi_cell(0, 6, _latin1(f"- {bullet}"), new_x="LMARGIN", new_y="NEXT")
        table = section.get("table")
        if table and table.get("columns"):
            pdf.set_font("Helvetica", "", 9)
            with pdf.table() as grid:
                for row in [table["columns"], *_rows(table)]:
                    cells = grid.row()
                    for value in _cells(row):
                        cells.cell(_latin1(value))
            pdf.set_font("Helvetica", "", 11)
    pdf.output(str(path))
