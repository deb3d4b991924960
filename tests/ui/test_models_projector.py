"""The Models page and vision models: a "Vision" badge on a model paired with a projector, the
choice of its projector (saved in the library), and a hub model downloaded with its projector.
Real tiny GGUFs (tests/support/tiny_vision.py), a real local HTTP hub, driven with pytest-qt."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.engine.models.library import NO_PROJECTOR, Library  # noqa: E402
from app.engine.models.tiny import write_tiny_gguf  # noqa: E402
from app.ui.models_page.library import VISION  # noqa: E402
from tests.support.fake_hub import FakeHub  # noqa: E402
from tests.support.tiny_vision import write_tiny_vision_pair  # noqa: E402
from tests.ui.models_page_fixture import open_models_page  # noqa: E402

REPO = "acme/Tiny-Eyes-GGUF"
MODEL_FILE = "Tiny-Eyes-Q4_K_M.gguf"
PROJECTOR_FILE = "mmproj-Tiny-Eyes-F16.gguf"


@pytest.fixture
def hub(tmp_path):
    src = tmp_path / "src"
    model, projector = write_tiny_vision_pair(src, name="tiny-eyes", seed=2)
    h = FakeHub()
    h.add_repo(REPO, {MODEL_FILE: model.read_bytes(), PROJECTOR_FILE: projector.read_bytes()}, downloads=3)
    h.start()
    yield h
    h.stop()


@pytest.fixture
def page(qtbot, hub, tmp_path):
    yield from open_models_page(qtbot, tmp_path, hub.url, size=(1400, 800), backoff_base=0.01)


def _refresh(qtbot, page) -> None:
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.refresh_library()


def _badge(page, name: str) -> str:
    return page.library_table.item(page.library_row(name), VISION).text()


def _choose(qtbot, page, name: str, data: str) -> None:
    """Pick ``data`` in the Projector combo of ``name``'s row, as a user would."""
    combo = page.projector_choice(page.library_row(name))
    index = combo.findData(data)
    assert index >= 0, [combo.itemData(i) for i in range(combo.count())]
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        combo.setCurrentIndex(index)
        combo.activated.emit(index)


def test_a_model_with_a_projector_has_the_vision_badge_and_the_projector_is_no_row(qtbot, page, tmp_path):
    lib = page.manager.library
    model, projector = write_tiny_vision_pair(lib.models_dir / "eyes", name="tiny-eyes")
    write_tiny_gguf(lib.models_dir / "text" / "plain.gguf", seed=4)
    _refresh(qtbot, page)
    assert page.library_table.rowCount() == 2
    with pytest.raises(KeyError):
        page.library_row(projector.name)  # a projector is not a chat model: no Load now
    assert _badge(page, "tiny-eyes") == "Vision" and _badge(page, "plain") == ""
    assert str(projector) in page.library_table.item(page.library_row("tiny-eyes"), VISION).toolTip()
    combo = page.projector_choice(page.library_row("tiny-eyes"))
    assert combo.currentData() == "auto" and projector.name in combo.currentText()


def test_choosing_and_clearing_a_projector_in_the_page_persists(qtbot, page, tmp_path):
    lib = page.manager.library
    model, projector = write_tiny_vision_pair(lib.models_dir / "eyes", name="tiny-eyes")
    plain = write_tiny_gguf(lib.models_dir / "text" / "plain.gguf", seed=4)
    _refresh(qtbot, page)

    _choose(qtbot, page, "plain", str(projector.resolve()))  # a projector of the library
    assert _badge(page, "plain") == "Vision"
    fresh = Library(models_dir=lib.models_dir, manifest_path=lib.manifest_path, hf_cache_dir=False)
    assert fresh.projector_for(plain) == str(projector.resolve())

    _choose(qtbot, page, "tiny-eyes", "none")  # text only, although its mmproj is beside it
    assert _badge(page, "tiny-eyes") == ""
    assert fresh.projector_for(model) == NO_PROJECTOR
    assert page.projector_choice(page.library_row("tiny-eyes")).currentData() == "none"

    _choose(qtbot, page, "tiny-eyes", "auto")
    assert _badge(page, "tiny-eyes") == "Vision" and fresh.projector_for(model) is None


def test_a_chat_model_chosen_as_projector_is_refused_with_a_message(qtbot, page):
    lib = page.manager.library
    write_tiny_vision_pair(lib.models_dir / "eyes", name="tiny-eyes")
    plain = write_tiny_gguf(lib.models_dir / "text" / "plain.gguf", seed=4)
    _refresh(qtbot, page)
    m = page.library.models[page.library_row("tiny-eyes")]
    page.library.choose_projector(m, str(plain))
    assert "not a projector" in page.status_label.text()
    assert lib.projector_for(m.path) is None


def test_downloading_a_vision_model_downloads_its_projector_too(qtbot, page, hub):
    page.search_edit.setText("eyes")
    with qtbot.waitSignal(page.sig_search_done, timeout=30_000):
        page.search_button.click()
    with qtbot.waitSignal(page.sig_files_done, timeout=30_000):
        page.results_list.setCurrentRow(0)
    t = page.files_table
    rows = {t.item(r, 0).text(): r for r in range(t.rowCount())}
    model_row = next(r for text, r in rows.items() if text.startswith("Tiny-Eyes-Q4_K_M"))
    proj_row = rows["mmproj-Tiny-Eyes-F16"]
    assert "vision" in t.item(model_row, 0).text() and PROJECTOR_FILE in t.item(model_row, 0).toolTip()
    assert t.item(proj_row, 4).text() == "projector"
    assert page.recommended_row == model_row  # never the projector

    t.cellWidget(model_row, 5).click()
    assert PROJECTOR_FILE in page.status_label.text()
    # the page lists the model as soon as its file is here, the projector beside it a moment before
    # the download pairs them ("chosen"): wait for the pairing
    qtbot.waitUntil(
        lambda: (
            bool(page.library.models)
            and _badge(page, "Tiny-Eyes-Q4_K_M") == "Vision"
            and page.library.models[0].projector_source == "chosen"
        ),
        timeout=60_000,
    )
    assert len(page._rows) == 2 and hub.count("GET", f"/_cdn/{REPO}/{PROJECTOR_FILE}") == 1
    (local,) = page.library.models
    assert local.projector.name == PROJECTOR_FILE and local.projector_source == "chosen"
    assert page.manager.library.projector_for(local.path) == str(local.projector)
    qtbot.waitUntil(lambda: t.cellWidget(proj_row, 5).text() == "Downloaded", timeout=30_000)
