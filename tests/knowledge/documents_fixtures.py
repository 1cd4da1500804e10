"""Small real PDF, DOCX and HTML documents, made with the libraries the tools use."""

import io

HTML = (
    "<html><head><title>Solar farm report</title><style>p{color:red}</style><script>var x=1;</script></head>"
    "<body><nav>Home | About</nav><h1>Solar output</h1><p>The Lyon solar farm produced 4.2 GWh in 2025.</p>"
    "<ul><li>Panels: 12,000</li><li>Operator: Helios SA</li></ul></body></html>"
)


def pdf_bytes(*paragraphs: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "", 12)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 8, paragraph, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def docx_bytes(heading: str, *paragraphs: str) -> bytes:
    from docx import Document

    document = Document()
    document.add_heading(heading, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
