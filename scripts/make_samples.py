"""Writes the demo's sample documents into samples/ (run from the repository root).

    PYTHONPATH=. .venv/bin/python scripts/make_samples.py

The files are committed (a few KB each); they come from the test-document generators.
"""

from pathlib import Path

from tests import docgen

SAMPLES = {
    "report.pdf": docgen.pdf_with_text_and_image,
    "handbook.docx": docgen.docx_with_headings_table_picture,
    "slides.pptx": docgen.pptx_with_picture,
    "budget.xlsx": docgen.xlsx,
    "notes.md": docgen.markdown,
    "menu.html": docgen.html_cp1252,
    "cities.csv": docgen.csv_utf16,
    "letter.eml": docgen.eml_with_image_attachment,
}

if __name__ == "__main__":
    folder = Path("samples")
    folder.mkdir(exist_ok=True)
    for name, generate in SAMPLES.items():
        (folder / name).write_bytes(generate())
        print(f"samples/{name}")
