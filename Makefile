# The two set-up commands: `make run` and `make test`. Both work on a fresh machine with Python 3.11+ and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install clean bench bench-startup browser postgres node

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/oz0 plugin install --example --quiet-if-current
	$(BIN)/oz0 serve

test: $(STAMP) browser postgres node
	$(BIN)/python -m pytest -q

# The console's browser tests drive Debian's chromium (never playwright's download); installed when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] && SUDO= || SUDO=sudo; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; } ; } || \
	  echo "make: chromium is not installed and apt-get is unavailable; the browser tests will be skipped"

# The replica and crash tests start a real Postgres from Debian's server binaries; installed when missing.
postgres:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  { command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] && SUDO= || SUDO=sudo; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql; } ; } || \
	  echo "make: the Postgres server is not installed and apt-get is unavailable; the replica tests will be skipped"

# The tests' Node tools (tests/support/node/package.json, pinned by its package-lock.json): the reference MCP server
# @modelcontextprotocol/server-everything and Redocly's OpenAPI linter. Skipped, and those tests with it, without npm.
NODE_TOOLS := tests/support/node
node:
	@if command -v npm >/dev/null 2>&1; then \
	  [ $(NODE_TOOLS)/node_modules/.package-lock.json -nt $(NODE_TOOLS)/package-lock.json ] || \
	  npm ci --prefix $(NODE_TOOLS) --no-audit --no-fund --loglevel=error; \
	else echo "make: Node.js and npm are not installed; the tests that need server-everything or Redocly will be skipped"; fi

bench: $(STAMP)
	$(BIN)/python bench/pipeline.py

# What each oz0 command costs to start, as a multiple of a bare python of the same venv.
bench-startup: $(STAMP)
	$(BIN)/python bench/startup.py

clean:
	rm -rf $(VENV) .pytest_cache
