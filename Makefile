# Every target creates .venv on first use; nothing else needs to be installed by hand.
# `demo` installs the tool alone; `test`, `fuzz` and `bench` add the test oracles (JAX/XLA).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOL := $(VENV)/.installed-tool
ORACLES := $(VENV)/.installed-test

.PHONY: demo test lint fuzz bench clean chromium

$(TOOL): pyproject.toml setup.py $(wildcard src/meshdiag/ir/fast/*.[ch]) src/meshdiag/ir/fast/words.py
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(TOOL)

$(ORACLES): $(TOOL)
	$(BIN)/pip install -q -e '.[test]'
	touch $(ORACLES)

demo: $(TOOL)
	$(BIN)/meshdiag inspect fixtures/seed/distorted_mesh.mlir --mesh batch=2,model=4 --target tt-mlir

# the `inspect --html` screenshot test draws the page in headless Chromium (Debian's package)
chromium:
	@command -v chromium >/dev/null || { \
	  echo "installing Chromium for the inspect --html screenshot test (apt-get)"; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends chromium; }

test: $(ORACLES) chromium
	$(BIN)/ruff check src tests bench fuzz
	$(BIN)/python -m pytest

lint: $(ORACLES)
	$(BIN)/ruff check src tests bench fuzz
	$(BIN)/ruff format --check src tests bench fuzz

# atheris stays out of the test dependencies: installed here only, for the fuzz runs
FUZZ_TIME ?= 60
fuzz: $(ORACLES)
	$(BIN)/pip install -q atheris
	$(BIN)/python fuzz/run.py -t $(FUZZ_TIME)

bench: $(ORACLES)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache
