# ud: universal document decoder as a Dagster asset graph.
# `make demo` and `make test` are the two entry points; both run `make setup` first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON_VERSION ?= 3.11
VENV := .venv
PY := $(VENV)/bin/python
export DO_NOT_TRACK := true
export UNSTRUCTURED_DISABLE_NOTICE := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
export UD_HOME ?= $(CURDIR)/.ud

APT_PACKAGES := libmagic1 poppler-utils tesseract-ocr tesseract-ocr-eng pandoc chromium libreoffice-writer-nogui libreoffice-impress-nogui tmux strace
PYTEST_ARGS ?=
LIBRARY_DOCUMENTS ?= 1000000

.PHONY: help setup system-packages venv demo dev lint test test-fast services-up services-down services-env cluster-up cluster-down cluster-env bench bench-setup trustgraph-code parity screenshots snapshot dagster-home clean

help:
	@echo "make demo    set up, then decode sample documents through the asset graph (embedded librarian)"
	@echo "make test    set up, lint and type-check, start MinIO + Cassandra on 127.0.0.1, run every test"
	@echo "make test-fast  the tests that need no server or browser, in parallel"
	@echo "make dev     open the Dagster UI on http://127.0.0.1:3000"
	@echo "make cluster-up  the multi-process deployment: Dagster on PostgreSQL + Celery workers, 3 Cassandra nodes, MinIO on 4 drives"
	@echo "make cluster-env  its exports (eval \"\$$(make -s cluster-env)\"); make cluster-down stops it"
	@echo "make bench   benchmark against the bare library and unstructured-ingest (CORPUS=DIR OUT=FILE)"
	@echo "make bench-setup  only the peer's own environment (.venv-ingest: unstructured-ingest)"
	@echo "make parity CORPUS=DIR  bare unstructured and the decoder side by side on every file of DIR"
	@echo "make screenshots  decode the samples in a fresh dagster dev, write docs/screenshots/*.png"

setup: system-packages venv dagster-home

# Debian packages unstructured shells out to; skipped when already installed.
system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# The locked environment (uv.lock), the project itself editable, and the offline spaCy model.
# --compile-bytecode: uv, unlike pip, installs no .pyc files, and where PYTHONDONTWRITEBYTECODE is
# set (this machine, most container images) Python never writes them either, so every fresh
# process (a run worker, the `ud` command, a test's subprocess) compiled unstructured and Dagster
# from source again: 11.1 s to import Dagster and warm the PDF parser, 4.5-4.9 s with bytecode.
venv:
	@command -v uv >/dev/null 2>&1 || python3 -m pip install -q "uv==0.13.9"
	@uv sync --frozen --extra dev --extra cluster --python $(PYTHON_VERSION) -q --compile-bytecode
	@$(PY) -c "import en_core_web_sm, magic" || { echo "setup: offline spaCy model or libmagic missing"; exit 1; }

dagster-home:
	@mkdir -p $(DAGSTER_HOME)
	@cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

demo: setup
	$(PY) -m ud_assets.cli.demo

dev: setup
	$(VENV)/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

services-up:
	@scripts/services/up.sh

# TrustGraph's own librarian and triple-store code (PyPI sources), which the interop tests run.
trustgraph-code:
	@scripts/trustgraph_code.sh

services-down:
	@scripts/services/down.sh

services-env:
	@scripts/services/env.sh

# The multi-process deployment (README, "More than one machine"): ports and folders of its own.
cluster-up: setup
	@scripts/cluster/up.sh

cluster-down:
	@scripts/cluster/down.sh

cluster-env:
	@scripts/cluster/env.sh

# Lint, format and types first: they take seconds and keep the interfaces true.
lint: setup
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(VENV)/bin/mypy

test: setup lint services-up trustgraph-code
	@eval "$$(scripts/services/env.sh)" && $(VENV)/bin/pytest $(PYTEST_ARGS)

