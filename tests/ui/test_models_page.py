"""The Models page against a real local hub (HTTP on 127.0.0.1) and real files, driven with pytest-qt."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from app.engine.models.tiny import write_tiny_gguf  # noqa: E402
from tests.support.fake_hub import FakeHub  # noqa: E402
from tests.ui.models_page_fixture import open_models_page  # noqa: E402

REPO = "acme/Tiny-Chat-GGUF"
SCREENSHOT = Path(__file__).resolve().parents[2] / ".screenshots" / "models_page.png"
TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


@pytest.fixture
def hub(tmp_path):
    def model(seed: int, **kw) -> bytes:
        return write_tiny_gguf(
            tmp_path / f"src{seed}.gguf", seed=seed, chat_template=TEMPLATE, **kw
        ).read_bytes()

    h = FakeHub()
    h.add_repo(
        REPO,
        {
            "Tiny-Chat-Q4_K_M.gguf": model(0),
            "Tiny-Chat-Q8_0.gguf": model(1, embedding_length=256, feed_forward_length=512),
            "Tiny-Chat-F16-00001-of-00002.gguf": model(2),
            "Tiny-Chat-F16-00002-of-00002.gguf": model(3),
        },
        downloads=1234,
        likes=56,
    )
    h.add_repo("acme/Other-Tiny-GGUF", {"other-Q4_0.gguf": model(4)}, downloads=99)
    h.start()
    yield h
    h.stop()


@pytest.fixture
def page(qtbot, hub, tmp_path):
    yield from open_models_page(qtbot, tmp_path, hub.url, backoff_base=0.01)


def search(qtbot, page, text="tiny"):
    page.search_edit.setText(text)
    with qtbot.waitSignal(page.sig_search_done, timeout=30_000):
        page.search_button.click()


def open_repo(qtbot, page, row=0):
    with qtbot.waitSignal(page.sig_files_done, timeout=30_000):
        page.results_list.setCurrentRow(row)


def test_search_lists_repos_and_files_with_fit_badges(qtbot, page):
    search(qtbot, page)
    assert page.results_list.count() == 2
    assert page.results_list.item(0).text().startswith(REPO)
    open_repo(qtbot, page)
    t = page.files_table
    assert t.rowCount() == 3
    names = [t.item(r, 0).text() for r in range(3)]
    assert any("(2 parts)" in n for n in names)
    assert {t.item(r, 2).text() for r in range(3)} == {"Q4_K_M", "Q8_0", "F16"}
    assert {t.item(r, 4).text() for r in range(3)} == {"fits"}


def test_download_progress_then_load_from_library(qtbot, page, hub):
    search(qtbot, page)
    open_repo(qtbot, page)
    row = next(r for r in range(3) if page.files_table.item(r, 0).text() == "Tiny-Chat-Q8_0")
    with qtbot.waitSignal(page.sig_library_done, timeout=30000, check_params_cb=lambda: bool(page._local)):
        page.files_table.cellWidget(row, 5).click()
    (tid,) = page._rows
    assert page.download_bar(tid).value() == 1000
    assert page.download_status(tid) == "done"
    lrow = page.library_row("Tiny-Chat-Q8_0")
    assert page.library_table.item(lrow, 1).text() == "llama"
    assert page.library_table.item(lrow, 6).text() == "yes"
    assert page.library_table.item(lrow, 8).text() == "downloaded"
    with qtbot.waitSignal(page.sig_load_requested, timeout=30_000) as blocker:
        page.load_button(lrow).click()
    assert blocker.args[0].endswith("Tiny-Chat-Q8_0.gguf") and Path(blocker.args[0]).is_file()


def test_pause_resume_and_cancel_buttons(qtbot, page, hub):
    hub.hold_after["Tiny-Chat-Q8_0.gguf"] = 100_000
    search(qtbot, page)
    open_repo(qtbot, page)
    row = next(r for r in range(3) if page.files_table.item(r, 0).text() == "Tiny-Chat-Q8_0")
    page.files_table.cellWidget(row, 5).click()
    qtbot.waitUntil(lambda: hub.held.is_set() and bool(page._rows), timeout=30_000)
    (tid,) = page._rows
    # The hub has sent its bytes; wait until the page has read some of them (a loaded machine can
    # be slower to read than the hub to send), so that the pause lands mid-file.
    qtbot.waitUntil(lambda: page.download_bar(tid).value() > 0, timeout=30_000)
    page.download_button(tid, "pause").click()
    hub.release.set()
    qtbot.waitUntil(lambda: page.download_status(tid) == "paused", timeout=30_000)
    assert page.download_button(tid, "pause").text() == "Resume"
    assert 0 < page.download_bar(tid).value() < 1000
    hub.hold_after["Tiny-Chat-Q8_0.gguf"] = 10**9  # nothing held any more
    with qtbot.waitSignal(page.sig_library_done, timeout=30000):
        page.download_button(tid, "pause").click()
    qtbot.waitUntil(lambda: page.download_status(tid) == "done", timeout=30_000)
    assert not page.download_button(tid, "cancel").isEnabled()


def test_offline_message_and_library_keeps_working(qtbot, page, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    search(qtbot, page)
    assert "offline mode" in page.status_label.text()
    assert page.results_list.count() == 0
    src = write_tiny_gguf(tmp_path / "mine.gguf", chat_template=TEMPLATE)
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.import_file(src)
    row = page.library_row("mine")
    assert page.library_table.item(row, 8).text() == "imported"
    assert page.load_button(row).isEnabled()
    # deleting a file Callisto did not download asks first; answering no keeps it
    asked = []
    page.confirm = lambda title, text: asked.append(text) or False
    page.delete_button(row).click()
    assert asked and "did not download" in asked[0] and src.exists()


def test_hub_failure_is_shown(qtbot, page, hub):
    hub.api_garbage = True
    search(qtbot, page)
    assert "not understood" in page.status_label.text()


def test_screenshot_with_results_and_library(qtbot, page, hub, tmp_path):
    search(qtbot, page)
    open_repo(qtbot, page)
    row = next(r for r in range(3) if page.files_table.item(r, 0).text() == "Tiny-Chat-Q4_K_M")
    with qtbot.waitSignal(page.sig_library_done, timeout=30000):
        page.files_table.cellWidget(row, 5).click()
    hub.hold_after["Tiny-Chat-Q8_0.gguf"] = 2_000_000
    row = next(r for r in range(3) if page.files_table.item(r, 0).text() == "Tiny-Chat-Q8_0")
    page.files_table.cellWidget(row, 5).click()
    qtbot.waitUntil(
        lambda: len(page._rows) == 2 and 0 < page.download_bar(max(page._rows)).value(), timeout=30_000
    )
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert page.grab().save(str(SCREENSHOT))
    hub.release.set()
