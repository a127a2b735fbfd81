"""Small deterministic test documents, built in memory and returned as bytes.

Every generator gives the same bytes on every call (fixed dates, ids and compression), so tests
can compare against them and content hashes stay stable. The positions and images the documents
contain are exposed as constants for the tests that check them.
"""

from __future__ import annotations

import base64
import io
import zipfile
from dataclasses import dataclass
from email.message import EmailMessage

# -- images ----------------------------------------------------------------------------------


def png(width: int = 40, height: int = 30, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """An RGB PNG of one color with a 1-px black top-left corner, so orientation is testable."""
    from PIL import Image

    image = Image.new("RGB", (width, height), color)
    image.putpixel((0, 0), (0, 0, 0))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def jpeg(width: int = 40, height: int = 30, color: tuple[int, int, int] = (30, 90, 200), quality: int = 90) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="JPEG", quality=quality)
    return out.getvalue()


def gif(width: int = 8, height: int = 8, color: tuple[int, int, int] = (0, 160, 0)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="GIF")
    return out.getvalue()


# -- PDF -------------------------------------------------------------------------------------

PDF_PAGE_SIZE = (612.0, 792.0)  # US letter, points
PDF_HEADING = "Quarterly Report"
PDF_PARAGRAPH = "Revenue grew steadily across all regions during the quarter."
PDF_PAGE2_HEADING = "Appendix"
PDF_PAGE2_PARAGRAPH = "The appendix holds one more figure."
# Where the generator draws things, as (x0, top, x1, bottom) from the page's TOP-LEFT corner.
PDF_HEADING_BASELINE = (72.0, 72.0)  # x, distance of the baseline from the top
PDF_JPEG_BOX = (72.0, 150.0, 216.0, 258.0)  # page 1
PDF_PNG_BOX = (300.0, 400.0, 400.0, 475.0)  # page 1, drawn before the JPEG in the content stream
PDF_PNG2_BOX = (100.0, 200.0, 180.0, 260.0)  # page 2


def pdf_jpeg() -> bytes:
    return jpeg(160, 120, (30, 90, 200))


def pdf_png() -> bytes:
    return png(64, 48, (200, 30, 30))


def pdf_png2() -> bytes:
    return png(32, 24, (20, 160, 20))


def _draw(canvas, data: bytes, box: tuple[float, float, float, float]) -> None:
    """Draw image bytes into a box given from the top-left corner (reportlab is bottom-up)."""
    from reportlab.lib.utils import ImageReader

    x0, top, x1, bottom = box
    canvas.drawImage(ImageReader(io.BytesIO(data)), x0, PDF_PAGE_SIZE[1] - bottom, x1 - x0, bottom - top)


def pdf_with_text_and_image() -> bytes:
    """Two pages: heading, paragraph, a PNG and a JPEG on page 1; heading, paragraph, a PNG on page 2."""
    from reportlab.pdfgen.canvas import Canvas

    out = io.BytesIO()
    canvas = Canvas(out, pagesize=PDF_PAGE_SIZE, invariant=1)
    height = PDF_PAGE_SIZE[1]
    canvas.setFont("Helvetica-Bold", 20)
    canvas.drawString(PDF_HEADING_BASELINE[0], height - PDF_HEADING_BASELINE[1], PDF_HEADING)
    canvas.setFont("Helvetica", 11)
    canvas.drawString(72, height - 110, PDF_PARAGRAPH)
    # The lower image first: extraction must still return them top to bottom.
    _draw(canvas, pdf_png(), PDF_PNG_BOX)
    _draw(canvas, pdf_jpeg(), PDF_JPEG_BOX)
    canvas.showPage()
    canvas.setFont("Helvetica-Bold", 20)
    canvas.drawString(72, height - 72, PDF_PAGE2_HEADING)
    canvas.setFont("Helvetica", 11)
    canvas.drawString(72, height - 110, PDF_PAGE2_PARAGRAPH)
    _draw(canvas, pdf_png2(), PDF_PNG2_BOX)
    canvas.showPage()
    canvas.save()
    return out.getvalue()


PDF_FORM_OFFSET = (200.0, -300.0)  # the form is drawn translated by this (reportlab, bottom-up)
PDF_FORM_IMAGE_BOX = (250.0, 400.0, 330.0, 460.0)  # where the form's JPEG lands, from the top-left


def pdf_with_form_image() -> bytes:
    """One page whose only image is inside a form XObject drawn with a translation."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen.canvas import Canvas

    out = io.BytesIO()
    canvas = Canvas(out, pagesize=PDF_PAGE_SIZE, invariant=1)
    canvas.drawString(72, 720, "A page with a form XObject.")
    canvas.beginForm("logo")
    # In form space: x=50, y=632 (bottom-up); translated by (200, -300) -> x=250, y=332..392.
    canvas.drawImage(ImageReader(io.BytesIO(pdf_jpeg())), 50, 632, 80, 60)
    canvas.endForm()
    canvas.saveState()
    canvas.translate(*PDF_FORM_OFFSET)
    canvas.doForm("logo")
    canvas.restoreState()
    canvas.showPage()
    canvas.save()
    return out.getvalue()


# -- DOCX ------------------------------------------------------------------------------------

DOCX_PICTURE_NAME = "word/media/image1.png"


def docx_picture() -> bytes:
    return png(48, 36, (240, 200, 0))


def docx_with_headings_table_picture() -> bytes:
    """Heading 1, paragraph, Heading 2, paragraph, a 3x2 table, a picture, Heading 1, paragraph."""
    import datetime

    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.core_properties.created = datetime.datetime(2024, 1, 1)
    document.core_properties.modified = datetime.datetime(2024, 1, 1)
    document.core_properties.last_modified_by = "docgen"
    document.add_heading("Introduction", level=1)
    document.add_paragraph("This document introduces the widget.")
    document.add_heading("Details", level=2)
    document.add_paragraph("The widget has three parts.")
    table = document.add_table(rows=3, cols=2)
    for r, row in enumerate([("Part", "Weight"), ("Gear", "10 g"), ("Spring", "2 g")]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    document.add_picture(io.BytesIO(docx_picture()), width=Inches(1))
    document.add_heading("Conclusion", level=1)
    document.add_paragraph("The widget works.")
    return ooxml_bytes(document)


# -- PPTX ------------------------------------------------------------------------------------

EMU_PER_POINT = 12700
PPTX_PICTURE_NAME = "ppt/media/image1.jpg"
PPTX_PICTURE_BOX_PT = (360.0, 180.0, 504.0, 288.0)  # x0, top, x1, bottom on slide 2
PPTX_SLIDE_SIZE_PT = (720.0, 540.0)  # python-pptx's default 10in x 7.5in


def pptx_picture() -> bytes:
    return jpeg(64, 48, (120, 60, 160))


def pptx_with_picture() -> bytes:
    """Two slides with titles and text; slide 2 holds one picture at PPTX_PICTURE_BOX_PT."""
    import datetime

    import pptx
    from pptx.util import Emu

    deck = pptx.Presentation()
    deck.core_properties.created = datetime.datetime(2024, 1, 1)
    deck.core_properties.modified = datetime.datetime(2024, 1, 1)
    deck.core_properties.revision = 1
    layout = deck.slide_layouts[1]  # title and content
    slide = deck.slides.add_slide(layout)
    slide.shapes.title.text = "Overview"
    slide.placeholders[1].text = "The first slide has no picture."
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Results"
    box = slide.shapes.add_textbox(
        Emu(72 * EMU_PER_POINT), Emu(180 * EMU_PER_POINT), Emu(250 * EMU_PER_POINT), Emu(40 * EMU_PER_POINT)
    )
    box.text_frame.text = "The chart shows the results."
    x0, top, x1, bottom = PPTX_PICTURE_BOX_PT
    slide.shapes.add_picture(
        io.BytesIO(pptx_picture()),
        Emu(int(x0 * EMU_PER_POINT)),
        Emu(int(top * EMU_PER_POINT)),
        Emu(int((x1 - x0) * EMU_PER_POINT)),
        Emu(int((bottom - top) * EMU_PER_POINT)),
    )
    box = slide.shapes.add_textbox(
        Emu(72 * EMU_PER_POINT), Emu(400 * EMU_PER_POINT), Emu(400 * EMU_PER_POINT), Emu(40 * EMU_PER_POINT)
    )
    box.text_frame.text = "Footnote below the picture."
    return ooxml_bytes(deck)


# -- HTML, Markdown --------------------------------------------------------------------------


def data_uri_picture() -> bytes:
    return png(20, 10, (10, 10, 250))


def data_uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def html_with_data_uri_image() -> bytes:
    """A heading, a paragraph, a data: URI PNG, another paragraph, and an external image."""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Pictures</title></head><body>\n'
        "<h1>Pictures</h1>\n<p>Before the picture.</p>\n"
        f'<img src="{data_uri(data_uri_picture())}" alt="blue box">\n'
        "<p>After the picture.</p>\n"
        '<img src="https://example.com/remote.png" alt="remote">\n'
        "</body></html>\n"
    ).encode()


def markdown_with_data_uri_image() -> bytes:
    return (
        f"# Pictures\n\nBefore the picture.\n\n![blue box]({data_uri(data_uri_picture())})\n\nAfter the picture.\n"
    ).encode()


# -- EPUB ------------------------------------------------------------------------------------

EPUB_IMAGE_NAMES = ("OEBPS/images/figure.png", "OEBPS/images/photo.jpg", "OEBPS/images/cover.gif")


def epub_images_bytes() -> dict[str, bytes]:
    return {
        EPUB_IMAGE_NAMES[0]: png(30, 20, (0, 128, 128)),
        EPUB_IMAGE_NAMES[1]: jpeg(50, 40, (128, 0, 128)),
        EPUB_IMAGE_NAMES[2]: gif(8, 8),
    }


def epub_with_image() -> bytes:
    """A hand-written EPUB 3: two chapters; chapter 1 shows the JPEG then the PNG, the cover GIF
    is only in the manifest (listed before the others, so spine order must win)."""
    manifest = (
        '<item id="cover" href="images/cover.gif" media-type="image/gif" properties="cover-image"/>'
        '<item id="png" href="images/figure.png" media-type="image/png"/>'
        '<item id="jpg" href="images/photo.jpg" media-type="image/jpeg"/>'
        '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        '<item id="ch1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>'
        '<item id="ch2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/>'
    )
    files = {
        "OEBPS/content.opf": epub_opf(
            "urn:uuid:00000000-0000-4000-8000-000000000000", "Picture Book", manifest, ["ch1", "ch2"]
        ),
        "OEBPS/nav.xhtml": epub_nav([("text/ch1.xhtml", "One"), ("text/ch2.xhtml", "Two")]),
        "OEBPS/text/ch1.xhtml": xhtml(
            "One",
            '<h1>Chapter One</h1><p>A photo.</p><img src="../images/photo.jpg" alt="photo"/>'
            '<p>A figure.</p><img src="../images/figure.png" alt="figure"/>',
        ),
        "OEBPS/text/ch2.xhtml": xhtml(
            "Two", '<h1>Chapter Two</h1><p>The photo again.</p><img src="../images/photo.jpg"/>'
        ),
    }
    return epub_zip(files, epub_images_bytes())


def xhtml(title: str, body: str) -> str:
    """An XHTML document (an EPUB chapter or navigation page)."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>{title}</title></head><body>{body}</body></html>\n"
    )


def epub_opf(uid: str, title: str, manifest: str, spine: list[str]) -> str:
    """The EPUB 3 package document: fixed metadata, the manifest's items (XML) and the spine's ids, in order."""
    itemrefs = "".join(f'<itemref idref="{item}"/>' for item in spine)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:identifier id="uid">{uid}</dc:identifier>'
        f"<dc:title>{title}</dc:title><dc:language>en</dc:language>"
        '<meta property="dcterms:modified">2024-01-01T00:00:00Z</meta></metadata>'
        f"<manifest>{manifest}</manifest>"
        f"<spine>{itemrefs}</spine></package>\n"
    )


def epub_nav(links: list[tuple[str, str]]) -> str:
    """The navigation document: a table of contents of (href, label) links."""
    items = "".join(f'<li><a href="{href}">{label}</a></li>' for href, label in links)
    return xhtml("Contents", f'<nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="toc"><ol>{items}</ol></nav>')


EPUB_CONTAINER = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>\n"
)


def epub_zip(files: dict[str, str], images: dict[str, bytes]) -> bytes:
    """An EPUB archive of text files (OEBPS/content.opf first) and images, with META-INF/container.xml."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        # The mimetype entry comes first and uncompressed, as EPUB requires.
        archive.writestr(zip_info("mimetype", zipfile.ZIP_STORED), "application/epub+zip")
        for name, text in {"META-INF/container.xml": EPUB_CONTAINER, **files}.items():
            archive.writestr(zip_info(name), text.encode("utf-8"))
        for name, data in images.items():
            archive.writestr(zip_info(name), data)
    return out.getvalue()


# -- E-mail ----------------------------------------------------------------------------------

EML_BODY = "Hello team,\n\nThe chart is attached.\n\nRegards,\nAda\n"
EML_IMAGE_NAME = "chart.png"
EML_TEXT_NAME = "notes.txt"
EML_TEXT = "Some notes in a text file.\n"


def eml_picture() -> bytes:
    return png(24, 16, (250, 120, 0))


def eml_with_image_attachment() -> bytes:
    """A text body, a PNG attachment and a small text/plain attachment."""
    message = email_message("Chart", "<chart-1@example.com>")
    message.set_content(EML_BODY)
    message.add_attachment(eml_picture(), maintype="image", subtype="png", filename=EML_IMAGE_NAME)
    message.add_attachment(EML_TEXT, subtype="plain", filename=EML_TEXT_NAME)
    return fixed_boundaries(message).as_bytes()


EML_INLINE_CID = "logo@example.com"


def eml_with_inline_image() -> bytes:
    """An HTML body (with a plain alternative) showing an inline image by Content-ID."""
    message = email_message("Logo")
    message.set_content("Our logo is below.\n")
    message.add_alternative(
        f'<html><body><p>Our logo is below.</p><img src="cid:{EML_INLINE_CID}"></body></html>\n', subtype="html"
    )
    html_part = message.get_payload()[1]
    html_part.add_related(eml_picture(), maintype="image", subtype="png", cid=f"<{EML_INLINE_CID}>")
    return fixed_boundaries(message).as_bytes()


# -- helpers ---------------------------------------------------------------------------------

_ZIP_DATE = (2024, 1, 1, 0, 0, 0)


def zip_info(name: str, compress_type: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    """A zip member with a fixed date and mode."""
    info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
    info.compress_type = compress_type
    info.external_attr = 0o644 << 16
    return info


def ooxml_bytes(document) -> bytes:
    """A python-docx document or python-pptx presentation, saved with fixed member timestamps."""
    out = io.BytesIO()
    document.save(out)
    return deterministic_zip(out.getvalue())


def deterministic_zip(data: bytes) -> bytes:
    """The same OOXML package with fixed member timestamps (python-docx/pptx stamp the clock)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(zip_info(info.filename), source.read(info.filename))
    return out.getvalue()


