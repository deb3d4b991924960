"""Find in the chat (Ctrl+F): a bar above the conversation that finds text in the messages shown
(what the person wrote and the replies' text, as rendered; case does not matter), and in what they
fold (a reply's thinking, its tool calls' arguments, results and raw text, the rest of a long
message of the person's), marks every match, brings the current one into view, opening its fold,
and counts them ("3 of 12"). Enter and ↓ go
to the next, Shift+Enter and ↑ to the one before (round the ends), Esc closes the bar and takes
the marks away.
The messages are found again at each step, so a reply still being written is searched as it
stands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QTextCursor
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QLayout, QLineEdit, QTextEdit, QWidget

from app.ui.chat.bubble import small_button
from app.ui.chat.markdown import FittedView, PlainView, TextRun
from app.ui.theme import is_dark

if TYPE_CHECKING:
    from app.ui.chat.view import ChatView

__all__ = ["FindBar", "Match", "find_matches"]


@dataclass(frozen=True)
class Match:
    """One place the text was found: the view showing it and the cursor selecting it."""

    view: FittedView
    cursor: QTextCursor


def _shown(widget: QWidget, root: QWidget) -> bool:
    """``widget`` is not hidden on purpose, nor is any widget between it and ``root`` (one just
    added is shown by its layout a moment later: it counts as shown)."""
    w: QWidget | None = widget
    while w is not None and w is not root:
        if w.isHidden() and w.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
            return False
        w = w.parentWidget()
    return w is root


def _searched(view: FittedView, root: QWidget) -> bool:
    """``view`` is shown, or folded inside a widget that is (a reasoning block, a tool card's
    details): the find bar opens the fold of the match it goes to."""
    if isinstance(view, PlainView) and view.fold_owner is not None and view.unfold is not None:
        return _shown(view.fold_owner, root)
    return _shown(view, root)


def _layout_widgets(layout: QLayout) -> list[QWidget]:
    """The widgets of ``layout`` and of the layouts inside it, in their order."""
    out: list[QWidget] = []
    for i in range(layout.count()):
        item = layout.itemAt(i)
        if item is None:
            continue
        if (widget := item.widget()) is not None:
            out.append(widget)
        elif (inner := item.layout()) is not None:
            out.extend(_layout_widgets(inner))
    return out


class _ReadingOrder:
    """Where a widget under ``root`` is read: the places of it and its parents in their parents'
    layouts (the chat's columns are read top to bottom, a row left to right). It holds before the
    widgets are laid out (a conversation just opened) and for those folded away."""

    def __init__(self, root: QWidget) -> None:
        self.root = root
        self._places: dict[QWidget, dict[QWidget, int]] = {}

    def _place(self, parent: QWidget, widget: QWidget) -> int:
        places = self._places.get(parent)
        if places is None:
            layout = parent.layout()
            laid = _layout_widgets(layout) if layout is not None else []
            places = {w: k for k, w in enumerate(laid)}
            self._places[parent] = places
        return places.get(widget, len(places))

    def key(self, widget: QWidget) -> tuple[int, ...]:
        path: list[int] = []
        w = widget
        while w is not self.root and (parent := w.parentWidget()) is not None:
            path.append(self._place(parent, w))
            w = parent
        return tuple(reversed(path))


def _views_in_order(messages: list[QWidget], root: QWidget) -> list[FittedView]:
    """The text views in ``messages`` (widgets under ``root``) that are shown or folded, in the
    order the person reads them."""
    views = [
        v
        for message in messages
        if _shown(message, root)
        for v in message.findChildren(FittedView)
        if v.document().characterCount() > 1 and _searched(v, root)
    ]
    return sorted(views, key=_ReadingOrder(root).key)


def find_matches(messages: list[QWidget], root: QWidget, text: str) -> list[Match]:
    """Every place ``text`` is shown (or folded) in the views of ``messages`` (under ``root``), in
    reading order."""
    if not text:
        return []
    out: list[Match] = []
    for view in _views_in_order(messages, root):
        doc = view.document()
        cursor = doc.find(text, 0)
        while not cursor.isNull():
            out.append(Match(view, cursor))
            if cursor.selectionEnd() == cursor.selectionStart():  # (cannot happen for text; never loop)
                break
            cursor = doc.find(text, cursor.selectionEnd())
    return out


class _FindEdit(QLineEdit):
    """The text to find: Enter/↓ next, Shift+Enter/↑ previous, Esc closes (not the window's Stop)."""

    sig_step = Signal(int)
    sig_close = Signal()

    def event(self, e) -> bool:
        if e.type() == e.Type.ShortcutOverride and e.key() == Qt.Key.Key_Escape:
            e.accept()  # Esc is this box's while it has the focus
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        key, shift = e.key(), bool(e.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if key == Qt.Key.Key_Escape:
            self.sig_close.emit()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.sig_step.emit(-1 if shift else 1)
        elif key == Qt.Key.Key_Down:
            self.sig_step.emit(1)
        elif key == Qt.Key.Key_Up:
            self.sig_step.emit(-1)
        else:
            super().keyPressEvent(e)


class FindBar(QFrame):
    """The find bar of ``chat`` (its inner widget holds the messages)."""

    sig_closed = Signal()

    def __init__(self, chat: ChatView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("findBar")
        self.chat = chat
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 4, 12, 4)
        self.edit = _FindEdit()
        self.edit.setObjectName("findText")
        self.edit.setPlaceholderText("Find in this chat")
        self.edit.setClearButtonEnabled(True)
        self.edit.textChanged.connect(lambda _t: self.search())
        self.edit.sig_step.connect(self.step)
        self.edit.sig_close.connect(self.close_bar)
        self.count = QLabel("")
        self.count.setObjectName("findCount")
        self.btn_prev = small_button("↑", "Previous match (Shift+Enter)")
        self.btn_next = small_button("↓", "Next match (Enter)")
        self.btn_close = small_button("×", "Close (Esc)")
        self.btn_prev.clicked.connect(lambda: self.step(-1))
        self.btn_next.clicked.connect(lambda: self.step(1))
        self.btn_close.clicked.connect(self.close_bar)
        for w in (self.edit, self.count, self.btn_prev, self.btn_next, self.btn_close):
            lay.addWidget(w)
        lay.setStretch(0, 1)
        self.matches: list[Match] = []
        self.index = -1
        self._marked: list[FittedView] = []
        chat.sig_cleared.connect(self._on_cleared)
        self._follow = False  # keep the current match in view as the chat's height changes
        chat.follow.sig_scrolled_by_hand.connect(self._stop_following)
        chat.verticalScrollBar().rangeChanged.connect(self._on_range_changed)
        self.hide()

    def _on_cleared(self) -> None:
        self._marked, self.matches, self.index = [], [], -1  # the views went with the messages
        if not self.isHidden():
            self.close_bar()

    @property
    def root(self) -> QWidget:
        inner = self.chat.widget()
        assert inner is not None  # the chat's messages widget, set when the view is built
        return inner

    # -- opening and closing ------------------------------------------------------------------
    def open(self, text: str | None = None) -> None:
        """Show the bar with the focus in its box (``text``: find this); the box's text selected."""
        self.show()
        if text is not None and text != self.edit.text():
            self.edit.setText(text)  # searches
        else:
            self.search()
        self.edit.setFocus()
        self.edit.selectAll()

    def _on_range_changed(self, _lo: int, _hi: int) -> None:
        if self._follow:
            self._show_current()

    def _stop_following(self) -> None:
        self._follow = False

    def close_bar(self) -> None:
        self._follow = False
        self._unmark()
        self.matches, self.index = [], -1
        self.hide()
        self.sig_closed.emit()

    # -- finding ------------------------------------------------------------------------------
    def search(self) -> None:
        """Find the box's text again from the first match."""
        self.index = -1
        self.step(1)

    def step(self, delta: int) -> None:
        """To the next (``delta`` 1) or previous (-1) match, found again in the messages as they
        are now; from the current match's place when it is still there."""
        if self.isHidden():
            return
        was = self.matches[self.index] if 0 <= self.index < len(self.matches) else None
        self._render_pending()
        self.matches = find_matches(list(self.chat.messages), self.root, self.edit.text())
        n = len(self.matches)
        if not n:
            self.index = -1
        elif was is None:
            self.index = 0 if delta > 0 else n - 1
        else:
            at = self._place(was)
            self.index = (at + delta) % n if at is not None else 0
        self._mark()
        # the current match is kept in view while the chat is laid out (a conversation just
        # opened) or grows (a reply being written), until the person scrolls
        self._follow = True
        self._show_current()

    def _render_pending(self) -> None:
        """Show now all the text the messages hold (what the throttled rendering has not shown yet,
        and tails left for the next turn of the event loop): the search reads all of it."""
        reply = self.chat.current_assistant()
        if reply is not None:
            reply.flush()
        for run in self.root.findChildren(TextRun):
            run.render_pending()

    def _place(self, match: Match) -> int | None:
        for i, m in enumerate(self.matches):
            if m.view is match.view and m.cursor.selectionStart() == match.cursor.selectionStart():
                return i
        return None

    @property
    def current(self) -> Match | None:
        return self.matches[self.index] if 0 <= self.index < len(self.matches) else None

    def _mark(self) -> None:
        self._unmark()
        dark = is_dark()
        every = QColor("#6b5b1e" if dark else "#fff2a8")
        here = QColor("#b0721a" if dark else "#ffb74d")
        by_view: dict[FittedView, list[QTextEdit.ExtraSelection]] = {}
        for i, m in enumerate(self.matches):
            sel = QTextEdit.ExtraSelection()
            sel.cursor = m.cursor
            sel.format.setBackground(here if i == self.index else every)
            by_view.setdefault(m.view, []).append(sel)
        for view, sels in by_view.items():
            view.setExtraSelections(sels)
        self._marked = list(by_view)
        if not self.edit.text():
            self.count.setText("")
        else:
            self.count.setText(f"{self.index + 1} of {len(self.matches)}" if self.matches else "No matches")
        self.edit.setProperty("found", "no" if self.edit.text() and not self.matches else "")
        self.edit.style().unpolish(self.edit)
        self.edit.style().polish(self.edit)

    def _unmark(self) -> None:
        for view in self._marked:
            try:
                view.setExtraSelections([])
            except RuntimeError:  # the view went with its message (a chat cleared)
                pass
        self._marked = []

    def _show_current(self) -> None:
        m = self.current
        if m is None or self.isHidden():
            return
        try:
            if isinstance(m.view, PlainView) and m.view.unfold is not None and not _shown(m.view, self.root):
                m.view.unfold()  # the match is in a folded block: open it (laid out a moment later)
            rect = m.view.cursorRect(m.cursor)
            if m.view.uncap is not None and m.view.cut_at(rect.top()):
                m.view.uncap()  # the match is in the folded part of a long message: show all of it
                rect = m.view.cursorRect(m.cursor)
            at = m.view.viewport().mapTo(self.root, rect.center())
        except RuntimeError:  # the view went with its message meanwhile
            return
        self.chat.follow.show_place(at.x(), at.y(), max(60, self.chat.viewport().height() // 3))
