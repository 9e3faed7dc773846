# lwsconf developer entry points. Every target creates .venv and installs from PyPI on its own.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2

.PHONY: conformance test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## conformance: the suite against the embedded sim cluster and the reference implementation; writes reports/
# The reference claims every feature (on clusters without MutatingAdmissionPolicy v1 the UniquePerReplica
# tests become NOT_SUPPORTED on their own: lwsconf/reconciler/README.md, choice 3).
CONFORMANCE_CLAIMS ?= --all-features
conformance: $(STAMP)
	$(PY) -m pytest conformance -n $(PYTEST_WORKERS) $(CONFORMANCE_CLAIMS)

## test: the project's own checks: lint, types, import layers, unit and integration tests, and the conformance suite
test: lint typecheck unit conformance

lint: $(STAMP)
	$(VENV)/bin/ruff check lwsconf fixtures conformance tests bench
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS) tests

## bench: throughput and memory figures, written to bench/results.json
bench: $(STAMP)
	$(PY) -m bench.apiserver --out bench/results.json
	$(PY) -m bench.cluster --out bench/results.json
	$(PY) -m bench.reconciler --out bench/results.json
	$(PY) -m bench.interrupts --out bench/results.json
	$(PY) -m bench.fuzz_apiserver --out bench/results.json
	$(PY) -m bench.controlplane --out bench/results.json

clean:
	rm -rf $(VENV) reports/2* reports/latest .mypy_cache .ruff_cache
