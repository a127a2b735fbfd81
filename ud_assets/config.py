"""Decoder options as Dagster run config: the spec's names and defaults. Choices, types and unknown keys are
rejected at launch; ranges and language codes when the step starts, before any work."""

from typing import Literal

import dagster as dg
from pydantic import Field, field_validator, model_validator

from ud_assets.decoding.model import DecoderConfig


class DecoderOptions(dg.Config):
    """Options of the universal decoder (editable in the launchpad)."""

    strategy: Literal["auto", "fast", "hi_res", "ocr_only"] = Field(
        default="auto", description="Partitioning strategy; auto never reaches for a model hub."
    )
    languages: str = Field(default="eng", description="Comma-separated OCR language codes.")
    section_strategy: Literal["whole-document", "heading", "element-type", "count", "size"] = Field(
        default="whole-document", description="How non-page formats are split into sections."
    )
    section_element_count: int = Field(default=20, gt=0, description="Elements per section for 'count'.")
    section_max_size: int = Field(default=4000, gt=0, description="Max characters per section for 'size'.")
    section_within_pages: bool = Field(default=False, description="Apply the section strategy inside pages too.")
    chunk_size: int = Field(default=2000, gt=0, description="Chunker: characters per chunk.")
    chunk_overlap: int = Field(default=100, ge=0, description="Chunker: characters shared by consecutive chunks.")
    force: bool = Field(default=False, description="Decode again even when the current generation is up to date.")

    @field_validator("languages")
    @classmethod
    def _languages(cls, value: str) -> str:
        DecoderConfig(languages=value)  # raises on an invalid code
        return value

    @model_validator(mode="after")
    def _overlap_below_size(self):
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})")
        return self

    def to_decoder_config(self) -> DecoderConfig:
        return DecoderConfig.from_options(self)
