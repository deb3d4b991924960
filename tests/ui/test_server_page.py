"""The Server page: start, stop, a busy port says so, requests appear in the log, settings persist,
and the window has the page in its sidebar."""

from __future__ import annotations

import socket

import httpx
import pytest
from PySide6.QtCore import Qt

from tests.server.conftest import TOOLS, write_loop_model


@pytest.fixture
def page(make_server_page, tmp_path):
    return make_server_page(write_loop_model(tmp_path), n_ctx=4096)


def test_start_log_rows_and_stop(qtbot, page):
    from app.storage.settings import load_settings
    from app.ui.server_page import LOG_COLUMNS

    qtbot.mouseClick(page.toggle, Qt.MouseButton.LeftButton)
    assert page.running and page.toggle.text() == "Stop server"
    url = page.address.text()
    assert url == f"http://127.0.0.1:{page.port.value()}"
    assert url in page.snippet_views["curl"].toPlainText()
    assert f'base_url="{url}/v1"' in page.snippet_views["OpenAI (Python)"].toPlainText()
    assert load_settings()[0].server.enabled is True

    r = httpx.post(
        url + "/v1/chat/completions",
        timeout=60,
        json={"model": "loop-hermes", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS},
    )
    assert r.status_code == 200
    httpx.get(url + "/v1/nothing-here", timeout=10)
    qtbot.waitUntil(lambda: page.log_table.rowCount() == 2, timeout=30_000)
    row = {LOG_COLUMNS[c]: page.log_table.item(0, c).text() for c in range(len(LOG_COLUMNS))}
    assert row["Method"] == "POST" and row["Path"] == "/v1/chat/completions" and row["Model"] == "loop-hermes"
    assert row["Tool calls"] == "1" and row["Status"] == "200" and "+" in row["Tokens"]
    assert row["Error"] == "" and row["Duration"].endswith((" ms", " s"))
    missing = {LOG_COLUMNS[c]: page.log_table.item(1, c) for c in range(len(LOG_COLUMNS))}
    assert missing["Status"].text() == "404" and missing["Status"].toolTip() == "404 Not Found"
    assert missing["Error"].text() == "there is no endpoint /v1/nothing-here"
    assert page.model_label.text() == "loop-hermes"

    page.toggle.click()
    assert not page.running and page.toggle.text() == "Start server" and page.status.text() == "Stopped"
    assert load_settings()[0].server.enabled is False
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/v1/models", timeout=5)


def test_busy_port_shows_a_clear_message(page):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        page.port.setValue(taken.getsockname()[1])
        assert page.start() is False
    assert not page.running and not page.toggle.isChecked()
    assert f"Port {page.port.value()} is already in use" in page.status.text()


def test_api_key_is_required_once_set(qtbot, page):
    page.api_key.setText("k-123")
    page.api_key.editingFinished.emit()
    assert page.start()
    url = page.address.text()
    assert httpx.get(url + "/v1/models", timeout=10).status_code == 401
    assert httpx.get(url + "/v1/models", headers={"x-api-key": "k-123"}, timeout=10).status_code == 200
    assert 'api_key="k-123"' in page.snippet_views["Anthropic (Python)"].toPlainText()
    assert page.settings.server.api_key == "k-123"


def test_window_has_the_server_page(make_window):
    w = make_window(None)
    assert "server" in w.pages
    page = w.show_page("server")
    assert page.objectName() == "serverPage" and not page.running
