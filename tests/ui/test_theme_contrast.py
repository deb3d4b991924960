"""Light and dark themes: every label of every page and dialog is readable (WCAG contrast >= 4.5:1).

The check samples the rendered pixels: the window (or dialog) is grabbed as a person would see it,
and inside each visible label the most common colour is taken as its background and the pixel
that differs most from it as its text.
"""

from __future__ import annotations

from collections import Counter

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from app.storage.settings import Settings
from app.ui.theme import apply_theme

MIN_CONTRAST = 4.5
DONE_TIMEOUT = 30_000


def _luminance(rgb: tuple[int, int, int]) -> float:
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def label_contrast(img: QImage, x: int, y: int, w: int, h: int) -> float | None:
    """Contrast of the text against the background inside the rectangle; None if nothing is drawn."""
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(img.width(), x + w), min(img.height(), y + h)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return None
    counts: Counter[tuple[int, int, int]] = Counter()
    for yy in range(y0, y1):
        for xx in range(x0, x1):
            c = img.pixelColor(xx, yy)
            counts[(c.red(), c.green(), c.blue())] += 1
    background = counts.most_common(1)[0][0]
    return max(contrast(background, c) for c in counts)


def _labels(root: QWidget) -> list[QLabel]:
    return [
        lab
        for lab in root.findChildren(QLabel)
        if lab.isVisible() and lab.text().strip() and lab.width() > 4 and lab.height() > 4
    ]


def assert_labels_readable(root: QWidget, where: str) -> int:
    QApplication.processEvents()
    img = root.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    scale = img.width() / max(1, root.width())
    bad, checked = [], 0
    for lab in _labels(root):
        seen = lab.visibleRegion().boundingRect()  # the part not scrolled away or covered
        if seen.isEmpty():
            continue
        top_left = lab.mapTo(root, seen.topLeft())
        r = label_contrast(
            img,
            int(top_left.x() * scale),
            int(top_left.y() * scale),
            int(seen.width() * scale),
            int(seen.height() * scale),
        )
        if r is None:
            continue
        checked += 1
        if r < MIN_CONTRAST:
            bad.append(f"{lab.objectName() or type(lab.parent()).__name__}: {lab.text()[:40]!r} {r:.2f}:1")
    assert not bad, f"{where}: labels below {MIN_CONTRAST}:1 — " + "; ".join(bad)
    return checked


@pytest.fixture
def themed():
    app = QApplication.instance()
    style, pal, sheet = app.style().name(), app.palette(), app.styleSheet()

    def use(theme: str) -> None:
        apply_theme(app, theme)

    yield use
    apply_theme(app, "system")
    app.setStyle(style)
    app.setPalette(pal)
    app.setStyleSheet(sheet)


def _settings() -> Settings:
    s = Settings()
    s.sampling.max_tokens = 4
    return s


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_d42_every_page_and_dialog_is_readable_in_both_themes(
    qtbot, make_window, streaming_model, themed, theme
):
    themed(theme)
    w = make_window(streaming_model, settings=_settings())
    w.compose.setPlainText("Hello")
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        w.send()
    w.notices.show("load_error", "Could not load broken.gguf: not a GGUF model.", None, kind="error")
    w.chat.current_assistant().set_error("The reply failed: an example error.")
    w.tool_dock.setVisible(True)
    checked = assert_labels_readable(w, f"{theme} chat page")

    qtbot.waitUntil(lambda: w.model_bar.library_models is not None, timeout=DONE_TIMEOUT)
    w.page_stack.show_models_page()
    with qtbot.waitSignal(w.models_page().sig_library_done, timeout=DONE_TIMEOUT):
        w.models_page().refresh_library()
    checked += assert_labels_readable(w, f"{theme} models page")
    w.page_stack.show_chat_page()

    dlg = w.open_settings()
    qtbot.waitExposed(dlg)
    for i in range(dlg.tabs.count()):
        dlg.tabs.setCurrentIndex(i)
        checked += assert_labels_readable(dlg, f"{theme} settings tab {dlg.tabs.tabText(i)!r}")
    dlg.reject()

    box = w.menus.show_shortcuts()
    qtbot.waitExposed(box)
    checked += assert_labels_readable(box, f"{theme} shortcuts")
    box.close()
    assert checked >= 20  # the check really looked at the labels


def test_d42_contrast_check_fails_on_unreadable_text(qtbot):
    """The sampler itself: light grey on white is caught, black on white passes."""
    for colour, readable in (("#c8c8c8", False), ("#202020", True)):
        lab = QLabel("Some label text")
        lab.setStyleSheet(f"background: #ffffff; color: {colour}; font-size: 14px;")
        lab.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        qtbot.addWidget(lab)
        lab.resize(200, 30)
        lab.show()
        qtbot.waitExposed(lab)
        img = lab.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
        r = label_contrast(img, 0, 0, img.width(), img.height())
        assert (r >= MIN_CONTRAST) == readable, (colour, r)


def test_d42_theme_is_a_setting_that_follows_the_os_by_default(qtbot, make_window, themed):
    assert Settings().window.theme == "system"
    w = make_window(None, settings=_settings())
    dlg = w.open_settings("window.theme")
    assert [dlg.theme.itemData(i) for i in range(dlg.theme.count())] == ["system", "light", "dark"]
    dlg.theme.setCurrentIndex(2)
    dlg._on_buttons_accepted()
    assert w.settings.window.theme == "dark"
    assert QApplication.instance().property("callistoDark") is True
    from app.storage.settings import load_settings

    assert load_settings()[0].window.theme == "dark"