def email_message(subject: str, message_id: str | None = None) -> EmailMessage:
    """A message from Ada to the team with a fixed date (and Message-ID when given), no body yet."""
    message = EmailMessage()
    message["From"] = "Ada <ada@example.com>"
    message["To"] = "team@example.com"
    message["Subject"] = subject
    message["Date"] = "Mon, 01 Jan 2024 10:00:00 +0000"
    if message_id:
        message["Message-ID"] = message_id
    return message


def fixed_boundaries(message: EmailMessage) -> EmailMessage:
    """Replace the random MIME boundaries with numbered ones."""
    for number, part in enumerate(message.walk()):
        if part.is_multipart():
            part.set_boundary(f"==boundary-{number}==")
    return message


PDF_JPX_BOX = (72.0, 142.0, 172.0, 192.0)  # x0, top, x1, bottom


def jpeg2000(width: int = 16, height: int = 8, color: tuple[int, int, int] = (90, 90, 0)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="JPEG2000", no_jp2=False)
    return out.getvalue()


def pdf_with_jpx_image() -> bytes:
    """One page showing a JPEG 2000 (JPXDecode) image at PDF_JPX_BOX (reportlab cannot embed JPX)."""
    import pikepdf

    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=PDF_PAGE_SIZE)
    image = pikepdf.Stream(pdf, jpeg2000())
    image.Type, image.Subtype, image.Filter = pikepdf.Name.XObject, pikepdf.Name.Image, pikepdf.Name.JPXDecode
    image.Width, image.Height = 16, 8
    page = pdf.pages[0]
    page.Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(Im0=image))
    x0, top, x1, bottom = PDF_JPX_BOX
    y = PDF_PAGE_SIZE[1] - bottom
    page.Contents = pdf.make_stream(f"q {x1 - x0:g} 0 0 {bottom - top:g} {x0:g} {y:g} cm /Im0 Do Q".encode())
    out = io.BytesIO()
    pdf.save(out, static_id=True)
    return out.getvalue()


