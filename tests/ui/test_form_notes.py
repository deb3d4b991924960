"""Wrapped notes in form rows (the Server page's, the Settings tabs') are exactly as tall as their
text at the width they are given: no empty band above or below them. QFormLayout sizes a row
without a label by its field's size hint, which for a wrapped QLabel is its text at a narrow
guessed width; ``FormNote``'s hints are its height for the width it has. And the one-line labels
that a narrow row cuts (``ElidedLabel``) cut with an ellipsis."""

from __future__ import annotations

from app.storage.settings import Settings
from app.ui.labels import FormNote
from app.ui.settings_dialog import SettingsDialog


def _settled(qtbot, widget, size: tuple[int, int]) -> list[FormNote]:
    """``widget`` at ``size`` once its layouts settle: its visible notes, each as tall as its text."""
    widget.resize(*size)
    notes = [n for n in widget.findChildren(FormNote) if n.isVisible() and n.text()]
    assert notes

    def fitted() -> None:
        for n in notes:
            assert n.height() == n.heightForWidth(n.width()), (n.objectName(), n.text()[:40], n.height())

    qtbot.waitUntil(fitted)
    return notes


def test_the_server_page_notes_have_no_band(make_server_page, tiny_gguf, qtbot):
    page = make_server_page(tiny_gguf(), n_ctx=4096)
    wide = _settled(qtbot, page, (1100, 700))
    assert {n.objectName() for n in wide} >= {"serverSecurity", "serverParallelNote"}
    lines = {n.objectName(): n.height() for n in wide}
    narrow = _settled(qtbot, page, (520, 700))  # narrower: more lines, still no band
    assert all(n.height() >= lines[n.objectName()] for n in narrow)
    assert any(n.height() > lines[n.objectName()] for n in narrow)
    _settled(qtbot, page, (1100, 700))  # and back: the notes shrink to their text again


def test_the_settings_notes_have_no_band(qtbot):
    dlg = SettingsDialog(Settings(), detected_label=None, model_path=None, model_name=None)
    qtbot.addWidget(dlg)
    dlg.show()
    seen = 0
    for tab in range(dlg.tabs.count()):
        dlg.tabs.setCurrentIndex(tab)
        if any(n.isVisible() and n.text() for n in dlg.findChildren(FormNote)):
            seen += len(_settled(qtbot, dlg, (620, 520)))
    assert seen >= 3  # the Chat tab's, the Tools tab's (workspace, approvals)


def test_an_elided_label_cuts_with_an_ellipsis_and_fits_again(qtbot):
    """``ElidedLabel``: whole when it has room, cut with "…" (its whole text as tooltip) when not,
    ``text()`` always whole; a bigger font (Settings → text size) cuts it again at the same width."""
    from PySide6.QtWidgets import QLabel

    from app.ui.labels import ElidedLabel

    words = "Waiting for a free slot: 4 server requests are generating."
    label = ElidedLabel(words)
    qtbot.addWidget(label)
    label.show()
    label.resize(label.sizeHint().width(), 30)
    qtbot.waitUntil(lambda: QLabel.text(label) == words)
    assert label.toolTip() == ""
    label.resize(120, 30)
    qtbot.waitUntil(lambda: QLabel.text(label).endswith("…"))
    assert words.startswith(QLabel.text(label)[:-1]) and label.text() == words and label.toolTip() == words
    assert label.accessibleName() == words  # a screen reader reads the whole text
    label.setToolTip("its own")
    assert label.toolTip() == "its own"  # a tooltip set for the label stays
    label.resize(label.sizeHint().width(), 30)
    qtbot.waitUntil(lambda: QLabel.text(label) == words)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * 2)
    label.setFont(font)  # the same width no longer holds it
    qtbot.waitUntil(lambda: QLabel.text(label).endswith("…"))
    assert label.sizeHint().width() > label.width()


def test_the_model_picker_cuts_a_long_name_in_its_middle(qtbot):
    """A name too long for the picker keeps its start and its end (the quantization, "(remote)")
    with "…" between, where Qt would clip its end; with room it is whole."""
    from app.ui.labels import ElidedComboBox

    name = "Qwen3-Coder-30B-A3B-Instruct-UD-Q4_K_XL · GPU box (remote)"
    box = ElidedComboBox()
    qtbot.addWidget(box)
    box.addItem(name)
    box.show()
    box.resize(200, box.sizeHint().height())
    qtbot.waitUntil(lambda: box.width() == 200)
    shown = box.shown_text()
    head, _, tail = shown.partition("…")
    assert tail and name.startswith(head) and name.endswith(tail) and len(shown) < len(name)
    assert not box.grab().isNull()  # it paints
    box.resize(box.fontMetrics().horizontalAdvance(name) + 80, box.height())
    qtbot.waitUntil(lambda: box.shown_text() == name)
