# Every target creates .venv on first use; nothing else needs to be installed by hand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint fuzz bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/meshdiag inspect fixtures/seed/distorted_mesh.mlir --mesh batch=2,model=4 --target tt-mlir

test: $(STAMP)
	$(BIN)/ruff check src tests bench fuzz
	$(BIN)/python -m pytest

# atheris stays out of the test dependencies: installed here only, for the fuzz runs
FUZZ_TIME ?= 60
fuzz: $(STAMP)
	$(BIN)/pip install -q atheris
	$(BIN)/python fuzz/run.py -t $(FUZZ_TIME)

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache
