"""The strategy partition() really runs: never one that reaches for a model hub.

A family whose documents may lack a text layer (Format.strategy: PDF, images) says what auto,
fast or ocr_only run as for a document; hi_res runs only with local layout-model weights. Every
other family's parsers read text: they run as fast whatever was asked.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .model import ConfigError, DecoderConfig

# The setting that points unstructured-inference at local layout-model weights.
LOCAL_WEIGHTS_SETTING = "UNSTRUCTURED_DEFAULT_MODEL_INITIALIZE_PARAMS_JSON_PATH"
_DEFAULT_LAYOUT_REPO = ("unstructured-io/yolo_x_layout", "yolox_l0.05.onnx")


def layout_weights_available() -> bool:
    """True when hi_res can load its layout model without reaching a model hub."""
    configured = os.environ.get(LOCAL_WEIGHTS_SETTING)
    if configured:
        return os.path.isfile(configured)
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(*_DEFAULT_LAYOUT_REPO)
        return isinstance(cached, str) and os.path.isfile(cached)
    except (ImportError, ValueError, OSError):  # no huggingface_hub, or no usable cache: no weights
        return False


def resolve(choose: Callable[[str, bytes], str] | None, config: DecoderConfig, data: bytes) -> str:
    """The strategy a document is parsed with when `config.strategy` is asked; `choose` is its
    family's rule (Format.strategy), None for a family whose parsers read text."""
    asked = config.strategy
    if choose is None:
        return "fast"
    if asked == "hi_res":
        if not layout_weights_available():
            raise ConfigError(
                f"strategy hi_res needs local layout-model weights and none are installed; "
                f"set {LOCAL_WEIGHTS_SETTING} to a JSON file naming a local model_path, or use auto/fast/ocr_only"
            )
        return "hi_res"
    return choose(asked, data)


def notes(config: DecoderConfig, strategy: str) -> list[str]:
    """What the decode records when the strategy run is not the one asked for (or auto chose it)."""
    if config.strategy == "auto" or strategy != config.strategy:
        return [f"strategy {config.strategy} ran as {strategy}"]
    return []
