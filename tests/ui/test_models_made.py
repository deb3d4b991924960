"""The Models page's pane of the models made over the API: a real server makes and copies models
through the official ollama client, the page (pytest-qt) shows them with what they set, and its
Delete removes a made model (never its file) for the server too."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from app.engine.models.tiny import write_tiny_gguf  # noqa: E402
from app.ui.models_page import ModelsPage  # noqa: E402
from tests.server.conftest import _start  # noqa: E402
from tests.ui.models_page_fixture import open_models_page  # noqa: E402


@pytest.fixture
def model_file(tmp_path) -> Path:
    return write_tiny_gguf(tmp_path / "files" / "tiny-chat.gguf", chat_template="{{ messages[0].content }}")


@pytest.fixture
def server(model_file) -> Iterator[object]:
    from app.server import ServerConfig, default_presets_path

    # the window's server (it offers the library) keeps made models where the page reads them
    assert ServerConfig(use_library=True).presets_file() == str(default_presets_path())
    files = [str(model_file)]
    yield from _start(
        ServerConfig(port=0, models=files, use_library=False, presets_path=str(default_presets_path()))
    )


@pytest.fixture
def page(qtbot, tmp_path) -> Iterator[ModelsPage]:
    yield from open_models_page(qtbot, tmp_path, "http://127.0.0.1:9")  # (no hub is asked)


def _rows(page: ModelsPage) -> list[list[str]]:
    t = page.made.table
    return [[t.item(r, c).text() for c in range(4)] for r in range(t.rowCount())]


def _refreshed(qtbot, page: ModelsPage) -> None:
    page.made.refresh()
    qtbot.waitUntil(lambda: not page._calls)


def test_the_page_shows_made_models_and_deletes_them_for_the_server(qtbot, page, server, model_file):
    import ollama

    assert page.made.isHidden()  # none made yet: no empty pane
    client = ollama.Client(host=server.url, timeout=60)
    client.create(
        model="helper", from_="tiny-chat", system="Be helpful.\nAlways.", parameters={"temperature": 0.3}
    )
    client.copy("helper", "helper-copy")
    _refreshed(qtbot, page)
    assert not page.made.isHidden()
    assert _rows(page) == [
        ["helper", "tiny-chat.gguf", "Be helpful.", "temperature 0.3"],
        ["helper-copy", "tiny-chat.gguf", "Be helpful.", "temperature 0.3"],
    ]
    assert page.made.table.item(0, 2).toolTip() == "Be helpful.\nAlways."

    asked: list[str] = []
    page.confirm = lambda title, text: asked.append(text) or False
    page.made.button("helper-copy").click()
    qtbot.waitUntil(lambda: not page._calls)
    assert asked and "tiny-chat.gguf" in asked[0] and len(_rows(page)) == 2  # cancelled: kept

    page.confirm = lambda title, text: True
    page.made.button("helper-copy").click()
    qtbot.waitUntil(lambda: len(_rows(page)) == 1)
    names = {m.model for m in client.list().models}
    assert "helper-copy" not in names and {"helper", "tiny-chat"} <= names  # the server sees it
    assert model_file.is_file()

    page.made.button("helper").click()
    qtbot.waitUntil(lambda: page.made.isHidden())
    assert "helper" not in {m.model for m in client.list().models}


def test_an_unreadable_file_of_made_models_is_said(qtbot, page):
    from app.server import default_presets_path

    default_presets_path().write_text("{not json", encoding="utf-8")
    _refreshed(qtbot, page)
    assert not page.made.isHidden() and page.made.table.rowCount() == 0
    assert "cannot be read" in page.status_label.text()
