# `make run` scores the bundled sample and `make try` runs the pipeline on tiny models: they set up .venv
# with what the main job needs (the core and `q2 serve`: `make setup-core`). `make test` runs every test,
# `make test-fast` the unit tests and doctests (-m "not slow": no subprocess, ParlAI, Ray, browser or docs
# run); `make lint` runs ruff (lint and format check) and mypy (settings in pyproject.toml), seconds. These
# add to .venv what the tests need: every front-end's framework (`make setup`).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q --disable-pip-version-check

# What Guardrails AI 0.11 imports (its own requirements less litellm, openai, typer, click and pip: its
# LLM calls and command line, which Q²'s validator does not use), at its own ranges.
GUARDRAILS_AI_NEEDS := 'guardrails-ai-types>=0.4.0' 'guardrails-hub-types>=0.0.4,<0.1.0' 'pydash>=8,<9' \
	'pyjwt>=2.4,<3' 'rstr>=3,<4' 'faker>=25.2,<38' 'diff-match-patch>=20230430,<20241101' \
	'opentelemetry-sdk>=1.24,<2' 'opentelemetry-exporter-otlp-proto-http>=1.24,<2' \
	'opentelemetry-exporter-otlp-proto-grpc>=1.24,<2' 'jsonref>=1,<2' 'semver>=3,<4'
# What DeepEval's evaluation imports: its own requirements less pytest's plugins, posthog, grpcio, pyfiglet,
# questionary, portalocker and tabulate (its command line, exporters and reports), and less click<8.4,
# which clashes with huggingface_hub 1.x (click>=8.4.2): DeepEval's command line (typer) gets the installed one
DEEPEVAL_NEEDS := aiohttp jinja2 nest-asyncio openai 'opentelemetry-api>=1.24,<2' \
	'opentelemetry-sdk>=1.24,<2' 'pydantic>=2.11.7,<3' 'pydantic-settings>=2.10.1,<3' \
	'python-dotenv>=1.1.1,<2' 'requests>=2.31,<3' 'rich>=13.6,<15' 'tenacity>=8,<=10' \
	'tqdm>=4.66.1,<5' 'typer>=0.9,<1'

.PHONY: setup setup-core run try test test-fast lint bench clean browser conformance docs

# The core and `q2 serve` (FastAPI, uvicorn, Prometheus metrics, Ray Serve): what `make run` and `make try` need.
setup-core: $(VENV)/.core-installed

$(VENV)/.core-installed: setup.cfg pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) torch==2.13.0
	$(PIP) -e '.[serve]'
	touch $@

# What the tests need: every extra, each framework beside the stack (docs/extras.md: each extra alone).
setup: $(VENV)/.installed

$(VENV)/.installed: $(VENV)/.core-installed harness-pins.txt
	# the newest versions the ranges allow (transformers 5, huggingface_hub 1.x, gradio, Ray for `q2 score --ray`);
	# the lint extra: ruff and mypy at pinned versions (`make lint`, .pre-commit-config.yaml)
	$(PIP) -e '.[test,ray,lint]'
	# the evaluation harnesses (lm-eval, Inspect AI, ragas: docs/lm-eval.md, inspect.md, ragas.md), with
	# torch, transformers, tokenizers, datasets and evaluate held at the versions just installed, and the
	# versions the extras resolve to (harness-pins.txt: without them pip backtracks for ten minutes)
	$(PY) -m pip freeze | grep -iE '^(torch|transformers|tokenizers|datasets|evaluate|huggingface.hub|numpy)==' > $(VENV)/harness-constraints.txt
	$(PIP) -c $(VENV)/harness-constraints.txt -c harness-pins.txt -e '.[harness]'
	# the guardrail frameworks' plug-ins (docs/guardrails.md): NeMo Guardrails under the same constraints;
	# Guardrails AI pins typer<0.20 and click<9 (for its command line) and openai>=2 (ragas' instructor
	# holds openai<2): its runtime needs now, guardrails-ai itself without its pins at the end
	$(PIP) -c $(VENV)/harness-constraints.txt -c harness-pins.txt -e '.[nemo]' $(GUARDRAILS_AI_NEEDS)
	# LightEval (docs/lighteval.md), the stack held the same way; it downgrades nltk to its pin (3.9.1), before
	# ParlAI's step. (Offline, LightEval runs through `python -m q2_metric.harness.lighteval_offline`, which
	# leaves out its tinyBenchmarks tasks when their file is not downloaded: nothing is written into LightEval.)
	$(PIP) -c $(VENV)/harness-constraints.txt -c harness-pins.txt -e '.[lighteval]'
	# MLflow and what DeepEval's evaluation imports (docs/mlflow.md, docs/deepeval.md), held the same way:
	# mlflow-skinny with alembic and SQLAlchemy (a sqlite tracking store); DeepEval itself comes last
	$(PIP) -c $(VENV)/harness-constraints.txt -c harness-pins.txt -e '.[mlflow]' $(DEEPEVAL_NEEDS)
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
	# Guardrails AI without its pins (its runtime needs were installed above with the NeMo extra)
	$(PIP) --no-deps 'guardrails-ai==0.11.0'
	# DeepEval without its own requirements (--no-deps), which would add pytest plugins to every test run
	# (pytest-asyncio, -xdist, -repeat, -rerunfailures) and posthog (its telemetry): last, as pip reports
	# the requirements of what is installed when it next resolves (an `ERROR` line that would be expected)
	$(PIP) -c $(VENV)/harness-constraints.txt -c harness-pins.txt --no-deps 'deepeval>=4.3,<5'
	touch $@

# Headless Chromium for the Space's browser test (Debian's package; needs root for apt-get).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
	  >/dev/null; } || echo "chromium is not installed (apt-get install chromium): the Space's browser test will be skipped"

# Without the paper's models (offline, not downloaded) it stops with one sentence pointing to `make try`.
run: setup-core
	@$(VENV)/bin/q2 demo

# The whole pipeline without the paper's weights: small random models, built once (scores meaningless).
try: setup-core
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
