"""E-mail attachments, split off before unstructured sees the message: an image attachment would
send its partition to `hi_res`. The image attachments are the message's images."""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import Message

from ud_assets.decoding import detect
from ud_assets.decoding.model import ImageData

from .describe import OCTET, describe_image, image_data


@dataclass
class EmailAttachment:
    filename: str
    mime_type: str  # sniffed from the bytes; the declared type when sniffing says nothing
    data: bytes
    declared_type: str = ""
    content_id: str = ""  # without the angle brackets
    inline: bool = False


@dataclass
class EmailParts:
    # The message without its attachments: unstructured's partition_email finds only the body.
    body: bytes
    attachments: list[EmailAttachment] = field(default_factory=list)


def split_email(data: bytes) -> EmailParts:
    """The message's body-only bytes and its attachments (every part that is not the text/plain
    or text/html body, at any depth; an attached message/rfc822 is one attachment).

    The body-only message keeps the headers and the multipart skeleton with the body parts,
    so partition_email sees the same body and no attachment to partition (an image attachment
    would make it run hi_res)."""
    import email
    from email import policy

    message = email.message_from_bytes(data, policy=policy.default)
    # A second parse, in compat32, is the copy we prune: it re-serialises headers unchanged.
    pruned = email.message_from_bytes(data, policy=policy.compat32)
    parts, pruned_parts = list(message.walk()), list(pruned.walk())
    body_ids = {id(part) for part in (message.get_body(("html",)), message.get_body(("plain",))) if part is not None}
    parents = {id(child): part for part in pruned_parts if part.is_multipart() for child in part.get_payload()}

    attachments: list[EmailAttachment] = []
    inside_attached_message: set[int] = set()
    for part, pruned_part in zip(parts, pruned_parts):
        if id(part) in inside_attached_message or id(part) in body_ids:
            continue
        is_message = part.get_content_type() == "message/rfc822"
        if part.is_multipart() and not is_message:
            continue
        if is_message:
            inside_attached_message.update(id(sub) for sub in part.walk() if sub is not part)
            payload = pruned_part.get_payload()
            inner = payload[0] if isinstance(payload, list) and payload else None
            content = inner.as_bytes() if isinstance(inner, Message) else b""
        else:
            decoded = pruned_part.get_payload(decode=True)  # None for an empty part
            content = decoded if isinstance(decoded, bytes) else b""
        attachments.append(_attachment(part, content))
        _remove_part(pruned, pruned_part, parents)
    return EmailParts(body=pruned.as_bytes(), attachments=attachments)


def _attachment(part: Message, content: bytes) -> EmailAttachment:
    filename = part.get_filename() or ""
    declared = part.get_content_type()
    content_id = (part.get("Content-ID") or "").strip().strip("<>")
    disposition = part.get_content_disposition()
    return EmailAttachment(
        filename=filename,
        mime_type=_sniff_attachment(content, declared, filename),
        data=content,
        declared_type=declared,
        content_id=content_id,
        inline=disposition == "inline" or (disposition is None and bool(content_id)),
    )


def _remove_part(root: Message, part: Message, parents: dict[int, Message]) -> None:
    parent = parents.get(id(part))
    if parent is not None:
        parent.set_payload([child for child in parent.get_payload() if child is not part])
        return
    # The message itself is the attachment (a single-part image, PDF...): leave an empty body.
    for header in ("Content-Type", "Content-Transfer-Encoding", "Content-Disposition", "Content-ID"):
        del root[header]
    root.set_payload("")


_GENERIC = frozenset({"", OCTET, detect.PLAIN, "application/zip", "application/x-empty"})


def _sniff_attachment(content: bytes, declared: str, filename: str) -> str:
    mime = describe_image(content)[0]
    if mime != OCTET:
        return mime
    sniffed = detect.sniff(content) if content else ""
    if sniffed not in _GENERIC:
        return sniffed
    declared = detect.normalize(declared)
    if declared and declared not in (OCTET, "application/zip"):
        return declared
    return detect.from_extension(filename) or sniffed or OCTET


def email_images(parts: EmailParts) -> list[ImageData]:
    """The attachments that are images (inline ones shown by Content-ID included), in order."""
    images: list[ImageData] = []
    for attachment in parts.attachments:
        if not attachment.mime_type.startswith("image/"):
            continue
        name = attachment.filename or (f"cid:{attachment.content_id}" if attachment.content_id else "")
        images.append(image_data(attachment.data, attachment.mime_type, name=name))
    return images
