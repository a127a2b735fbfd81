"""Helpers of `python -m ud_assets.bench`: the generated corpus, the measuring subprocesses, the report."""
