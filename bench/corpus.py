"""The benchmark's default corpus: one or more documents of every supported format, generated.

The documents are the bench's own (larger, seeded text); the building blocks they share with the
test generators (deterministic zips, EPUB packaging, data: URIs, pandoc, e-mail headers) come from
tests/docgen.py. Everything is deterministic (fixed seed, fixed dates, reportlab's invariant mode),
so two bench runs decode the same bytes. reportlab and xlwt are dev dependencies (`make setup`
installs them); pandoc (a Debian package of `make setup`) writes RTF and ODT.

The large PDF (default 300 pages of text paragraphs, a picture every 10th page) is both most of
the corpus's pages and "the large PDF" whose peak memory the benchmark measures on its own.
"""

from __future__ import annotations

import io
import os
import random
import textwrap
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.docgen import (
    data_uri,
    email_message,
    epub_nav,
    epub_opf,
    epub_zip,
    fixed_boundaries,
    ooxml_bytes,
    pandoc,
    xhtml,
)

LARGE_PDF = "large.pdf"
UPLOAD_FILE = "report.pdf"  # the "new upload" of the sensor-path measurement
WARMUP_FILE = "warmup.pdf"  # written beside the corpus, never part of it
DEFAULT_LARGE_PDF_PAGES = 300
IMAGE_EVERY = 10  # a picture on every 10th page of the large PDF
SEED = 20240101

PAGE_SIZE = (612.0, 792.0)  # US letter, points
_VOCABULARY = (
    "the report shows that revenue grew in every region while costs fell slightly as the team "
    "delivered new products to customers across markets and the board approved a plan to expand "
    "operations hire engineers improve quality reduce waste measure results review risks and "
    "invest in research data systems training safety logistics supply chain partners"
)
_WORDS = _VOCABULARY.split()


@dataclass(frozen=True)
class FileSpec:
    """One document of the generated corpus."""

    name: str
    format: str  # the README's name of the format
    pages: int = 0  # PDF pages (0 for formats without pages)


def plan(large_pdf_pages: int = DEFAULT_LARGE_PDF_PAGES) -> list[FileSpec]:
    """The files `generate` writes, in order (pure: the tests count them)."""
    if large_pdf_pages < 1:
        raise ValueError("the large PDF needs at least one page")
    return [
        FileSpec(LARGE_PDF, "PDF", large_pdf_pages),
        FileSpec(UPLOAD_FILE, "PDF", 5),
        FileSpec("handbook.docx", "DOCX"),
        FileSpec("deck.pptx", "PPTX"),
        FileSpec("sales.xlsx", "XLSX"),
        FileSpec("legacy.xls", "XLS"),
        FileSpec("page.html", "HTML"),
        FileSpec("notes.md", "Markdown"),
        FileSpec("readme.txt", "TXT"),
        FileSpec("cities.csv", "CSV"),
        FileSpec("people.tsv", "TSV"),
        FileSpec("guide.rst", "RST"),
        FileSpec("letter.rtf", "RTF"),
        FileSpec("minutes.odt", "ODT"),
        FileSpec("book.epub", "EPUB"),
        FileSpec("message.eml", "EML"),
    ]


def summary(specs: list[FileSpec]) -> dict:
    """Counts for the report: files, formats, PDF pages."""
    formats = sorted({s.format for s in specs})
    return {
        "files": len(specs),
        "formats": formats,
        "format_count": len(formats),
        "pdf_files": sum(1 for s in specs if s.format == "PDF"),
        "pdf_pages": sum(s.pages for s in specs if s.format == "PDF"),
    }


