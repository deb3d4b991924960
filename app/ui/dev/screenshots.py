"""Drives the real window into one main state and saves a PNG (``python -m app --screenshot``).

A development tool: the bundle leaves it out (see :mod:`app.ui.dev`).

Every state uses the real worker and the loaded model, and the picture is taken only once
the state is really reached:

* ``empty`` / ``settings``: the model (when one is being loaded) has loaded or failed to load;
* ``empty-no-model``: the window started without loading a model: the first-contact hint that points
  to the recommended models and to Import;
* ``models``: the Models page has finished scanning the library (``models-800x600``: with the
  window resized to 800x600);
* ``server``: the Server page's log shows the requests it answered, one failed with its reason;
* ``streaming``: the reply is streaming and shows some text;
* ``banner``: the first reply is done and carries the notice banner;
* ``tool-call-with-panel``: the turn is done and the model called a tool (nothing is faked:
  a model that calls no tool cannot show this state; pass one with ``--model``). Without
  ``--model`` (the last or the demo model, U24) the window is set as a person would to get a
  call from a small model: the tool control on "Call calculator", and the Hermes format where
  the model's template shows none; the call is then the model's own, held to its schema;
* ``check``: the Check page after a real quick check (one scenario per category) of the loaded
  model, with its matrix and the first red cell opened;
* ``cut-off``: a reply stopped by a small max-tokens limit, marked with its Continue action;
* ``context-full``: the model reloaded with a 512-token context, a long message refused inline
  with "New chat" and "Increase context";
* ``failed-load``: a broken GGUF was opened; the error shows and the previous model stays loaded;
* ``recommended``: the Models page's "Recommended for tool calling" list with this machine's fit.
* ``remote``: the loaded model served by Callisto's own API server on a free loopback port, added
  as a remote engine with Callisto parsing and chosen in the picker; its reply calls a tool, and
  the side panel says which parser read the call (pass a tool-calling ``--model``).
* ``reply-versions``: a reply regenerated, so it shows its pager (‹ 2/2 ›), then paged back to the
  first version; the side panel shows that version's calls (any model; a tool-calling one shows
  calls).
* ``live-call``: a reply while the model writes a tool call: the call's card with its arguments
  filling in and the live token counter (pass a ``--model`` that writes a call; the state is not
  reached when the reply ends first).
* ``theme-switch``: the window started in the other theme, then switched to the requested one in
  Settings → Appearance once the reply is done (see :mod:`app.ui.dev.screenshot_theme`).
* ``turn-waits``: a chat turn waiting for a slot the server's requests hold (:mod:`.screenshots_waits`);
  ``image-chat``: a message with a picture, and the reply (a vision ``--model``; :mod:`.screenshots_images`).

``limit_s`` bounds the wait. When the state is not reached in time, or cannot be reached
(no model, the load failed, the model called no tool, no banner), nothing is saved, the reason
goes to stderr and the exit code is 2.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer

from app.ui.dev import screenshot_pages as pages
from app.ui.dev.screenshot_pages import REMOTE_NAME, StateNotReached
from app.ui.dev.screenshot_theme import ThemeSwitch
from app.ui.dev.screenshots_images import IMAGE_PROMPT, ImageChat
from app.ui.dev.screenshots_waits import TurnWaits

__all__ = ["MODEL_STATES", "ScreenshotDirector", "StateNotReached"]

DEFAULT_PROMPTS = {
    "streaming": "Write a short poem about the sea, in four lines.",
    "banner": "Hello! What can you do?",
    "tool-call-with-panel": "What is 17 * 23? Use the calculator.",
    "cut-off": "Tell me everything you know about the sea.",
    "remote": "What is 17 * 23? Use the calculator.",
    "reply-versions": "What is 17 * 23? Use the calculator.",
    "live-call": "What is 17 * 23 * 41 * 97? Use the calculator.",
    "thinking": "Hello! Think it over briefly, then answer.",
    "theme-switch": "What is 17 * 23? Use the calculator.",
    "image-chat": IMAGE_PROMPT,
}

THINKING_BUDGET = 8  # the thinking state's budget in tokens (small: the picture shows the block closed)
MODEL_STATES = ("streaming", "banner", "tool-call-with-panel")  # a reply needs a loaded model
EXTRA_MODEL_STATES = ("cut-off", "context-full", "failed-load")  # reached through the window's own actions


class ScreenshotDirector(QObject):
    SETTLE_MS = 300  # lets the last layout and paint happen before the grab

    def __init__(
        self,
        app: Any,
        window: Any,
        state: str,
        path: Path,
        *,
        limit_s: float,
        prompt: str | None = None,
        force_tool: bool = False,
        switch_to: str = "system",
    ) -> None:
        """``force_tool``: the tool states choose the calculator (the default model, U24);
        ``switch_to``: the theme the ``theme-switch`` state switches to."""
        super().__init__(window)
        self.app, self.window, self.state, self.path = app, window, state, path
        self.limit_s = max(0.2, float(limit_s))
        self.prompt = prompt or DEFAULT_PROMPTS.get(state, "Hello!")
        self.exit_code = 0
        self.error: str | None = None
        self._done = self._sent = self._turn_done = False
        self._library_scanned = self._models_shown = self._check_started = False
        self._settings_dialog: Any = None
        self._check_result: dict[str, Any] | None = None
        self._remote_server: Any = None
        self.force_tool, self._format_set = force_tool, False
        self._theme_switch = ThemeSwitch(self, switch_to)
        self._turn_waits, self._image_chat = TurnWaits(self), ImageChat(self)
        self._poll = QTimer(self)
        self._poll.setInterval(50)
        self._poll.timeout.connect(self._on_poll_timeout)
        window.sig_turn_done.connect(self._on_turn_done)

    def start(self) -> None:
        QTimer.singleShot(int(self.limit_s * 1000), self._on_limit)
        self._poll.start()

    # -- what the window is doing ---------------------------------------------------------
    def _loaded(self) -> bool:
        return self.window.model_info is not None

    def _loading(self) -> bool:
        return self.window.loading_path is not None

    def _on_turn_done(self, _ev: Any) -> None:
        self._turn_done = True

    def _tool_ready(self) -> bool:
        """For a forced tool: the Hermes format set where the model shows none, then the calculator
        chosen; False while the model is set up again."""
        w = self.window
        info = w.model_info
        if info is not None and info.effective_format is None and not self._format_set:
            self._format_set = True
            s = w.settings.model_copy(deep=True)
            s.chat.tool_format = "hermes"
            w.apply_settings(s)
            return False
        return "calculator" in w.tool_choice_box.tools() and (
            info is None or info.effective_format is not None
        )

    def _send_prompt(self, failure: str) -> None:
        """A new chat with the state's prompt sent; raises ``failure`` when it cannot be sent."""
        if self.force_tool and self.state == "tool-call-with-panel" and not self._tool_ready():
            return
        self._sent = True
        self.window.new_chat()
        if self.force_tool and self.state == "tool-call-with-panel":  # the new chat's choice: the calculator
            self.window.tool_choice_box.set_value({"type": "function", "function": {"name": "calculator"}})
        self.window.compose.setPlainText(self.prompt)
        if not self.window.send():
            raise StateNotReached(failure)

    def _require_model(self) -> bool:
        """True once a model is loaded; raises when none is or will be."""
        if self._loaded():
            return True
        if self._loading():
            return False
        raise StateNotReached(
            f"the {self.state!r} state needs a model, and none is loaded (the load failed or there is no "
            "model: pass --model GGUF, or install the demo model with `make run`)"
        )

    # -- the states -----------------------------------------------------------------------
    def _on_poll_timeout(self) -> None:
        if self._done:
            return
        try:
            self._step()
        except StateNotReached as exc:
            self._fail(str(exc))

    def _step(self) -> None:
        """One poll: the step of the state (the states one step serves are grouped)."""
        for states, step in (
            (("empty", "empty-no-model", "settings"), self._step_idle),
            (("models", "models-800x600", "recommended"), self._step_models),
            (("check",), self._step_check),
            (("server",), self._step_server),
            (("remote",), self._step_remote),
            (("reply-versions",), self._step_versions),
            (("live-call",), self._step_live_call),
            (("thinking",), self._step_thinking),
            (("theme-switch",), self._theme_switch.step),
            (("turn-waits",), self._turn_waits.step),
            (("image-chat",), self._image_chat.step),
            (EXTRA_MODEL_STATES, self._step_extra),
            (MODEL_STATES, self._step_reply),
        ):
            if self.state in states:
                step()
                return

    def _step_idle(self) -> None:
        """empty and settings: once the model is loaded, failed or there is none to load, the window
        as a newcomer sees it, or its settings dialog."""
        if self._loading():
            return
        target = self.window
        if self.state == "empty-no-model":
            pages.require_no_model(target)
        if self.state == "settings":
            self._poll.stop()
            self._settings_dialog = target = self.window.open_settings("chat.tool_format")
        self._settle_then_shoot(target)

    def _step_models(self) -> None:
        """The Models page once its library is scanned (``recommended``: its recommended list)."""
        w = self.window
        if not self._models_shown:
            self._models_shown = True
            w.page_stack.show_models_page()
            page = w.models_page()
            signal = getattr(page, "sig_library_done", None)
            if signal is None:
                raise StateNotReached("the Models page could not be opened: " + getattr(page, "text", str)())
            if self.state == "recommended":
                page.sources.setCurrentIndex(0)
            if self.state == "models-800x600":
                w.resize(*pages.SMALL_WINDOW)
            signal.connect(lambda *_a: setattr(self, "_library_scanned", True))
        if self._library_scanned and pages.sized(w, self.state):
            self._settle_then_shoot(w)

    def _prompt_sent(self) -> bool:
        """True once a model is loaded and the state's prompt was sent (it is sent the first time)."""
        if not self._require_model():
            return False
        if not self._sent:
            self._send_prompt("the prompt could not be sent")
            return False
        return True

    def _step_reply(self) -> None:
        """streaming, banner and tool-call-with-panel: the reply to the state's prompt."""
        w, st = self.window, self.state
        if not self._prompt_sent():
            return
        last = w.chat.current_assistant()
        if st == "streaming":
            if w.busy and last is not None and len(last.text()) >= 60:
                self._settle_then_shoot(w)
            elif self._turn_done:
                raise StateNotReached(
                    "the reply ended before 60 characters had streamed: use a --prompt "
                    "that asks for a longer reply"
                )
        elif self._turn_done and not w.busy:
            if st == "banner":
                if not w.chat.banners():
                    raise StateNotReached(
                        "the reply carries no notice banner: the 'banner' state needs a "
                        "model whose chat template has no tool format (pass --model)"
                    )
                self._settle_then_shoot(w)
            else:
                ids = list(w.tool_panel.entries)
                if not ids:
                    raise StateNotReached(
                        "this state needs a model that calls a tool (pass --model); the "
                        "model replied without calling one"
                    )
                w.chat_ctl.select_tool_call(ids[0])
                self._settle_then_shoot(w)

    def _step_extra(self) -> None:
        """cut-off, context-full and failed-load: each is reached through the window's own actions."""
        w, st = self.window, self.state
        if not self._require_model():
            return
        if not self._sent:
            self._sent = True
            w.new_chat()
            if st == "failed-load":
                self._broken_dir = tempfile.TemporaryDirectory(prefix="callisto-shot-")  # gone at exit
                broken = Path(self._broken_dir.name) / "broken-download.gguf"
                broken.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 24)
                w.worker.sig_load_failed.connect(lambda *_a: setattr(self, "_turn_done", True))
                w.load_model(str(broken))
                return
            s = w.settings.model_copy(deep=True)
            if st == "cut-off":
                s.sampling.max_tokens = 24
                text = self.prompt
            else:
                s.model.context_length, s.chat.context_policy = 512, "stop"
                text = " ".join(["Please summarise this long text for me."] * 90)
            w.apply_settings(s)  # queued before the message: the worker applies it first
            w.compose.setPlainText(text)
            if not w.send():
                raise StateNotReached("the prompt could not be sent")
            return
        if not self._turn_done or w.busy or w.loading_path is not None:
            return
        if st != "failed-load":
            reply = w.chat.current_assistant()
            if reply is None or reply.error_box is None:
                done = w.last_done.finish_reason if w.last_done else "?"
                raise StateNotReached(f"the {st!r} state was not reached: the reply ended as {done!r}")
        self._settle_then_shoot(w)

    def _step_check(self) -> None:
        w = self.window
        if not self._require_model():
            return
        if not self._check_started:
            self._check_started = True
            pages.start_check(w, lambda result: setattr(self, "_check_result", result))
            return
        page = w.page_stack.page_widget("check")
        if self._check_result is not None and not page.running:
            pages.open_first_red_cell(page)
            self._settle_then_shoot(w)

    def _step_server(self) -> None:
        """The Server page running, with rows in its log (see ``pages.server_requests``; a free
        port: 8453 may be taken)."""
        w = self.window
        if self._loading():
            return
        page = w.page_stack.page_widget("server")
        if not self._check_started:
            self._check_started = True
            pages.start_server_page(w, page, loaded=self._loaded())
            return
        if page.log_table.rowCount() >= (3 if self._loaded() else 1):
            self._settle_then_shoot(w)

    def _step_remote(self) -> None:
        """Serve the loaded model with Callisto's own server, add it as a remote engine (Callisto
        parsing, the model's file as the template), choose it in the picker and send the prompt."""
        from app.engine.remote.keys import remote_key

        w = self.window
        if self._remote_server is None:
            if self._require_model():
                self._remote_server = pages.serve_as_remote(w)
            return
        models = w.remote_engines.models.get(REMOTE_NAME)
        info = w.model_info
        if not self._sent:
            if not models or self._loading():
                return
            if info is None or info.remote != REMOTE_NAME:
                w.remote_engines.load_remote(remote_key(REMOTE_NAME, models[0]))
                return
            self._send_prompt("the prompt could not be sent to the remote engine")
            return
        if self._turn_done and not w.busy:
            ids = list(w.tool_panel.entries)
            if not ids:
                raise StateNotReached(
                    "the remote model replied without calling a tool (pass a tool-calling --model)"
                )
            w.chat_ctl.select_tool_call(ids[0])
            self._settle_then_shoot(w)

    def _step_versions(self) -> None:
        """Send, regenerate once the reply is done, then page back to the first version."""
        w = self.window
        if not self._prompt_sent() or not self._turn_done or w.busy:
            return
        reply = w.chat.current_assistant()
        if reply is None:
            raise StateNotReached("the prompt got no reply")
        if reply.version[1] < 2:
            self._turn_done = False
            w.chat_ctl.regenerate()
            if not w.busy:
                raise StateNotReached("the reply could not be regenerated")
            return
        if reply.version[0] != 1:
            w.chat_ctl.show_version(reply, 1)
            reply = w.chat.current_assistant()
            if reply is None or reply.version[0] != 1:
                raise StateNotReached("the first version could not be shown")
        if w.tool_panel.entries:
            w.chat_ctl.select_tool_call(next(iter(w.tool_panel.entries)))
        self._settle_then_shoot(w)

    def _step_live_call(self) -> None:
        """Send, then shoot while a call is being written (its card and the live counter show)."""
        w = self.window
        if not self._sent and self._loaded():
            pages.room_for_a_long_call(w)
        if not self._prompt_sent():
            return
        reply = w.chat.current_assistant()
        writing = reply is not None and any(c.view.writing for c in reply.cards.values())
        if w.busy and writing and reply is not None and not reply.live.isHidden():
            self._settle_then_shoot(w)  # the reply goes on meanwhile: the card is still being written
        elif self._turn_done:
            raise StateNotReached(
                "the reply ended before a tool call was seen being written: this state needs a "
                "model that writes a long call (pass --model)"
            )

    def _step_thinking(self) -> None:
        """The thinking control on On with a budget, and the reply it bounded, its reasoning open."""
        w, ctl = self.window, self.window.chat_ctl.thinking
        if not self._require_model() or w.busy or self._loading() or ctl.info is not w.model_info:
            return  # (and until the thinking control has seen this model: it would reset the choice)
        box = ctl.box
        if not self._sent:
            if w.model_info.thinking_kind == "none":
                raise StateNotReached(
                    "the 'thinking' state needs a model whose chat template has a thinking switch (pass --model)"
                )
            w.new_chat()
            box.mode.setCurrentIndex(box.mode.findData("on"))
            box.budget.setValue(THINKING_BUDGET)
            self._sent = True
            w.compose.setPlainText(self.prompt)
            if not w.send():
                raise StateNotReached("the prompt could not be sent")
        elif self._turn_done:
            last = w.chat.current_assistant()
            if last is not None and last.reasoning:
                last.thinking.toggle.setChecked(True)
            self._settle_then_shoot(w)

    # -- shooting -----------------------------------------------------------------------
    def _settle_then_shoot(self, widget: Any) -> None:
        self._poll.stop()
        QTimer.singleShot(self.SETTLE_MS, lambda: self._shoot(widget))

    def _missing(self) -> str:
        w, st = self.window, self.state
        if st in ("models", "models-800x600"):
            return "the Models page had not finished scanning the library" + pages.size_missing(w, st)
        if st == "check" and self._check_started:
            return "the check had not finished"
        if st == "server" and self._check_started:
            return "the server's log had no rows yet"
        if self._loading():
            return f"the model was still loading ({w.loading_path})"
        if st in MODEL_STATES:
            if not self._sent:
                return "the prompt was not sent"
            if st == "streaming":
                return "no reply text had streamed yet"
            return "the reply had not finished"
        return "the window was not ready"

    def _on_limit(self) -> None:
        if not self._done:
            self._fail(
                f"the {self.state!r} state was not reached within {self.limit_s:g} s "
                f"({self._missing()}); pass a longer --quit-after"
            )

    def _fail(self, message: str) -> None:
        if self._done:
            return
        self._done = True
        self._poll.stop()
        self.error = message
        self.exit_code = 2
        sys.stderr.write(f"callisto --screenshot: nothing saved: {message}\n")
        self._finish()

    def _shoot(self, widget: Any) -> None:
        if self._done:
            return
        self._done = True
        self._poll.stop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ok = widget.grab().save(str(self.path), "PNG")
        if not ok:
            self.error = f"could not write {self.path}"
            sys.stderr.write(f"callisto --screenshot: {self.error}\n")
        self.exit_code = 0 if ok else 1
        if ok:
            print(f"saved {self.path}: {self.state} ({self._summary()})", flush=True)
        self._finish()

    def _summary(self) -> str:
        """What the picture shows, in words (tests and the screenshot script read it)."""
        said = pages.summary(self.window, self.state, loaded=self._loaded(), check_result=self._check_result)
        if self.state == "image-chat":
            return self._image_chat.summary(said)
        if self.state == "theme-switch":
            return self._theme_switch.summary(said)
        return self._turn_waits.summary(said) if self.state == "turn-waits" else said

    def _finish(self) -> None:
        if self.window.busy:
            self.window.stop()
        self._turn_waits.end()
        if self._settings_dialog is not None:
            self._settings_dialog.reject()
        if self._remote_server is not None:
            self._remote_server.stop()
        self.app.exit(self.exit_code)
