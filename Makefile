# `make run` scores the bundled sample; `make test` runs every test, `make test-fast` the unit tests and
# doctests (-m "not slow": no subprocess, ParlAI, Ray, browser or docs run); `make lint` runs ruff (lint
# and format check) and mypy (settings in pyproject.toml), seconds. All set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q --disable-pip-version-check

.PHONY: setup run try test test-fast lint bench clean browser conformance docs

setup: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml harness-pins.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) torch==2.13.0
	# the newest versions the ranges allow (transformers 5, huggingface_hub 1.x, gradio, Ray for `q2 score --ray`);
	# the lint extra: ruff and mypy at pinned versions (`make lint`, .pre-commit-config.yaml)
	$(PIP) -e '.[test,ray,lint]'
	# the evaluation harnesses (lm-eval, Inspect AI, ragas: docs/lm-eval.md, inspect.md, ragas.md), with
	# torch, transformers, tokenizers, datasets and evaluate held at the versions just installed, and the
	# versions the extras resolve to (harness-pins.txt: without them pip backtracks for ten minutes)
	$(PY) -m pip freeze | grep -iE '^(torch|transformers|tokenizers|datasets|evaluate|huggingface.hub|numpy)==' > $(VENV)/harness-constraints.txt
	$(PIP) -c $(VENV)/harness-constraints.txt -c harness-pins.txt -e '.[harness]'
	# `q2 serve` (docs/serve.md): FastAPI, uvicorn, httpx (gradio brought them), prometheus-client and
	# Ray Serve, under the same constraints (nothing may pull another torch or transformers)
	$(PIP) -c $(VENV)/harness-constraints.txt -c harness-pins.txt -e '.[serve]'
	# ParlAI 1.7.2's pins clash with modern transformers/datasets: install the runtime needs it really
	# has, then ParlAI itself without its pins, last: pip checks conflicts only when it resolves
	# dependencies, so this prints no "dependency resolver" errors (`pip check` lists the pins: expected).
	$(PIP) iopath 'setuptools>=77,<81' Pillow nltk scikit-learn
	$(PIP) --no-deps parlai==1.7.2
	# the coreference extra (docs/coref.md), without letting it resolve torch or transformers again
	$(PIP) --no-deps 'fastcoref>=2.1.6,<3'
	touch $@

# Headless Chromium for the Space's browser test (Debian's package; needs root for apt-get).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
	  >/dev/null; } || echo "chromium is not installed (apt-get install chromium): the Space's browser test will be skipped"

# Without the paper's models (offline, not downloaded) it stops with one sentence pointing to `make try`.
run: setup
	@$(VENV)/bin/q2 demo

# The whole pipeline without the paper's weights: small random models, built once (scores meaningless).
try: setup
	$(VENV)/bin/q2 demo --tiny

test: setup browser
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

# The fast loop: tests/unit/ and the doctests, without the tests marked slow (all of tests/integration/).
test-fast: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -m "not slow"

# ruff's rules and format, then mypy over q2_metric/ and parlai_ext/ (pyproject.toml: [tool.ruff], [tool.mypy]).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: setup
	HF_HUB_OFFLINE=1 $(PY) benchmarks/bench_speed.py --size paper --n 16

# Token-for-token conformance with the released code on transformers 3.2 (not part of `make test`):
# builds .conformance/venv once, then compares on the annotated set and a torture set (~15-30 min).
conformance: setup
	HF_HUB_OFFLINE=1 $(PY) benchmarks/conformance.py

# The documentation site (MkDocs, Material theme) into site/; --strict: a broken link or any warning fails.
docs: setup $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	@echo "Built the documentation into site/ (open site/index.html)"

$(VENV)/.docs-installed: setup.cfg
	$(PIP) -e '.[docs]'
	touch $@

clean:
	rm -rf $(VENV) site
