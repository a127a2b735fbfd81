"""ud: the universal document decoder as a Dagster asset graph."""

import os as _os

# Every process that may import unstructured runs offline and untracked: unstructured's
# telemetry is off, its notice silenced, and Hugging Face libraries never reach a hub.
# onnxruntime (imported with unstructured's PDF and image partitioners) sends usage events to
# Microsoft from a thread of its own whatever DO_NOT_TRACK says (strace saw the DNS query for
# mobile.events.data.microsoft.com): ORT_DISABLE_TELEMETRY, read when it loads, switches that off.
for _name, _value in (
    ("DO_NOT_TRACK", "true"),
    ("UNSTRUCTURED_DISABLE_NOTICE", "1"),
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("ORT_DISABLE_TELEMETRY", "1"),
):
    _os.environ.setdefault(_name, _value)
