"""The reply being written says what its turn waits for: while a window turn waits for a free slot
(or for the server's request, or the check), the reply's placeholder shows the words of the
toolbar's progress area ("Waiting for a free slot: 2 server requests are generating…"), updated as
they change, and "Processing prompt…" once the turn starts; then the reply streams.

Real window (pytest-qt), real server on a free loopback port, scripted GGUFs on real llama.cpp;
the server's requests are held open by the test (the fixtures of ``test_window_slots``) and
released by it: the test follows the window's signals, nothing waits on time."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Slot

from tests.support.host_hold import hold
from tests.ui.test_window_slots import DONE, WAIT, _settings, _slots, _start_server, alpha, requests

__all__ = ["alpha", "requests"]  # the fixtures this module uses, from test_window_slots


class _PlaceholderAtProgress(QObject):
    """What the reply's placeholder said each time the progress area was told something."""

    def __init__(self, w) -> None:
        super().__init__()
        self.w = w
        self.seen: list[tuple[str, str]] = []  # (the progress area's words, the placeholder's)

    @Slot(float, str)
    def on_progress(self, _fraction: float, what: str) -> None:
        reply = self.w.chat.current_assistant()
        self.seen.append((what, reply.status_label.text() if reply is not None else ""))


def _type_and_send(qtbot, w, text: str):
    w.show_page("chat")
    w.compose.setFocus()
    w.compose.setPlainText(text)
    qtbot.keyClick(w.compose, Qt.Key.Key_Return)
    reply = w.chat.current_assistant()
    assert reply is not None and w.busy
    return reply


def test_the_reply_says_what_its_turn_waits_for_then_processes_its_prompt(
    qtbot, make_window, alpha, requests
):
    w = make_window(alpha, settings=_settings(2))
    host = w.worker.host
    _start_server(qtbot, w)
    qtbot.waitUntil(lambda: _slots(w) == 2, timeout=DONE)
    first, second = requests(host, alpha), requests(host, alpha, "a b c")
    assert first.streaming.wait(WAIT) and second.streaming.wait(WAIT)  # both slots stream
    third = requests(host, alpha, "zz yy")  # a request that waits for a slot, ahead of the turn

    seen = _PlaceholderAtProgress(w)
    w.worker.sig_load_progress.connect(seen.on_progress)
    reply = _type_and_send(qtbot, w, "Are you there?")
    ahead = "Waiting for a free slot: 2 server requests are generating (1 more ahead)…"
    qtbot.waitUntil(lambda: reply.status_label.text() == ahead, timeout=DONE)
    assert w.load_label.text() == ahead and not reply.started  # the toolbar's words, in the reply

    first.release.set()  # its slot goes to the request ahead of the turn: the words follow
    assert third.streaming.wait(WAIT)
    waits = "Waiting for a free slot: 2 server requests are generating…"
    qtbot.waitUntil(lambda: reply.status_label.text() == waits, timeout=DONE)
    assert w.load_label.text() == waits

    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE) as blocker:
        second.release.set()  # a slot frees: the turn takes it and starts
    assert blocker.args[0].finish_reason == "length"
    cleared = [shown for what, shown in seen.seen if what == ""]
    assert cleared and cleared[0].startswith("Processing prompt…"), seen.seen  # the turn started
    waited = [(what, shown) for what, shown in seen.seen if what]
    assert ahead in dict(waited) and waits in dict(waited)
    assert all(what == shown for what, shown in waited), waited  # in step with the toolbar, each time
    assert reply.text().startswith("a") and reply.waiting is None  # then it streamed, and ended
    third.release.set()  # (before the window closes: a held request would hold its shutdown)
    assert third.ended.wait(WAIT)


def test_the_reply_says_it_waits_for_the_check(qtbot, make_window, alpha):
    w = make_window(alpha, settings=_settings(2))
    host = w.worker.host
    _start_server(qtbot, w)
    qtbot.waitUntil(lambda: _slots(w) == 2, timeout=DONE)
    release = hold(host, owner="check")  # the Check page's scenario runs alone on the engine thread
    reply = _type_and_send(qtbot, w, "Hello?")
    qtbot.waitUntil(lambda: reply.status_label.text() == "Waiting for the check…", timeout=DONE)
    assert w.load_label.text() == "Waiting for the check…"
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE) as blocker:
        release.set()
    assert blocker.args[0].finish_reason == "length"
    assert reply.text().startswith("a") and reply.waiting is None