def generate(folder: str | os.PathLike, large_pdf_pages: int = DEFAULT_LARGE_PDF_PAGES) -> list[dict]:
    """Write the corpus into folder (created if needed); returns one dict per file (name, format, pages, bytes)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    makers = {
        LARGE_PDF: lambda: pdf_document(large_pdf_pages, "Annual Review", image_every=IMAGE_EVERY),
        UPLOAD_FILE: lambda: pdf_document(5, "Quarterly Report", image_every=2),
        "handbook.docx": docx,
        "deck.pptx": pptx,
        "sales.xlsx": xlsx,
        "legacy.xls": xls,
        "page.html": html,
        "notes.md": markdown,
        "readme.txt": text,
        "cities.csv": csv,
        "people.tsv": tsv,
        "guide.rst": rst,
        "letter.rtf": lambda: pandoc(markdown().decode(), "rtf"),
        "minutes.odt": lambda: pandoc(markdown().decode(), "odt"),
        "book.epub": epub,
        "message.eml": eml,
    }
    out = []
    for spec in plan(large_pdf_pages):
        data = makers[spec.name]()
        (folder / spec.name).write_bytes(data)
        out.append({**asdict(spec), "bytes": len(data)})
    return out


SMALL_CORPUS_SIZE = 200


def small_plan(count: int = SMALL_CORPUS_SIZE) -> list[tuple[FileSpec, Callable[[], bytes]]]:
    """Many small ordinary documents: every supported format in turn, 1-3 pages or screens each.

    A library is mostly such documents, so the graph's fixed cost per document shows here, where
    one large PDF would hide it. Each document has its own seed (no two alike) and a size drawn
    from the same seeded generator; the whole corpus is deterministic."""
    rng = random.Random(SEED + count)
    kinds: list[tuple[str, str, Callable[[int, int], bytes]]] = [
        ("pdf", "PDF", lambda n, seed: pdf_document(n, "Memo", image_every=2 if n > 1 else 0, seed=seed)),
        ("docx", "DOCX", lambda n, seed: docx(chapters=n, seed=seed)),
        ("pptx", "PPTX", lambda n, seed: pptx(slides=n + 1, seed=seed)),
        ("xlsx", "XLSX", lambda n, seed: xlsx(sheets=n, rows=15, seed=seed)),
        ("xls", "XLS", lambda n, seed: xls(sheets=n, rows=15, seed=seed)),
        ("html", "HTML", lambda n, seed: html(sections=n, seed=seed)),
        ("md", "Markdown", lambda n, seed: markdown(sections=n, seed=seed)),
        ("txt", "TXT", lambda n, seed: text(paragraph_count=3 * n, seed=seed)),
        ("csv", "CSV", lambda n, seed: csv(rows=20 * n, seed=seed)),
        ("tsv", "TSV", lambda n, seed: tsv(rows=20 * n, seed=seed)),
        ("rst", "RST", lambda n, seed: rst(sections=n, seed=seed)),
        ("rtf", "RTF", lambda n, seed: pandoc(markdown(sections=n, seed=seed).decode(), "rtf")),
        ("odt", "ODT", lambda n, seed: pandoc(markdown(sections=n, seed=seed).decode(), "odt")),
        ("epub", "EPUB", lambda n, seed: epub(chapters=n, seed=seed)),
        ("eml", "EML", lambda n, seed: eml(seed=seed)),
    ]
    out: list[tuple[FileSpec, Callable[[], bytes]]] = []
    for index in range(count):
        extension, fmt, make = kinds[index % len(kinds)]
        size, seed = rng.randint(1, 3), SEED + 1000 * (index + 1)
        spec = FileSpec(f"small-{index:04d}.{extension}", fmt, size if fmt == "PDF" else 0)
        out.append((spec, lambda make=make, size=size, seed=seed: make(size, seed)))
    return out


def generate_small(folder: str | os.PathLike, count: int = SMALL_CORPUS_SIZE) -> list[dict]:
    """Write the small-documents corpus into folder; one dict per file, as `generate`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for spec, make in small_plan(count):
        data = make()
        (folder / spec.name).write_bytes(data)
        out.append({**asdict(spec), "bytes": len(data)})
    return out


def write_warmup(folder: str | os.PathLike) -> Path:
    """A one-page PDF for the warm-up call, outside the corpus."""
    path = Path(folder) / WARMUP_FILE
    path.write_bytes(pdf_document(1, "Warm-up", image_every=0))
    return path


# -- text ------------------------------------------------------------------------------------


def sentences(rng: random.Random, count: int) -> str:
    out = []
    for _ in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 18))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def paragraphs(seed: int, count: int, per: int = 4) -> list[str]:
    rng = random.Random(seed)
    return [sentences(rng, per) for _ in range(count)]


# -- images ----------------------------------------------------------------------------------


def picture(width: int, height: int, seed: int, fmt: str = "PNG") -> bytes:
    """A gradient picture (not one flat colour: compresses like a real chart or photo would)."""
    from PIL import Image

    rng = random.Random(seed)
    r0, g0, b0 = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    image = Image.new("RGB", (width, height))
    image.putdata([((r0 + x) % 256, (g0 + y) % 256, (b0 + x + y) % 256) for y in range(height) for x in range(width)])
    out = io.BytesIO()
    image.save(out, format=fmt, **({"quality": 85} if fmt == "JPEG" else {}))
    return out.getvalue()


# -- PDF -------------------------------------------------------------------------------------


