# Two entry points on a fresh machine: `make run` and `make test`.
# Each creates .venv and installs the project on first use.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench predictions wheel clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/simstack

test: $(STAMP)
	@# the report tests open pages in headless Chromium: install it when missing and allowed, else they skip
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; } \
		|| echo "chromium not installed (apt-get install -y chromium): browser tests will be skipped"
	$(BIN)/python -m pytest -q -n 2
	$(BIN)/simstack check

lint: $(STAMP)
	$(BIN)/ruff check simstack tests benchmarks hydra_plugins
	$(BIN)/mypy simstack hydra_plugins

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py

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

# Optional: the hot path's plain modules compiled to C extensions with mypyc (needs a C
# compiler); the same tests pass either way. `make pure` goes back to pure Python.
.PHONY: compiled pure
# mypyc builds in a copy (its setuptools run would trip over this flat layout) and the
# extensions are put beside their sources, where imports prefer them.
HOT := simstack/components/meter.py simstack/components/cpu.py simstack/runners.py simstack/replication.py
compiled: $(STAMP)
	rm -rf build/mypyc && mkdir -p build/mypyc && cp -r simstack build/mypyc/
	cd build/mypyc && $(abspath $(BIN))/mypyc $(HOT)
	cp build/mypyc/simstack/components/*.so simstack/components/ && cp build/mypyc/simstack/*.so simstack/
	cp build/mypyc/*__mypyc*.so .
	$(BIN)/simstack --version

pure:
	rm -f simstack/*.so simstack/components/*.so *__mypyc*.so
	rm -rf build/mypyc
	$(BIN)/simstack --version
