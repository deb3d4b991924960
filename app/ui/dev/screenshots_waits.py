"""The ``turn-waits`` screenshot state (:mod:`app.ui.dev.screenshots`): a chat turn that waits
behind the server's requests. The in-window server is started (the chat's model is loaded again
with its slots), every slot is taken by a request of the server's that generates on the model
and is held open after its first token, then the state's prompt is sent: the turn waits for a
free slot, and the reply's placeholder and the toolbar's progress area say so ("Waiting for a
free slot: 4 server requests are generating…"). The held requests end when the picture is taken.

A development tool: the bundle leaves it out (see :mod:`app.ui.dev`)."""

from __future__ import annotations

import threading
from typing import Any

from app.ui.dev.screenshot_pages import StateNotReached

__all__ = ["TurnWaits"]

HELD_TOKENS = 8  # each held request's length: it holds after its first token, ends soon once let go


class TurnWaits:
    """The steps of the ``turn-waits`` state, driven by the director's poll: start the server,
    once the chat's model has the server's slots fill each with a held request of the server's,
    once they all generate send the prompt, then shoot once the reply says what it waits for."""

    def __init__(self, director: Any) -> None:
        self.director = director
        self.release = threading.Event()  # the held requests go on (set by :meth:`end`)
        self.streaming: list[threading.Event] = []  # one per held request: it generates
        self.failed: list[str] = []
        self.page: Any = None

    def step(self) -> None:
        d = self.director
        w = d.window
        if not d._require_model():
            return
        if self.page is None:
            self.page = w.page_stack.page_widget("server")
            if not self.page.start():
                raise StateNotReached(f"the server could not start: {self.page.status.text()}")
            w.show_page("chat")
            return
        model = w.worker.model
        slots = int(getattr(model.backend, "parallel", 1)) if model is not None else 0
        if self.failed:
            raise StateNotReached(f"a request of the server's failed: {self.failed[0]}")
        if not self.streaming:
            if model is None or slots != (self.page.slots.value if model.isolated else 1):
                return  # the chat's model is loaded again with the server's slots (one in process)
            for _ in range(slots):
                self._hold(w.worker.host, model.path)
            return
        if not all(e.is_set() for e in self.streaming):
            return
        if not d._sent:  # in the chat the window opened with (a new chat would wait for the slots too)
            d._sent = True
            w.compose.setPlainText(d.prompt)
            if not w.send():
                raise StateNotReached("the prompt could not be sent")
            return
        reply = w.chat.current_assistant()
        if reply is not None and reply.waiting and reply.waiting == w.load_label.text():
            d._settle_then_shoot(w)
        elif reply is None or reply.started or d._turn_done:
            raise StateNotReached("the turn did not wait: a slot was free when it was sent")

    def _hold(self, host: Any, path: str) -> None:
        """A request of the server's on ``path``'s model: it generates, and after its first token
        holds its slot until :meth:`end`."""
        from app.engine.generation import generate
        from app.engine.host import Job

        streaming = threading.Event()
        self.streaming.append(streaming)

        def run(_host: Any, model: Any) -> None:
            for _piece in generate(model, "Count from one to ten.", max_tokens=HELD_TOKENS, stop=()):
                streaming.set()
                self.release.wait()
            if not streaming.is_set():
                self.failed.append("it ended before its first token")

        job = Job(
            run=run, model=path, owner="server", batchable=True, on_error=lambda e: self.failed.append(str(e))
        )
        host.submit(job, bounded=False)

    def end(self) -> None:
        """The picture is taken (or the state failed): the held requests end."""
        self.release.set()

    def summary(self, said: str) -> str:
        """``said`` (the model), what the reply's placeholder and the toolbar say, in words the
        tests read."""
        w = self.director.window
        reply = w.chat.current_assistant()
        shown = reply.status_label.text() if reply is not None else ""
        return f"{said}; reply: {shown}; toolbar: {w.load_label.text()}"
