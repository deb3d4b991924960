"""The load settings of every model loaded while a test runs (the real loader still loads it)."""

from __future__ import annotations

from typing import Any

__all__ = ["spy_on_loads"]


def spy_on_loads(monkeypatch: Any) -> list[Any]:
    """A list that gets the ``LoadSettings`` (None: none given) of each ``load_model`` call from
    now on in this process: the CLI's, the engine host's (the server's, the window's)."""
    import app.engine.llm as llm

    seen: list[Any] = []
    real = llm.load_model

    def spy(path: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("settings"))
        return real(path, **kwargs)

    monkeypatch.setattr(llm, "load_model", spy)
    return seen
