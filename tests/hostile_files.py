"""Hostile files made on the fly: archive bombs (xlsx, docx, Parquet, PDF) and wide tables.

Shared by the tests and bench/abuse.py. Each is small on the wire and huge
(or slow) once a naive reader opens it; writing one streams its padding, so
making a 400 MB bomb costs no 400 MB here.
"""

from __future__ import annotations

import io
import os
import zipfile
import zlib

_MB = 1 << 20


def _office(kind: str) -> bytes:
    """A small valid workbook (``xlsx``) or document (``docx``)."""
    buffer = io.BytesIO()
    if kind == "xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        book.active.append(["a", "b"])
        book.active.append([1, 2])
        book.save(buffer)
    else:
        from docx import Document

        document = Document()
        document.add_paragraph("A short document.")
        document.save(buffer)
    return buffer.getvalue()


PARTS = {"xlsx": "xl/worksheets/sheet1.xml", "docx": "word/document.xml"}


def office_bomb(
    kind: str, padding: int, *, extra_members: int = 0, noise: int = 0, method: int = zipfile.ZIP_DEFLATED
) -> bytes:
    """A valid ``kind`` file whose main part carries ``padding`` bytes of whitespace after its
    XML declaration (legal XML, a thousandfold compression), plus ``extra_members`` empty
    members and a member of ``noise`` random (incompressible) bytes; the main part is
    compressed with ``method``."""
    source = zipfile.ZipFile(io.BytesIO(_office(kind)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename != PARTS[kind]:
                out.writestr(item.filename, data)
                continue
            # Whitespace may follow the XML declaration, or begin a document without one.
            head, mark, rest = data.partition(b"?>") if data.startswith(b"<?xml") else (b"", b"", data)
            info = zipfile.ZipInfo(item.filename)
            info.compress_type = method
            with out.open(info, "w", force_zip64=True) as part:
                part.write(head + mark)
                _pad(part, padding)
                part.write(rest)
        for n in range(extra_members):
            out.writestr(f"customXml/item{n}.xml", b"")
        if noise:
            out.writestr(zipfile.ZipInfo("docProps/noise.bin"), os.urandom(noise))
    return buffer.getvalue()


def _pad(part: io.BufferedIOBase, size: int) -> None:
    block = b" " * min(size, _MB)
    while size > 0:
        part.write(block[:size])
        size -= len(block)


def bz2_office(kind: str) -> bytes:
    """A ``kind`` file whose main part is bzip2-compressed (zipfile inflates those unbounded)."""
    source = zipfile.ZipFile(io.BytesIO(_office(kind)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for item in source.infolist():
            method = zipfile.ZIP_BZIP2 if item.filename == PARTS[kind] else zipfile.ZIP_DEFLATED
            out.writestr(item.filename, source.read(item.filename), compress_type=method)
    return buffer.getvalue()


def parquet_dictionary_bomb(rows: int, value_bytes: int) -> bytes:
    """A Parquet file of one text column: one ``value_bytes`` value repeated ``rows`` times.
    Dictionary encoding stores the value once, so kilobytes decode to rows × value_bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"s": pa.array(["x" * value_bytes]).take([0] * rows)}), buffer)
    return buffer.getvalue()


def pdf_stream_bomb(size: int) -> bytes:
    """A one-page PDF whose content stream (whitespace, FlateDecode) inflates to ``size`` bytes."""
    compressor = zlib.compressobj(9)
    block = b" " * _MB
    stream = b"".join(compressor.compress(block[: min(_MB, size - n)]) for n in range(0, size, _MB))
    stream += compressor.flush()
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 100 100]/Contents 4 0 R/Resources<<>>>>",
        b"<</Length %d/Filter/FlateDecode>>stream\n" % len(stream) + stream + b"\nendstream",
    ]
    body, offsets = b"%PDF-1.4\n", []
    for number, content in enumerate(objects, 1):
        offsets.append(len(body))
        body += b"%d 0 obj\n" % number + content + b"\nendobj\n"
    xref = b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    xref += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return body + xref + b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, len(body))


def csv_table(rows: int, columns: int, sep: str = ",") -> bytes:
    """A header of ``columns`` names and ``rows`` lines of ones."""
    header = sep.join(f"c{n}" for n in range(columns))
    line = sep.join("1" for _ in range(columns))
    return ("\n".join([header, *[line] * rows]) + "\n").encode()
