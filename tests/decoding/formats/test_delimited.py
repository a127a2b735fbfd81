"""Delimited text (formats/delimited.py): tolerant CSV/TSV (issue 13)."""

from __future__ import annotations

import pytest

from ud_assets.decoding import detect
from ud_assets.decoding.decoder import decode
from ud_assets.decoding.model import DecodeError


def cells(result):
    """The table's rows of cells, from the HTML of its one Table element."""
    import re

    (table,) = [e for e in result.elements if e.category == "Table"]
    return [re.findall(r"<td>(.*?)</td>|<td/>", row) for row in re.findall(r"<tr>(.*?)</tr>", table.text_as_html)]


RAGGED = "name,city\nAda,London\nGrace,New York,USA\nAlan\n"
RAGGED_ROWS = [["name", "city", ""], ["Ada", "London", ""], ["Grace", "New York", "USA"], ["Alan", "", ""]]


@pytest.mark.parametrize(
    "text, name, rows",
    [
        (RAGGED, "r.csv", RAGGED_ROWS),  # pandas: "Expected 2 fields in line 3, saw 3"
        (RAGGED.replace(",", "\t"), "r.tsv", RAGGED_ROWS),
        (
            "name;city\nAda;London, UK\nGrace;New York\n",
            "r.csv",
            [["name", "city"], ["Ada", "London, UK"], ["Grace", "New York"]],
        ),
        ("name|city\nAda|London\n\nGrace|Paris\n", "r.csv", [["name", "city"], ["Ada", "London"], ["Grace", "Paris"]]),
        ('name,note\nAda,"says ""hi"", twice"\n', "r.csv", [["name", "note"], ["Ada", 'says "hi", twice']]),
        ("name\nAda\nGrace\n", "r.csv", [["name"], ["Ada"], ["Grace"]]),
        ("pebble velvet\nüber\n", "r.csv", [["pebble velvet"], ["über"]]),
        ("name,city\r\nN/A,007\r\n", "r.csv", [["name", "city"], ["N/A", "007"]]),
    ],
)
def test_delimited_text_is_a_table_with_every_cell(text, name, rows):
    result = decode(text.encode("utf-8"), name, filename=name)
    assert cells(result) == rows
    assert [e.category for e in result.elements] == ["Table"]


@pytest.mark.parametrize(
    "encoding, bom",
    [
        ("utf-8", "\ufeff"),
        ("utf-16", ""),  # with its byte-order mark
        ("utf-16-le", ""),
        ("utf-16-be", ""),
        ("utf-32", ""),
        ("utf-32-le", ""),
        ("utf-32-be", ""),
        ("cp1252", ""),
    ],
)
def test_delimited_text_in_any_encoding(encoding, bom):
    text = bom + "name,city\nZoë,Malmö\nJosé,São Paulo,Brasil\n"
    result = decode(text.encode(encoding), "r.csv", filename="r.csv")
    assert result.document.mime_type == detect.CSV
    assert cells(result) == [["name", "city", ""], ["Zoë", "Malmö", ""], ["José", "São Paulo", "Brasil"]]


def test_a_regular_csv_gives_exactly_unstructureds_element():
    import io

    from unstructured.partition.auto import partition

    data = b"Region,Sales,Code\nNorth,10,007\nSouth,,N/A\n"
    (bare,) = partition(file=io.BytesIO(data), content_type="text/csv", metadata_filename="document.csv")
    (ours,) = decode(data, "r.csv", filename="r.csv").elements
    assert (ours.category, ours.text, ours.text_as_html, ours.element_id) == (
        bare.category,
        bare.text,
        bare.metadata.text_as_html,
        bare.id,
    )


@pytest.mark.parametrize(
    "text, delimiter",
    [
        ("a,b\n1,2\n", ","),
        ("a;b\n1;2,5\n3;4\n", ";"),
        ("a\tb\n1\t2\n", "\t"),
        ("a|b\n1|2\n", "|"),
        ("a,b;c\n1,2;3\n", ","),  # a tie goes to the earlier candidate
        ("name\nSmith, John\nAda\n", None),
        ("", None),
    ],
)
def test_sniff_delimiter(text, delimiter):
    from ud_assets.decoding.formats.delimited import sniff_delimiter

    assert sniff_delimiter(text) == delimiter


@pytest.mark.parametrize("data, name", [(b" \t\n\r\n", "blank.csv"), ("\ufeff\n\n".encode("utf-16"), "blank.tsv")])
def test_a_file_of_blank_lines_has_no_table(data, name):
    with pytest.raises(DecodeError) as raised:
        decode(data, name, filename=name)
    label = name.rsplit(".", 1)[1].upper()
    assert str(raised.value) == f"{label} has no columns: it holds only blank lines"


def test_a_table_beyond_the_cell_limit_is_refused():
    from ud_assets.decoding.formats.delimited import read_rows

    with pytest.raises(DecodeError) as raised:
        read_rows("a,b\n1,2\n3,4,5,6\n", ",", max_cells=10)
    assert str(raised.value) == "the table exceeds the maximum of 10 cells (CSV_MAX_CELLS): at least 3 rows x 4 columns"
    assert read_rows("a,b\n1,2\n3,4,5\n", ",", max_cells=9) == [["a", "b", ""], ["1", "2", ""], ["3", "4", "5"]]
