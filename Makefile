# `make run` scores the bundled sample; `make test` runs the tests. Both set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q --disable-pip-version-check

.PHONY: setup run test bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) torch==2.13.0
	# The tests cover the optional Ray front-end (`q2 score --ray`) too.
	$(PIP) -e '.[test,ray]'
	# ParlAI 1.7.2's pins clash with modern transformers/datasets: install it without them,
	# plus the runtime needs it really has (never a dependency of setup.cfg).
	$(PIP) --no-deps parlai==1.7.2
	$(PIP) iopath 'setuptools>=77,<81' Pillow nltk scikit-learn
	touch $@

run: setup
	$(VENV)/bin/q2 demo

test: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

bench: setup
	HF_HUB_OFFLINE=1 $(PY) benchmarks/bench_speed.py

clean:
	rm -rf $(VENV)
