"""Images in documents, found without any ML model.

unstructured only extracts image bytes with its `hi_res` strategy, which needs layout-model
weights we cannot download. So the bytes come from the containers themselves, one module per
source format:

- pdf: every image object, read with pypdfium2 (`pdf_images`).
- office: DOCX and PPTX picture sub-partitioners plugged into unstructured's own hooks, so the
  `Image` elements sit in document order between the text elements (`install_picture_partitioners`).
- elements: HTML and Markdown, where unstructured makes `Image` elements for `<img src="data:...">`
  and keeps the bytes when asked to (`HTML_IMAGE_KWARGS`); `image_from_element` turns them (and
  the office pictures) into ImageData.
- epub: the image items of the zip (`epub_images`).
- email: attachments are split off before unstructured sees the message (`split_email`),
  because an image attachment would send unstructured's partition to `hi_res`.
- describe: the MIME type and size of image bytes, for all of them.

Heavy libraries are imported inside the functions so importing this package stays cheap.
"""

from .describe import OCTET, describe_image, image_data
from .elements import (
    HTML_IMAGE_KWARGS,
    NAME_FIELD,
    image_element,
    image_from_element,
    parse_data_uri,
    with_trailing_images,
)
from .email import EmailAttachment, EmailParts, email_images, split_email
from .epub import epub_image_for_url, epub_images
from .office import EMU_PER_POINT, DocxPicturePartitioner, PptxPicturePartitioner, install_picture_partitioners
from .pdf import pdf_images

__all__ = [
    "EMU_PER_POINT",
    "HTML_IMAGE_KWARGS",
    "NAME_FIELD",
    "OCTET",
    "DocxPicturePartitioner",
    "EmailAttachment",
    "EmailParts",
    "PptxPicturePartitioner",
    "describe_image",
    "email_images",
    "epub_image_for_url",
    "epub_images",
    "image_data",
    "image_element",
    "image_from_element",
    "install_picture_partitioners",
    "parse_data_uri",
    "pdf_images",
    "split_email",
    "with_trailing_images",
]
