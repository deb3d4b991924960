"""The window's turns share the model's slots with the in-window server (issue 31): while the
server runs the window's model is loaded again with ``server.parallel`` slots (its conversation
kept), a turn streams beside the server's requests while a slot is free, and when every slot is
taken the progress area says what the turn waits for, updated as that changes and cleared when
the turn starts. The Server page's "Parallel requests" field is the setting; stopping the server
gives the model one slot again.

Real window (pytest-qt), real server on a free loopback port, scripted GGUFs on real llama.cpp.
The server's requests are held open as batchable jobs of the server's on the window's engine
(``tests.support.host_hold.SlotHold``), released by the test: nothing waits on time."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import QObject, Qt, Slot

from app.storage.settings import Settings, load_settings
from tests.support.host_hold import SlotHold, hold
from tests.support.ports import free_port
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf
from tests.ui.turns import send_turn

DONE = 30_000
WAIT = SlotHold.WAIT


def _settings(parallel: int) -> Settings:
    s = Settings()
    s.sampling.max_tokens = 8  # the scripted model never stops: every window turn ends at 8 tokens
    s.server.port = free_port()
    s.server.parallel = parallel
    return s


@pytest.fixture
def alpha(tmp_path) -> Path:
    return write_scripted_gguf(
        tmp_path / "alpha.gguf",
        chat_template=CHATML,
        script=streaming_script(),
        default_next="a",
        name="alpha",
    )


@pytest.fixture
def requests():
    """``requests(host, path, prompt)``: a held request of the server's, queued now; every one is
    released at the end (a test releases those still held before it ends: pytest-qt closes the
    window before the fixtures end, and the window's shutdown would wait for them)."""
    made: list[SlotHold] = []

    def make(host, path: Path, prompt: str = "hello") -> SlotHold:
        held = SlotHold(path, prompt=prompt)
        made.append(held)
        return held.submit(host)

    yield make
    for held in made:
        held.release.set()
    assert all(held.ended.wait(WAIT) for held in made)


class _LabelAtText(QObject):
    """What the progress area said when each piece of the reply reached the window."""

    def __init__(self, label) -> None:
        super().__init__()
        self.label = label
        self.seen: list[str] = []

    @Slot(str)
    def on_text(self, _piece: str) -> None:
        self.seen.append(self.label.text())


def _slots(w) -> int:
    model = w.worker.model
    return int(model.backend.parallel) if model is not None else 0


def _start_server(qtbot, w):
    page = w.show_page("server")
    assert page.start(), page.status.text()
    return page


def test_a_turn_streams_beside_the_servers_requests_and_says_what_it_waits_for(
    qtbot, make_window, alpha, requests
):
    w = make_window(alpha, settings=_settings(2))
    host = w.worker.host
    assert send_turn(qtbot, w, "Remember this", timeout=DONE).finish_reason == "length"
    one = w.worker.model
    assert _slots(w) == 1  # the server is off: one slot

    _start_server(qtbot, w)  # the window's model is loaded again with the server's slots
    # (the engine thread publishes the model, then builds its session: wait for both)
    qtbot.waitUntil(
        lambda: w.worker.model is not one and _slots(w) == 2 and w.worker.session is not None, timeout=DONE
    )
    assert one.closed and w.worker.model is host.model(alpha)
    assert [m.role for m in w.worker.session.messages] == ["user", "assistant"]  # the chat goes on
    assert not any("loaded alpha" in t for t in w.window_notice_texts())  # its own file: no notice

    first, second = requests(host, alpha), requests(host, alpha, "a b c")
    assert first.streaming.wait(WAIT) and second.streaming.wait(WAIT)  # both slots stream
    third = requests(host, alpha, "zz yy")  # a request that waits for a slot
    w.show_page("chat")
    w.compose.setFocus()
    w.compose.setPlainText("Are you there?")
    qtbot.keyClick(w.compose, Qt.Key.Key_Return)
    ahead = "a free slot: 2 server requests are generating (1 more ahead)"
    qtbot.waitUntil(lambda: w.load_label.text() == f"Waiting for {ahead}…", timeout=DONE)
    assert w.worker.jobs.waiting_behind() == ahead
    assert w.load_label.isVisible()

    first.release.set()  # its slot goes to the request ahead of the turn: the words follow
    assert third.streaming.wait(WAIT)
    waits = "Waiting for a free slot: 2 server requests are generating…"
    qtbot.waitUntil(lambda: w.load_label.text() == waits, timeout=DONE)

    at_text = _LabelAtText(w.load_label)
    w.worker.sig_text.connect(at_text.on_text)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE) as blocker:
        second.release.set()  # a slot frees: the turn takes it while the third request streams
    assert blocker.args[0].finish_reason == "length"
    assert at_text.seen and set(at_text.seen) == {""}  # cleared before its first piece arrived
    assert w.load_label.text() == "" and w.worker.jobs.waiting_behind() is None
    assert not third.ended.is_set()  # the turn ended beside a request that still streams
    assert w.worker.generation_thread_ident not in (host.thread_ident, third.thread)
    assert w.chat.messages[-1].text().startswith("a")  # the reply the scripted model writes
    third.release.set()  # (before the window closes: a held request would hold its shutdown)
    assert third.ended.wait(WAIT)