def pptx_with_grouped_picture() -> bytes:
    """One slide whose picture sits in a group that was then moved 100 pt right and 50 pt down:
    the picture's own offsets stay in the group's child space, so it lands at PPTX_GROUPED_BOX_PT."""
    import pptx
    from pptx.util import Pt

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank
    group = slide.shapes.add_group_shape()
    group.shapes.add_picture(io.BytesIO(pptx_picture()), Pt(100), Pt(100), Pt(80), Pt(60))
    group.left, group.top = group.left + Pt(100), group.top + Pt(50)
    return ooxml_bytes(deck)


PPTX_GROUPED_BOX_PT = (200.0, 150.0, 280.0, 210.0)


# -- text and office formats of the spec's table ----------------------------------------------

MARKDOWN_DOC = """# Annual Report

The company grew in every region.

## Revenue

Revenue rose by fifteen percent.

| Quarter | Revenue |
|---------|---------|
| Q1      | 12      |
| Q2      | 14      |

## Outlook

- Expand to new markets
- Hire more engineers

# Appendix

Methodology notes are here.
"""

RST_DOC = """Annual Report
=============

The company grew in every region.

Revenue
-------

Revenue rose by fifteen percent.
"""


def markdown() -> bytes:
    return MARKDOWN_DOC.encode("utf-8")


def rst() -> bytes:
    return RST_DOC.encode("utf-8")


def text_utf16() -> bytes:
    return "Naïve café notes.\n\nSecond paragraph with résumé.\n".encode("utf-16")


def csv_utf16() -> bytes:
    return "name,city\nZoë,Malmö\nJosé,São Paulo\n".encode("utf-16")


def tsv() -> bytes:
    return b"name\tcity\nAda\tLondon\nGrace\tNew York\n"


def html_cp1252() -> bytes:
    html = (
        '<html><head><meta charset="windows-1252"><title>Caf\u00e9</title></head><body>'
        "<h1>Caf\u00e9 \u201cmenu\u201d</h1><p>Cr\u00e8me br\u00fbl\u00e9e is on the menu.</p>"
        "<table><tr><th>Dish</th><th>Price</th></tr><tr><td>Cr\u00eape</td><td>4</td></tr></table>"
        "</body></html>"
    )
    return html.encode("cp1252")


def pandoc(markdown_text: str, to: str) -> bytes:
    """markdown_text converted by pandoc (a Debian package of `make setup`) to the format `to` (rtf, odt...)."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, f"out.{to}")
        subprocess.run(
            ["pandoc", "-f", "markdown", "-t", to, "-s", "-o", out], input=markdown_text.encode(), check=True
        )
        with open(out, "rb") as handle:
            return handle.read()


def libreoffice(data: bytes, source_suffix: str, to: str) -> bytes:
    """`data` (a document ending in source_suffix, e.g. ".docx") converted by LibreOffice headless
    (a Debian package of `make setup`) to the format `to` ("doc", "ppt"...), with a private profile."""
    import os
    import pathlib
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="docgen-soffice-") as folder:
        source = os.path.join(folder, "document" + source_suffix)
        with open(source, "wb") as handle:
            handle.write(data)
        profile = pathlib.Path(folder, "profile").as_uri()
        subprocess.run(
            [
                "soffice",
                f"-env:UserInstallation={profile}",
                "--headless",
                "--convert-to",
                to,
                "--outdir",
                folder,
                source,
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        with open(os.path.join(folder, f"document.{to}"), "rb") as handle:
            return handle.read()


def doc() -> bytes:
    """The DOCX of docx_with_headings_table_picture() saved by LibreOffice as Word 97 (.doc)."""
    return libreoffice(docx_with_headings_table_picture(), ".docx", "doc")


def ppt() -> bytes:
    """The PPTX of pptx_with_picture() saved by LibreOffice as PowerPoint 97 (.ppt)."""
    return libreoffice(pptx_with_picture(), ".pptx", "ppt")


def _macro_enabled(data: bytes, main: str, macro_main: str) -> bytes:
    """An OOXML package with its main part declared macro-enabled (.docm/.pptm/.xlsm), as Office
    saves one (the macros themselves, vbaProject.bin, play no part in decoding)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "[Content_Types].xml":
                body = body.replace(main.encode(), macro_main.encode())
            package.writestr(zip_info(info.filename), body)
    return out.getvalue()


