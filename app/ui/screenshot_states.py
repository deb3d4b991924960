"""Drives the real window into one main state and saves a PNG (``python -m app --screenshot``).

Every state uses the real worker and the loaded model. The one exception is
``tool-call-with-panel`` when the loaded model makes no call by itself (the offline demo
model has no tool support): the window is then shown a *demonstration turn* whose tool
call runs for real through ``app.tools`` (the calculator), delivered through the same
worker signals a model's call would use.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer

__all__ = ["ScreenshotDirector"]

DEFAULT_PROMPTS = {
    "streaming": "Write a short poem about the sea, in four lines.",
    "banner": "Hello! What can you do?",
    "tool-call-with-panel": "What is 17 * 23? Use the calculator.",
}


class ScreenshotDirector(QObject):
    def __init__(self, app: Any, window: Any, state: str, path: Path, *, limit_s: float,
                 prompt: str | None = None) -> None:
        super().__init__(window)
        self.app, self.window, self.state, self.path = app, window, state, path
        self.limit_s = max(0.2, float(limit_s))
        self.prompt = prompt or DEFAULT_PROMPTS.get(state, "Hello!")
        self.exit_code = 0
        self._shot = False
        self._sent = False
        self._t0 = time.monotonic()
        self._poll = QTimer(self)
        self._poll.setInterval(50)
        self._poll.timeout.connect(self._on_poll_timeout)

    def start(self) -> None:
        QTimer.singleShot(int(self.limit_s * 1000), self._on_limit)
        self._poll.start()

    # -- the states ---------------------------------------------------------------------
    def _loaded(self) -> bool:
        return self.window.model_info is not None

    def _loading(self) -> bool:
        return self.window.loading_path is not None

    def _on_poll_timeout(self) -> None:
        w, st = self.window, self.state
        if self._shot:
            return
        if st == "empty":
            if self._loaded() or (not self._loading() and time.monotonic() - self._t0 > 0.3):
                self._settle_then_shoot()
        elif st == "settings":
            if self._loaded() or not self._loading():
                self._poll.stop()
                dlg = w.open_settings("chat.tool_format")
                QTimer.singleShot(300, lambda: self._shoot(dlg))
        elif st == "models":
            self._poll.stop()
            w.show_models_page()
            QTimer.singleShot(300, lambda: self._shoot(w))
        elif st in ("streaming", "banner", "tool-call-with-panel"):
            if not self._sent and self._loaded():
                self._sent = True
                w.compose.setPlainText(self.prompt)
                w.send()
            if not self._sent:
                return
            last = w.chat.current_assistant()
            if st == "streaming":
                if last is not None and len(last.text()) >= 60 and w.busy:
                    self._settle_then_shoot()
            elif not w.busy:
                if st == "tool-call-with-panel":
                    self._poll.stop()
                    self._tool_call_state()
                else:
                    self._settle_then_shoot()

    def _tool_call_state(self) -> None:
        w = self.window
        if not w.tool_panel.entries:
            _demonstration_turn(w)
        ids = list(w.tool_panel.entries)
        if ids:
            w.select_tool_call(ids[0])
        QTimer.singleShot(300, lambda: self._shoot(w))

    # -- shooting -----------------------------------------------------------------------
    def _settle_then_shoot(self) -> None:
        self._poll.stop()
        QTimer.singleShot(150, lambda: self._shoot(self.window))

    def _on_limit(self) -> None:
        if not self._shot:
            target = self.window.settings_dialog if self.state == "settings" and self.window.settings_dialog \
                else self.window
            self._shoot(target)

    def _shoot(self, widget: Any) -> None:
        if self._shot:
            return
        self._shot = True
        self._poll.stop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ok = widget.grab().save(str(self.path), "PNG")
        self.exit_code = 0 if ok else 1
        if self.window.busy:
            self.window.stop()
        self.app.exit(self.exit_code)


def _demonstration_turn(window: Any) -> None:
    """A turn whose tool call really runs (calculator via app.tools), shown through the worker's signals."""
    from app.engine.events import DoneEvent, TextEvent, ToolCallFinishedEvent, ToolCallStartedEvent
    from app.tools import Dispatcher, ToolCall, ToolRegistry, register_builtin_tools

    registry = ToolRegistry()
    register_builtin_tools(registry, None)
    args = {"expression": "17 * 23"}
    raw = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "17 * 23"}}\n</tool_call>'
    call = ToolCall(id="call_demo_1", name="calculator", arguments=args, raw=raw)
    result = Dispatcher(registry).dispatch(call)
    w = window.worker
    window.chat.add_user("What is 17 * 23? Use the calculator.")
    window.chat.begin_assistant()
    window._set_busy(True)
    w.sig_text.emit(TextEvent("Let me work that out.").text)
    w.sig_tool_call_started.emit(ToolCallStartedEvent(call.id, call.name, args, raw))
    w.sig_tool_call_finished.emit(ToolCallFinishedEvent(
        call.id, call.name, args, raw, result=result.content, error=result.error,
        duration_s=result.duration_s, approval=result.approval))
    w.sig_text.emit(f"**17 × 23 = {result.content}**")
    w.sig_done.emit(DoneEvent(finish_reason="stop", ttft_s=0.05, tokens_per_s=42.0, prompt_tokens=310,
                              generated_tokens=48, rounds=2))
