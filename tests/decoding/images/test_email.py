"""E-mail attachments split off the body, so unstructured never runs hi_res on an image attachment."""

from __future__ import annotations

import email
import logging
from email import policy

import pytest

from tests import docgen
from tests.decoding.images.helpers import partition
from ud_assets.decoding import detect
from ud_assets.decoding.images import email_images, split_email


def test_split_email_separates_body_and_attachments():
    parts = split_email(docgen.eml_with_image_attachment())
    assert [(a.filename, a.mime_type, a.declared_type, a.inline) for a in parts.attachments] == [
        (docgen.EML_IMAGE_NAME, "image/png", "image/png", False),
        (docgen.EML_TEXT_NAME, "text/plain", "text/plain", False),
    ]
    assert parts.attachments[0].data == docgen.eml_picture()
    assert parts.attachments[1].data == docgen.EML_TEXT.encode()
    body = email.message_from_bytes(parts.body, policy=policy.default)
    assert list(body.iter_attachments()) == []
    assert body.get_body(("plain",)).get_content() == docgen.EML_BODY
    assert body["Subject"] == "Chart" and body["Message-ID"] == "<chart-1@example.com>"


def test_email_images():
    (image,) = email_images(split_email(docgen.eml_with_image_attachment()))
    assert image.data == docgen.eml_picture()
    assert (image.mime_type, image.width, image.height, image.name) == ("image/png", 24, 16, docgen.EML_IMAGE_NAME)


def test_split_email_finds_inline_images_by_content_id():
    parts = split_email(docgen.eml_with_inline_image())
    (attachment,) = parts.attachments
    assert (attachment.content_id, attachment.inline, attachment.mime_type) == (
        docgen.EML_INLINE_CID,
        True,
        "image/png",
    )
    (image,) = email_images(parts)
    assert image.name == f"cid:{docgen.EML_INLINE_CID}"
    assert image.data == docgen.eml_picture()
    body = email.message_from_bytes(parts.body, policy=policy.default)
    assert "Our logo is below." in body.get_body(("html",)).get_content()
    assert body.get_body(("plain",)).get_content() == "Our logo is below.\n"
    assert [p.get_content_type() for p in body.walk() if not p.is_multipart()] == ["text/plain", "text/html"]


def test_split_email_single_part_attachment_message():
    message = email.message.EmailMessage()
    message["Subject"] = "Just a picture"
    message.set_content(docgen.eml_picture(), maintype="image", subtype="png", filename="pic.png")
    parts = split_email(message.as_bytes())
    assert [(a.filename, a.mime_type) for a in parts.attachments] == [("pic.png", "image/png")]
    body = email.message_from_bytes(parts.body, policy=policy.default)
    assert body["Subject"] == "Just a picture" and body.get_content_type() == "text/plain"


class HiResReached(RuntimeError):
    """Raised by the spy standing in for unstructured's hi_res (layout model) path."""


@pytest.fixture
def hi_res_spy(monkeypatch):
    """Make unstructured's hi_res entry point raise instead of loading a layout model."""
    import unstructured.partition.pdf as unstructured_pdf

    calls = []

    def spy(*args, **kwargs):
        calls.append(kwargs.get("is_image"))
        raise HiResReached("hi_res reached")

    monkeypatch.setattr(unstructured_pdf, "_partition_pdf_or_image_local", spy)
    return calls


def test_original_message_with_image_attachment_reaches_hi_res(hi_res_spy):
    with pytest.raises(HiResReached):
        partition(docgen.eml_with_image_attachment(), detect.EML, strategy="auto")
    assert hi_res_spy == [True]  # the PNG attachment, partitioned as an image


def test_body_only_message_never_reaches_hi_res(hi_res_spy, caplog):
    parts = split_email(docgen.eml_with_image_attachment())
    with caplog.at_level(logging.WARNING):
        elements = partition(parts.body, detect.EML, strategy="auto")
    assert hi_res_spy == []
    assert [e.text for e in elements] == ["Hello team,", "The chart is attached.", "Regards,", "Ada"]
    assert not any(e.metadata.attached_to_filename for e in elements)
    assert "Skipping attachment" not in caplog.text
