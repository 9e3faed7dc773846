# lwsconf developer entry points. Every target creates .venv and installs from PyPI on its own.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2

.PHONY: conformance test lint typecheck unit bench clean controlplane

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

## test: the project's own checks: lint, types, import layers, the real control plane's build (cached),
## unit and integration tests, and the conformance suite
test: lint typecheck controlplane unit conformance

## controlplane: build the real etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl of
## every tested Kubernetes release, and upstream's LWS manager (all cached under ~/.cache/lwsconf; seconds when
## up to date). Without Go it says so and the tests that need the binaries skip; LWSCONF_REQUIRE_GO=1 (set by
## .ci/run) makes a missing Go an error instead.
KUBERNETES_VERSIONS ?= 1.37.2 1.36.3
controlplane: $(STAMP)
	@if command -v go >/dev/null 2>&1 || [ "$${LWSCONF_REQUIRE_GO:-0}" = 1 ]; then \
	  for version in $(KUBERNETES_VERSIONS); do \
	    $(PY) -m lwsconf.cli controlplane build --kubernetes-version $$version || exit $$?; \
	  done; \
	  $(PY) -m lwsconf.cli upstream build || exit $$?; \
	else \
	  echo "make controlplane: no Go on PATH: not building the real control plane; tests on --cluster=local skip (install Go 1.26 to run them)"; \
	fi

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
	$(PY) -m bench.webhooks --out bench/results.json
	$(PY) -m bench.fidelity --out bench/results.json

clean:
	rm -rf $(VENV) reports/2* reports/latest .mypy_cache .ruff_cache
