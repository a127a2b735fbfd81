"""The benchmark of `make bench`: the asset graph against the bare library, on real MinIO + Cassandra.

Development only: not part of the installed package (pyproject installs ud_assets and resources).
Run it from the repository root, `python -m bench --help`; it shares its document generators with
the tests (tests/docgen.py). Modules: run (the measurement and its report), corpus (the generated
corpus), processes (the measured subprocesses), workers (what those subprocesses run), services
(what a run creates on MinIO + Cassandra), report (the arithmetic and the tables).
"""