def test_a_turn_waits_for_the_check_then_takes_a_slot(qtbot, make_window, alpha):
    w = make_window(alpha, settings=_settings(2))
    host = w.worker.host
    _start_server(qtbot, w)
    qtbot.waitUntil(lambda: _slots(w) == 2, timeout=DONE)
    release = hold(host, owner="check")  # the Check page's scenario runs alone on the engine thread
    w.show_page("chat")
    w.compose.setFocus()
    w.compose.setPlainText("Hello?")
    qtbot.keyClick(w.compose, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.load_label.text() == "Waiting for the check…", timeout=DONE)
    assert w.worker.jobs.waiting_behind() == "the check"
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE) as blocker:
        release.set()
    assert blocker.args[0].finish_reason == "length"
    assert w.load_label.text() == ""
    assert w.worker.generation_thread_ident != host.thread_ident  # on a slot, beside whoever comes


def test_the_parallel_requests_field_is_the_setting_and_gives_the_models_their_slots(
    qtbot, make_window, alpha
):
    w = make_window(alpha, settings=_settings(2))
    page = w.show_page("server")
    box = page.parallel
    assert (box.minimum(), box.maximum(), box.value()) == (1, 16, 2)
    n_ctx = w.worker.model.n_ctx
    note = page.parallel_note.text()
    assert f"Each slot gets the whole context ({n_ctx:,} tokens)" in note
    assert "2 × " in note and "MiB of KV memory for alpha" in note

    box.setValue(3)  # saved at once; nothing is loaded while the server is off
    assert load_settings()[0].server.parallel == 3 and "3 × " in page.parallel_note.text()
    assert _slots(w) == 1

    assert page.start(), page.status.text()
    qtbot.waitUntil(lambda: _slots(w) == 3, timeout=DONE)
    box.setValue(2)  # while it runs: the models get the new slots
    qtbot.waitUntil(lambda: _slots(w) == 2, timeout=DONE)
    cards = httpx.get(page.address.text() + "/v1/models", timeout=30).json()["data"]
    assert [c["callisto"]["parallel"] for c in cards if c["id"] == "alpha"] == [2]
    qtbot.waitUntil(lambda: page.slots_label.text().startswith("0 of 2 busy"), timeout=DONE)

    page.stop()  # one slot again: the KV memory of the others is freed
    qtbot.waitUntil(lambda: _slots(w) == 1, timeout=DONE)
    assert load_settings()[0].server.parallel == 2
    assert send_turn(qtbot, w, "Still here?", timeout=DONE).finish_reason == "length"


def test_with_the_server_on_at_start_the_chats_model_loads_once_with_its_slots(qtbot, make_window, alpha):
    s = _settings(2)
    s.server.enabled = True  # it was on when the window last closed
    w = make_window(alpha, settings=s)
    first = w.worker.model
    assert first.backend.parallel == 2  # loaded with the server's slots from the start
    page = w.page_stack.built_page("server")  # built with the window, it starts at once
    qtbot.waitUntil(lambda: page.running, timeout=DONE)
    w.worker.host.call(lambda _m: None)  # after the server's start: nothing was loaded again
    assert w.worker.model is first and not first.closed