def docm() -> bytes:
    return _macro_enabled(
        docx_with_headings_table_picture(),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        "application/vnd.ms-word.document.macroEnabled.main+xml",
    )


def pptm() -> bytes:
    return _macro_enabled(
        pptx_with_picture(),
        "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
        "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
    )


def xlsm() -> bytes:
    return _macro_enabled(
        xlsx(),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
        "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
    )


def rtf() -> bytes:
    return pandoc(MARKDOWN_DOC, "rtf")


def odt() -> bytes:
    return pandoc(MARKDOWN_DOC, "odt")


def xlsx(sheets: int = 2) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    for index in range(sheets):
        sheet = book.active if index == 0 else book.create_sheet()
        sheet.title = f"Sheet{index + 1}"
        sheet.append(["Region", "Sales"])
        sheet.append([f"North {index}", 10 + index])
        sheet.append([f"South {index}", 20 + index])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def xls() -> bytes:
    import xlwt

    book = xlwt.Workbook()
    for index in range(2):
        sheet = book.add_sheet(f"Sheet{index + 1}")
        for row, values in enumerate([("Region", "Sales"), (f"East {index}", 5 + index)]):
            for col, value in enumerate(values):
                sheet.write(row, col, value)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pdf_text(pages: int = 2) -> bytes:
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out, pagesize=PDF_PAGE_SIZE, invariant=1)
    for number in range(1, pages + 1):
        c.setFont("Helvetica-Bold", 18)
        c.drawString(72, 720, f"Chapter {number}")
        c.setFont("Helvetica", 11)
        c.drawString(72, 690, f"This is the narrative text of page {number}, long enough to be a paragraph.")
        c.showPage()
    c.save()
    return out.getvalue()


def pdf_encrypted() -> bytes:
    import pikepdf

    source = pikepdf.open(io.BytesIO(pdf_text(1)))
    out = io.BytesIO()
    source.save(out, encryption=pikepdf.Encryption(owner="owner", user="secret", R=6))
    return out.getvalue()


def xlsx_encrypted() -> bytes:
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    office = OOXMLFile(io.BytesIO(xlsx(1)))
    office.encrypt("secret", out)
    return out.getvalue()


