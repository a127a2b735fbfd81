"""E-mail (RFC 822): the body by unstructured, attachments split off and decoded apart (images/email.py)."""

from __future__ import annotations

from .. import detect
from .. import limits as limits_module
from ..limits import Budget
from ..model import ConfigError, DecodeError, DecoderConfig, Partitioned
from .base import NOT_TRANSCRIBED, Format, Parser, transcribed_by_a_model


def partition(
    parser: Parser,
    data: bytes,
    mime: str,
    config: DecoderConfig,
    strategy: str,
    notes: list[str],
    filename: str | None,
    budget: Budget,
) -> Partitioned:
    """The message body by unstructured; attachments by us (images stored, documents decoded)."""
    from .. import images

    parts = images.split_email(data)
    elements = parser.partition(parts.body, detect.EML, config, "fast", None)
    for attachment in parts.attachments:
        kind = detect.detect_mime(attachment.data, attachment.filename, None)
        if kind.startswith("image/"):
            continue
        if transcribed_by_a_model(kind):
            notes.append(f"attachment {attachment.filename!r} skipped: {NOT_TRANSCRIBED.format(kind=kind)}")
            continue
        try:
            inner = parser.partition_bytes(
                attachment.data,
                kind,
                DecoderConfig(strategy="fast" if kind != detect.PDF else "auto", languages=config.languages),
                attachment.filename,
                budget=budget,  # the message's: its attachments share its time
            )
        except (DecodeError, ConfigError) as exc:
            notes.append(f"attachment {attachment.filename!r} skipped: {exc}")
            continue
        for el in inner.elements:
            el.extra["attachment"] = attachment.filename
            el.page_number = None
        elements.extend(inner.elements)
    elements = images.with_trailing_images(elements, images.email_images(parts), "eml")
    return Partitioned(elements, strategy, notes)


FORMAT = Format(
    name="email",
    logic_version="1",
    mime_types=frozenset({detect.EML}),
    warm_imports={detect.EML: ("email",)},
    partition=partition,
    check=lambda data, mime, limits: limits_module.check_text(data, mime),
    data_uri_images=frozenset({detect.EML}),  # `<img src="data:...">` bytes kept (images/elements.py)
)
