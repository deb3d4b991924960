"""The Models page on its own, as four suites open it: a library in the test's folder (no Hugging
Face cache), a hub client at ``hub_url``, shown at ``size``, its first background work done."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["open_models_page"]


def open_models_page(
    qtbot: Any, folder: Path, hub_url: str, *, size: tuple[int, int] = (1200, 800), **manager: Any
) -> Iterator[Any]:
    """Yield the page (``manager``: more ``ModelManager`` arguments); shut it down after."""
    from app.engine.models.hub import HubClient
    from app.engine.models.library import Library
    from app.engine.models.manager import ModelManager
    from app.ui.models_page import ModelsPage

    lib = Library(models_dir=folder / "models", manifest_path=folder / "lib.json", hf_cache_dir=False)
    w = ModelsPage(ModelManager(hub=HubClient(hub_url), library=lib, **manager))
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    qtbot.waitUntil(lambda: not w._calls)
    yield w
    w.shutdown()