def pdf_truncated() -> bytes:
    data = pdf_text(2)
    return data[: len(data) // 3]


def random_bytes(size: int = 4096) -> bytes:
    import random

    return random.Random(7).randbytes(size)


# -- a long PDF for the page-range parse -----------------------------------------------------

LONG_PDF_PAGES = 36
LONG_PDF_UNTITLED_PAGES = (10, 19, 20)  # 1-based: no heading, their text belongs to an earlier page's
LONG_PDF_LINK = "https://example.org/lineage"


def long_pdf(pages: int = LONG_PDF_PAGES) -> bytes:
    """Many pages of headings, paragraphs and bullets, with links, pictures, a rotated page and a
    landscape page; some pages have no heading, so their text's parent sits on an earlier page."""
    from reportlab.pdfgen.canvas import Canvas

    out = io.BytesIO()
    canvas = Canvas(out, pagesize=PDF_PAGE_SIZE, invariant=1)
    for number in range(1, pages + 1):
        size = (PDF_PAGE_SIZE[1], PDF_PAGE_SIZE[0]) if number == 7 else PDF_PAGE_SIZE
        canvas.setPageSize(size)
        if number == 12:
            canvas.setPageRotation(90)
        height = size[1]
        y = height - 72
        if number not in LONG_PDF_UNTITLED_PAGES:
            canvas.setFont("Helvetica-Bold", 20)
            canvas.drawString(72, y, f"Chapter {number} Findings")
            y -= 40
        canvas.setFont("Helvetica", 11)
        for paragraph in range(3):
            for line in range(3):
                canvas.drawString(
                    72, y, f"Page {number} paragraph {paragraph} line {line} reports what was measured there."
                )
                y -= 14
            y -= 12
        for item in range(2):
            canvas.drawString(84, y, f"\u2022 Item {item} of page {number} is listed here.")
            y -= 16
        if number % 4 == 0:
            canvas.drawString(72, y, "The lineage note is online.")
            canvas.linkURL(LONG_PDF_LINK, (72, y - 2, 260, y + 10), relative=0)
            y -= 20
        if number % 5 == 0:
            _draw(canvas, pdf_png() if number % 10 else pdf_jpeg(), (72.0, height - y + 10, 152.0, height - y + 70))
        canvas.showPage()
        canvas.setPageRotation(0)
    canvas.save()
    return out.getvalue()


# -- documents from blocks (the property tests' random documents) -----------------------------


@dataclass(frozen=True)
class Block:
    """One block of a document, rendered into any of the formats below.

    kind: "heading" (text, level), "paragraph" (text), "table" (rows; the first is the header)
    or "image" (PNG bytes). Texts are plain words: no markup characters of any of the formats."""

    kind: str
    text: str = ""
    level: int = 1
    rows: tuple[tuple[str, ...], ...] = ()
    image: bytes = b""


def heading(text: str, level: int = 1) -> Block:
    return Block("heading", text=text, level=level)


def paragraph(text: str) -> Block:
    return Block("paragraph", text=text)


def table(rows: list[list[str]] | tuple[tuple[str, ...], ...]) -> Block:
    return Block("table", rows=tuple(tuple(row) for row in rows))


def image(data: bytes) -> Block:
    return Block("image", image=data)


def blocks_text(blocks: list[Block]) -> bytes:
    """Plain UTF-8 text: one paragraph per block, tables as lines of space-separated cells."""
    parts = []
    for block in blocks:
        if block.kind == "image":
            raise ValueError("plain text cannot hold an image")
        parts.append("\n".join(" ".join(row) for row in block.rows) if block.kind == "table" else block.text)
    return ("\n\n".join(parts) + "\n").encode("utf-8") if parts else b""


def blocks_markdown(blocks: list[Block]) -> bytes:
    """Markdown: ATX headings, pipe tables, images as data: URIs."""
    parts = []
    for n, block in enumerate(blocks, start=1):
        if block.kind == "heading":
            parts.append(f"{'#' * block.level} {block.text}")
        elif block.kind == "paragraph":
            parts.append(block.text)
        elif block.kind == "table":
            header, *body = block.rows
            lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            parts.append("\n".join(lines + ["| " + " | ".join(row) + " |" for row in body]))
        else:
            parts.append(f"![image {n}]({data_uri(block.image)})")
    return ("\n\n".join(parts) + "\n").encode("utf-8") if parts else b""


def blocks_html(blocks: list[Block]) -> bytes:
    """An HTML page: h1-h6, p, table (th in the first row), img with data: URIs."""
    import html

    body = []
    for n, block in enumerate(blocks, start=1):
        if block.kind == "heading":
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif block.kind == "paragraph":
            body.append(f"<p>{html.escape(block.text)}</p>")
        elif block.kind == "table":
            rows = [
                "<tr>" + "".join(f"<{tag}>{html.escape(cell)}</{tag}>" for cell in row) + "</tr>"
                for tag, row in (("th" if r == 0 else "td", row) for r, row in enumerate(block.rows))
            ]
            body.append("<table>" + "".join(rows) + "</table>")
        else:
            body.append(f'<img src="{data_uri(block.image)}" alt="image {n}">')
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n' + "\n".join(body) + "\n</body></html>\n"
    ).encode("utf-8")


def blocks_csv(rows: list[list[str]] | tuple[tuple[str, ...], ...]) -> bytes:
    import csv

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


def blocks_docx(blocks: list[Block]) -> bytes:
    """A DOCX: Heading n styles, plain paragraphs, tables, inline pictures (1 inch wide)."""
    import datetime

    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.core_properties.created = datetime.datetime(2024, 1, 1)
    document.core_properties.modified = datetime.datetime(2024, 1, 1)
    document.core_properties.last_modified_by = "docgen"
    for block in blocks:
        if block.kind == "heading":
            document.add_heading(block.text, level=block.level)
        elif block.kind == "paragraph":
            document.add_paragraph(block.text)
        elif block.kind == "table":
            grid = document.add_table(rows=len(block.rows), cols=len(block.rows[0]))
            for r, row in enumerate(block.rows):
                for c, text in enumerate(row):
                    grid.cell(r, c).text = text
        else:
            document.add_picture(io.BytesIO(block.image), width=Inches(1))
    return ooxml_bytes(document)