# The inner loop: no servers, no browser, no load test, in parallel (a few minutes).
test-fast: setup lint
	@$(VENV)/bin/pytest -n 2 -m "not services and not browser and not slow and not cluster" $(PYTEST_ARGS)

# The asset-graph snapshot the tests compare with, rewritten only here (review the diff).
snapshot: setup
	$(PY) -m tests.defs.test_definitions

# The peer the bench compares with (bench.ingest): unstructured-ingest in a virtual environment of
# its own, so its dependencies never touch the project's. Constrained to uv.lock's versions, so it
# decodes with the same unstructured (and pdfminer, spaCy model, ...) as the graph; rebuilt when
# the lock changes. Everything is installed here: the bench runs it offline.
INGEST_VENV := .venv-ingest
INGEST_VERSION := 1.12.0
INGEST_STAMP := $(INGEST_VENV)/.installed-s3-bytecode
bench-setup: $(INGEST_STAMP)

$(INGEST_STAMP): uv.lock packaging/en_core_web_sm/pyproject.toml
	@command -v uv >/dev/null 2>&1 || python3 -m pip install -q "uv==0.13.9"
	@echo "bench-setup: unstructured-ingest $(INGEST_VERSION) into $(INGEST_VENV)"
	@rm -rf $(INGEST_VENV) && uv venv -q --python $(PYTHON_VERSION) $(INGEST_VENV)
	@uv export --frozen --no-hashes --no-emit-project --no-emit-local --format requirements.txt -q \
	  -o $(INGEST_VENV)/constraints.txt
	@# The peer's s3 destination (bench.ingest) needs s3fs with aiobotocore, which pins its own botocore:
	@# the project's boto pins are dropped from the peer's constraints (it decodes with the same unstructured).
	@sed -i -E '/^(boto3|botocore|s3transfer|s3fs)==/d' $(INGEST_VENV)/constraints.txt
	@# With bytecode, as pip would install it and as the project's own environment is (venv above).
	@unstructured=$$(sed -n 's/^unstructured==\([^ ;]*\).*/\1/p' $(INGEST_VENV)/constraints.txt); \
	uv pip install -q --compile-bytecode --python $(INGEST_VENV)/bin/python -c $(INGEST_VENV)/constraints.txt \
	  "unstructured-ingest[s3]==$(INGEST_VERSION)" "unstructured[all-docs]==$$unstructured" ./packaging/en_core_web_sm
	@DO_NOT_TRACK=true $(INGEST_VENV)/bin/python -c "import en_core_web_sm, magic, s3fs, unstructured_ingest" \
	  || { echo "bench-setup: unstructured-ingest, the offline spaCy model or libmagic missing"; exit 1; }
	@touch $@

CORPUS ?=
OUT ?= bench-out/bench.json
BENCH_ARGS ?=
bench: setup services-up bench-setup
	@eval "$$(scripts/services/env.sh)" && $(PY) -m bench $(if $(CORPUS),--corpus $(CORPUS)) --out $(OUT) $(BENCH_ARGS)
	@eval "$$(scripts/services/env.sh)" && $(PY) -m bench.library --backend both --documents $(LIBRARY_DOCUMENTS) --out $(dir $(OUT))library.json --into $(OUT)

# Bare unstructured and the decoder side by side on every file of CORPUS (a table and a summary).
parity: setup
	@test -n "$(CORPUS)" || { echo "usage: make parity CORPUS=DIR"; exit 2; }
	$(PY) -m ud_assets.cli parity $(CORPUS)

# The same environment as the browser tests (tests/ui/harness.py): a fresh dagster dev and librarian,
# the samples uploaded and decoded by the sensor; Chromium writes the asset graph and a PDF's partition page.
SCREENSHOTS ?= docs/screenshots
screenshots: setup
	$(PY) scripts/screenshots.py --out $(SCREENSHOTS)

clean:
	rm -rf .ud .dagster_home .pytest_cache bench-out
