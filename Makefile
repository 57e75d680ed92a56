# Two entry points on a fresh machine: `make run` and `make test`.
# Each creates .venv and installs the project on first use.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check-fast lint bench bench-native bench-otel predictions wheel clean

# The install compiles the hot path with mypyc when it can (hatch_build.py), else installs
# pure Python; --version says which. $(HOTPATH) recompiles when a compiled module's source
# changes, and the native kernel (simstack/engine/eventloop.c) when its source does (a stale build
# is never run anyway: simstack/resources/hotpath.py and simstack/engine/kernel.py pass it over).
$(STAMP): pyproject.toml hatch_build.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/simstack --version
	touch $(STAMP) $(HOTPATH)

HOTPATH := $(VENV)/.hotpath
OTEL := .venv-otel/.installed
HOT := $(shell sed -n '/hooks.custom\]/,/^\]/s/^ *"\(simstack\/.*\.py\)",*$$/\1/p' pyproject.toml)
# On a clean clone the stamp's install has just built both (make decided before it ran that this
# target was missing): build again only for a source newer than the build.
$(HOTPATH): $(STAMP) $(HOT) simstack/engine/eventloop.c
	@if [ ! -f $@ ] || [ -n "$$(find $(HOT) simstack/engine/eventloop.c -newer $@)" ]; then \
		$(BIN)/pip install --quiet --no-deps --no-build-isolation -e . && $(BIN)/simstack --version; fi
	touch $@

run: $(HOTPATH)
	$(BIN)/simstack

# What runs a second time on the other build: the fingerprints, which hold every model's tables
# bit for bit on each kernel (on SimPy's through the pure-Python hot path), and the test that the
# build compiled what it says (and the compile counts only the pure build can patch). The other
# engine tests draw the same numbers on both builds.
BOTH_BUILDS := tests/engine/test_fingerprints.py tests/engine/test_hotpath.py tests/engine/test_replica_compile.py

test: $(HOTPATH) $(OTEL)
	@# the report tests open pages in headless Chromium: install it when missing and allowed, else they skip
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; } \
		|| echo "chromium not installed (apt-get install -y chromium): browser tests will be skipped"
	@# the whole suite on the installed build (compiled where there is a C compiler), then the
	@# engine tests on pure Python; a compiler that failed to build the hot path fails the run
	@$(BIN)/simstack --version
	@# the real-system test's traced service runs in .venv-otel (opentelemetry-sdk, never simstack's dependency)
	SIMSTACK_OTEL_PYTHON=$(CURDIR)/.venv-otel/bin/python $(BIN)/python -m pytest -q -n 2 -m "not long" --durations=25
	@if $(BIN)/simstack --version | grep -q "hot path: compiled"; then \
		echo "the fingerprints again on the pure-Python hot path:"; \
		SIMSTACK_HOTPATH=pure $(BIN)/python -m pytest -q -n 2 -m "not slow" $(BOTH_BUILDS); \
	elif $(BIN)/simstack --version | grep -q "mypyc failed"; then \
		echo "a C compiler is here but mypyc failed: pip install -v --no-deps --no-build-isolation -e . shows why"; exit 1; \
	else echo "compiled pass skipped: $$($(BIN)/simstack --version)"; fi

# The long tier make test leaves out (CI's 20 minutes): a three-node Ray cluster with the wheel,
# sweeps that lose workers, the page on a Ray cluster, the M/M/3 interval-coverage grid.
.PHONY: test-long
test-long: $(HOTPATH)
	$(BIN)/python -m pytest -q -n 2 -m long

# The quick tier, before a commit: every test not marked slow (facility back-tests,
# calibrations, report pages in a browser, notebooks, Ray, the wheel), on the installed build.
check-fast: $(HOTPATH)
	$(BIN)/python -m pytest -q -n 2 -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check simstack tests benchmarks hydra_plugins hatch_build.py
	$(BIN)/mypy simstack hydra_plugins

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py

# The native peer (LINE's LDES) lives in its own environment, never in simstack's.
PEERS := .venv-peers/.installed
$(PEERS):
	$(PY) -m venv .venv-peers
	.venv-peers/bin/pip install --quiet line-solver==3.0.8.0
	touch $@

# simstack against LDES and a C++ heap loop, side by side (benchmarks/README.md, Native peer).
bench-native: $(HOTPATH) $(PEERS)
	$(BIN)/python benchmarks/native_peer.py --facilities

# The real system in the loop (benchmarks/README.md, A real system in the loop): the traced
# service runs in an environment of its own with opentelemetry-sdk, never in simstack's.
$(OTEL):
	$(PY) -m venv .venv-otel
	.venv-otel/bin/pip install --quiet opentelemetry-sdk
	touch $@

bench-otel: $(HOTPATH) $(OTEL)
	SIMSTACK_OTEL_PYTHON=.venv-otel/bin/python $(BIN)/python benchmarks/otel_real_system.py $(ARGS)

# Every model's committed predictions.csv, rebuilt (long: see each model's README).
predictions: $(STAMP)
	$(BIN)/simstack predict model=cms_conditions
	$(BIN)/simstack predict model=tango jobs=2
	$(BIN)/simstack predict model=slac_bsa --jobs 2
	$(BIN)/simstack predict model=lhcb_hlt

# Every model's report, reports/<model>.html (about 8 minutes in all: docs/studies.md, Reports).
.PHONY: reports
reports: $(STAMP)
	for m in pipeline cms_conditions gsi_fair slac_bsa tango; do $(BIN)/simstack report model=$$m || exit 1; done

# A wheel with the configs and bundled models, for machines without this repository.
wheel: $(STAMP)
	$(BIN)/python -m build --wheel --no-isolation

# JupyterLab and Jupytext into .venv (once), then the notebook scripts open as notebooks:
# the default viewer for .py files is set in .venv's JupyterLab settings, not in your home.
.PHONY: notebook
NOTEBOOK ?= notebooks/capacity_planning.py
notebook: $(VENV)/.notebook
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(NOTEBOOK)

$(VENV)/.notebook: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,notebook]'
	$(BIN)/jupytext-config --settings-file $(VENV)/share/jupyter/lab/settings/overrides.json set-default-viewer python
	touch $@

clean:
	rm -rf $(VENV) outputs multirun dist

# The hot path rebuilt in place: compiled with mypyc (needs a C compiler, else pure with a
# notice), or `make pure` for pure Python (SIMSTACK_HOTPATH=pure runs the sources of either).
.PHONY: compiled pure
compiled: $(STAMP)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/simstack --version
	touch $(HOTPATH)

pure: $(STAMP)
	SIMSTACK_HOTPATH=pure $(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/simstack --version
	touch $(HOTPATH)