def pdf_document(pages: int, title: str, image_every: int = IMAGE_EVERY, seed: int = SEED) -> bytes:
    """Pages of a heading and wrapped paragraphs; a picture on every image_every-th page (0 = none)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen.canvas import Canvas

    out = io.BytesIO()
    canvas = Canvas(out, pagesize=PAGE_SIZE, invariant=1)
    width, height = PAGE_SIZE
    for number in range(1, pages + 1):
        y = height - 72
        canvas.setFont("Helvetica-Bold", 16)
        canvas.drawString(72, y, f"{title}: chapter {number}")
        y -= 30
        with_image = image_every and number % image_every == 0
        if with_image:
            data = picture(160, 120, seed + number, "JPEG" if number % (2 * image_every) else "PNG")
            canvas.drawImage(ImageReader(io.BytesIO(data)), 72, y - 120, 160, 120)
            y -= 140
        canvas.setFont("Helvetica", 10)
        for paragraph in paragraphs(seed * 7 + number, 6 if not with_image else 4):
            for line in textwrap.wrap(paragraph, 95):
                if y < 72:
                    break
                canvas.drawString(72, y, line)
                y -= 13
            y -= 8
        canvas.setFont("Helvetica", 8)
        canvas.drawString(width / 2 - 10, 40, str(number))
        canvas.showPage()
    canvas.save()
    return out.getvalue()


# -- Office ----------------------------------------------------------------------------------


def docx(chapters: int = 12, seed: int = SEED) -> bytes:
    """Headings (two levels), paragraphs, a table per chapter and a picture every 4th chapter."""
    import datetime

    import docx as python_docx
    from docx.shared import Inches

    document = python_docx.Document()
    document.core_properties.created = document.core_properties.modified = datetime.datetime(2024, 1, 1)
    for chapter in range(1, chapters + 1):
        document.add_heading(f"Chapter {chapter}", level=1)
        for index, text in enumerate(paragraphs(seed + chapter, 3)):
            if index == 1:
                document.add_heading(f"Details {chapter}.{index}", level=2)
            document.add_paragraph(text)
        table = document.add_table(rows=4, cols=3)
        for r in range(4):
            for c in range(3):
                table.cell(r, c).text = ("Item", "Count", "Weight")[c] if r == 0 else f"{chapter}-{r}-{c}"
        if chapter % 4 == 0:
            document.add_picture(io.BytesIO(picture(96, 72, chapter)), width=Inches(1.5))
    return ooxml_bytes(document)


def pptx(slides: int = 10, seed: int = SEED) -> bytes:
    """Title-and-content slides; every 3rd slide also holds a picture."""
    import datetime

    import pptx as python_pptx
    from pptx.util import Inches

    deck = python_pptx.Presentation()
    deck.core_properties.created = deck.core_properties.modified = datetime.datetime(2024, 1, 1)
    deck.core_properties.revision = 1
    for number in range(1, slides + 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {number}"
        body = slide.placeholders[1].text_frame
        body.text = sentences(random.Random(seed + number), 1)
        for line in paragraphs(seed + 100 + number, 2, per=1):
            body.add_paragraph().text = line
        if number % 3 == 0:
            slide.shapes.add_picture(
                io.BytesIO(picture(80, 60, number, "JPEG")), Inches(6), Inches(5), Inches(2), Inches(1.5)
            )
    return ooxml_bytes(deck)


def xlsx(sheets: int = 3, rows: int = 60, seed: int = SEED) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    rng = random.Random(seed)
    for index in range(sheets):
        sheet = book.active if index == 0 else book.create_sheet()
        sheet.title = f"Region{index + 1}"
        sheet.append(["Month", "Product", "Units", "Revenue"])
        for row in range(rows):
            sheet.append([f"M{row % 12 + 1}", rng.choice(_WORDS), rng.randint(1, 500), round(rng.uniform(10, 9000), 2)])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def xls(sheets: int = 2, rows: int = 40, seed: int = SEED) -> bytes:
    import xlwt

    book = xlwt.Workbook()
    rng = random.Random(seed + 1)
    for index in range(sheets):
        sheet = book.add_sheet(f"Sheet{index + 1}")
        for col, name in enumerate(("Region", "Sales", "Share")):
            sheet.write(0, col, name)
        for row in range(1, rows + 1):
            sheet.write(row, 0, rng.choice(_WORDS))
            sheet.write(row, 1, rng.randint(1, 1000))
            sheet.write(row, 2, round(rng.random(), 3))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# -- markup and text -------------------------------------------------------------------------


def html(sections: int = 8, seed: int = SEED) -> bytes:
    parts = ['<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Handbook</title></head><body>\n']
    for number in range(1, sections + 1):
        parts.append(f"<h2>Section {number}</h2>\n")
        parts.extend(f"<p>{p}</p>\n" for p in paragraphs(seed + 200 + number, 3))
        if number % 3 == 0:
            parts.append(f'<img src="{data_uri(picture(40, 30, number))}" alt="figure {number}">\n')
        if number % 2 == 0:
            parts.append(
                "<table><tr><th>Key</th><th>Value</th></tr>"
                + "".join(f"<tr><td>k{i}</td><td>{i * number}</td></tr>" for i in range(5))
                + "</table>\n"
            )
    parts.append("</body></html>\n")
    return "".join(parts).encode("utf-8")


def markdown(sections: int = 8, seed: int = SEED) -> bytes:
    parts = ["# Annual Report\n\n"]
    for number in range(1, sections + 1):
        parts.append(f"## Part {number}\n\n")
        parts.extend(f"{p}\n\n" for p in paragraphs(seed + 300 + number, 3))
        if number % 2 == 0:
            parts.append(
                "| Quarter | Revenue |\n|---------|---------|\n"
                + "".join(f"| Q{q} | {q * number * 10} |\n" for q in range(1, 5))
                + "\n"
            )
        if number % 3 == 0:
            parts.append("- Expand to new markets\n- Hire more engineers\n- Reduce waste\n\n")
    return "".join(parts).encode("utf-8")


def text(paragraph_count: int = 40, seed: int = SEED) -> bytes:
    return "\n\n".join(paragraphs(seed + 400, paragraph_count)).encode("utf-8") + b"\n"


def csv(rows: int = 300, seed: int = SEED) -> bytes:
    return _lines(
        seed + 500,
        "name,city,amount",
        rows,
        lambda rng: f"{rng.choice(_WORDS)},{rng.choice(_WORDS).title()},{rng.randint(1, 999)}",
    )


def tsv(rows: int = 200, seed: int = SEED) -> bytes:
    return _lines(
        seed + 600,
        "name\tteam\tscore",
        rows,
        lambda rng: f"{rng.choice(_WORDS)}\t{rng.choice(_WORDS)}\t{rng.randint(1, 99)}",
    )


def _lines(seed: int, header: str, rows: int, row: Callable[[random.Random], str]) -> bytes:
    """A header and rows drawn from one seeded generator, one a line."""
    rng = random.Random(seed)
    return ("\n".join([header] + [row(rng) for _ in range(rows)]) + "\n").encode("utf-8")


def rst(sections: int = 8, seed: int = SEED) -> bytes:
    parts = ["Annual Guide\n============\n\n"]
    for number in range(1, sections + 1):
        title = f"Topic {number}"
        parts.append(f"{title}\n{'-' * len(title)}\n\n")
        parts.extend(f"{p}\n\n" for p in paragraphs(seed + 700 + number, 3))
    return "".join(parts).encode("utf-8")


# -- EPUB, e-mail ----------------------------------------------------------------------------


def epub(chapters: int = 6, seed: int = SEED) -> bytes:
    """A hand-written EPUB 3 with chapters of paragraphs and two pictures."""
    images = {"OEBPS/images/figure.png": picture(60, 40, 1), "OEBPS/images/photo.jpg": picture(80, 60, 2, "JPEG")}
    chapter_files = {}
    for number in range(1, chapters + 1):
        body = f"<h1>Chapter {number}</h1>" + "".join(f"<p>{p}</p>" for p in paragraphs(seed + 800 + number, 4))
        if number == 1:
            body += '<img src="../images/photo.jpg" alt="photo"/>'
        if number == 2:
            body += '<img src="../images/figure.png" alt="figure"/>'
        chapter_files[f"OEBPS/text/ch{number}.xhtml"] = xhtml(f"Chapter {number}", body)
    numbers = range(1, chapters + 1)
    manifest = (
        '<item id="png" href="images/figure.png" media-type="image/png"/>'
        '<item id="jpg" href="images/photo.jpg" media-type="image/jpeg"/>'
        '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        + "".join(f'<item id="ch{n}" href="text/ch{n}.xhtml" media-type="application/xhtml+xml"/>' for n in numbers)
    )
    opf = epub_opf("urn:uuid:00000000-0000-4000-8000-000000000001", "Bench Book", manifest, [f"ch{n}" for n in numbers])
    nav = epub_nav([(f"text/ch{n}.xhtml", f"Chapter {n}") for n in numbers])
    return epub_zip({"OEBPS/content.opf": opf, "OEBPS/nav.xhtml": nav, **chapter_files}, images)


def eml(seed: int = SEED) -> bytes:
    """A text body of a few paragraphs, a PNG attachment and a text attachment."""
    message = email_message("Quarterly figures", "<bench-1@example.com>")
    message.set_content("Hello team,\n\n" + "\n\n".join(paragraphs(seed + 900, 4)) + "\n\nRegards,\nAda\n")
    message.add_attachment(picture(48, 32, 9), maintype="image", subtype="png", filename="chart.png")
    message.add_attachment("\n\n".join(paragraphs(seed + 901, 2)) + "\n", subtype="plain", filename="notes.txt")
    return fixed_boundaries(message).as_bytes()