PDF_MARGIN = 72.0
PDF_LINE_CHARACTERS = 80  # paragraphs are wrapped at this many characters (Helvetica 11 pt fits)


def blocks_pdf(blocks: list[Block], page_breaks: tuple[int, ...] = ()) -> bytes:
    """A PDF drawn top to bottom: headings in Helvetica-Bold, paragraphs wrapped at spaces, table
    rows as lines of their cells (a PDF has no tables), images 72x54 pt. A new page starts before each block index in page_breaks and
    when the page is full. Texts must be Latin-1 (the standard fonts' encoding)."""
    import textwrap

    from reportlab.pdfgen.canvas import Canvas

    out = io.BytesIO()
    canvas = Canvas(out, pagesize=PDF_PAGE_SIZE, invariant=1)
    height = PDF_PAGE_SIZE[1]
    top = height - PDF_MARGIN  # the next line's top, bottom-up

    def room(needed: float) -> float:
        nonlocal top
        if top - needed < PDF_MARGIN:
            canvas.showPage()
            top = height - PDF_MARGIN
        top -= needed
        return top

    for index, block in enumerate(blocks):
        if index in page_breaks and index > 0:
            canvas.showPage()
            top = height - PDF_MARGIN
        if block.kind == "heading":
            canvas.setFont("Helvetica-Bold", 18 - 2 * block.level)
            canvas.drawString(PDF_MARGIN, room(30), block.text)
        elif block.kind in ("paragraph", "table"):
            canvas.setFont("Helvetica", 11)
            lines = (
                textwrap.wrap(block.text, PDF_LINE_CHARACTERS, break_long_words=False, break_on_hyphens=False)
                if block.kind == "paragraph"
                else [" ".join(row) for row in block.rows]
            )
            for line in lines:
                canvas.drawString(PDF_MARGIN, room(14), line)
            room(10)
        else:
            y = room(64)
            _draw(canvas, block.image, (PDF_MARGIN, height - y - 54, PDF_MARGIN + 72, height - y))
    canvas.showPage()
    canvas.save()
    return out.getvalue()


# -- markup that libmagic calls XML ------------------------------------------------------------

XHTML_PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
<!-- generated by docgen -->
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en">
<head><title>Annual report</title></head>
<body>
<h1>Annual report</h1>
<p>Sales rose in every quarter of the year.</p>
<table><tr><th>Quarter</th><th>Sales</th></tr><tr><td>Q1</td><td>12</td></tr></table>
</body>
</html>
"""

# Inline XBRL as filings write it: an XHTML page whose facts are `ix:` elements (the `ix` prefix
# is declared on the root, as the specification requires).
IXBRL_PAGE = """<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ix="http://www.xbrl.org/2013/inlineXBRL"
      xmlns:xbrli="http://www.xbrl.org/2003/instance">
<head><title>Form 10-K</title></head>
<body>
<div style="display:none"><ix:header><ix:references/></ix:header></div>
<h2>Results of operations</h2>
<p>Net revenue was <ix:nonFraction name="us-gaap:Revenues" contextRef="FY24" unitRef="usd" decimals="-6">1,234</ix:nonFraction> million dollars.</p>
</body>
</html>
"""

# An XML-declared page whose `ix:` prefix is never declared: an XML parser refuses it.
XML_DECLARED_HTML = """<?xml version="1.0"?>
<html><body><h1>Notice</h1><p>The <ix:nonNumeric name="dei:Name">Example Corp</ix:nonNumeric> annual meeting.</p></body></html>
"""

XML_CATALOG = """<?xml version="1.0" encoding="UTF-8"?>
<catalog>
  <book id="b1"><title>Dune</title><author>Frank Herbert</author></book>
</catalog>
"""


def xhtml_page() -> bytes:
    return XHTML_PAGE.encode("utf-8")


def ixbrl_page() -> bytes:
    return IXBRL_PAGE.encode("utf-8")


def xml_declared_html() -> bytes:
    return XML_DECLARED_HTML.encode("utf-8")


def xml_catalog() -> bytes:
    return XML_CATALOG.encode("utf-8")
