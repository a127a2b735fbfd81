"""Decoder options as Dagster run config: the spec's names and defaults. Choices, types and unknown keys are
rejected at launch; ranges and language codes when the step starts, before any work."""

from typing import Literal, cast

import dagster as dg
from pydantic import Field, field_validator, model_validator

from ud_assets.decoding.model import DecoderConfig
from ud_assets.processing.model import ChunkingOptions

# The one source of defaults: the core's option types (the CLI reads them too).
DECODER = DecoderConfig()
CHUNKING = ChunkingOptions()
# The choices as types, so the launchpad offers them; tests hold them equal to the core's tuples.
Strategy = Literal["auto", "fast", "hi_res", "ocr_only"]
SectionStrategy = Literal["whole-document", "heading", "element-type", "count", "size"]


class DecoderOptions(dg.Config):
    """Options of the universal decoder (editable in the launchpad)."""

    strategy: Strategy = Field(
        default=cast(Strategy, DECODER.strategy),
        description="Partitioning strategy; auto never reaches for a model hub.",
    )
    languages: str = Field(default=",".join(DECODER.languages), description="Comma-separated OCR language codes.")
    section_strategy: SectionStrategy = Field(
        default=cast(SectionStrategy, DECODER.section_strategy),
        description="How non-page formats are split into sections.",
    )
    section_element_count: int = Field(
        default=DECODER.section_element_count, gt=0, description="Elements per section for 'count'."
    )
    section_max_size: int = Field(
        default=DECODER.section_max_size, gt=0, description="Max characters per section for 'size'."
    )
    section_within_pages: bool = Field(
        default=DECODER.section_within_pages, description="Apply the section strategy inside pages too."
    )
    chunk_size: int = Field(default=CHUNKING.chunk_size, gt=0, description="Chunker: characters per chunk.")
    chunk_overlap: int = Field(
        default=CHUNKING.chunk_overlap, ge=0, description="Chunker: characters shared by consecutive chunks."
    )
    force: bool = Field(default=False, description="Decode again even when the current generation is up to date.")

    @field_validator("languages")
    @classmethod
    def _languages(cls, value: str) -> str:
        DecoderConfig(languages=tuple(value.split(",")))  # raises on an invalid code
        return value

    @model_validator(mode="after")
    def _overlap_below_size(self):
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self

    def to_decoder_config(self) -> DecoderConfig:
        return DecoderConfig.from_options(self)

    def to_chunking_options(self) -> ChunkingOptions:
        return ChunkingOptions(self.chunk_size, self.chunk_overlap)
