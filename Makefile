# Quick start: `make demo`, then `make test`. Both set up .venv when needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BACKENDS := backends/cpu backends/cuda backends/hip
TEST_ARGS ?= -n 2

.PHONY: setup demo test clean

setup: $(STAMP)

$(STAMP): pyproject.toml $(foreach b,$(BACKENDS),$(b)/pyproject.toml) tests/fixtures/broken_backend/pyproject.toml scripts/setup.sh
	PYTHON=$(PYTHON) bash scripts/setup.sh
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/tour.py

test: $(STAMP)
	$(PY) -m pytest $(TEST_ARGS)

clean:
	rm -rf $(VENV)
