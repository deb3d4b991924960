"""The pages the screenshot states open besides the chat (:mod:`app.ui.dev.screenshots`): the
Check page's quick check, the Server page with requests in its log, Callisto's own server added
as a remote engine, the Models page in a small window, the first-contact hint, and the words that
say what each picture shows.

A development tool: the bundle leaves it out (see :mod:`app.ui.dev`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "CHECK_MAX_TOKENS",
    "LIVE_CALL_TOKENS",
    "REMOTE_NAME",
    "SMALL_WINDOW",
    "StateNotReached",
    "open_first_red_cell",
    "require_no_model",
    "room_for_a_long_call",
    "serve_as_remote",
    "server_requests",
    "size_missing",
    "sized",
    "start_check",
    "start_server_page",
    "summary",
]

REMOTE_NAME = "GPU box"  # the remote engine the ``remote`` state adds
CHECK_MAX_TOKENS = 64  # the check state's replies: enough for a call, short enough to finish quickly
SMALL_WINDOW = (800, 600)  # the window's size in the ``models-800x600`` state
#: the live-call state's max tokens (its context: this and 4,096 more)
LIVE_CALL_TOKENS = 16384


class StateNotReached(Exception):
    """The requested state cannot be shown; the message says why and what to do."""


def sized(window: Any, state: str) -> bool:
    """True once the window has the size of ``state`` (only ``models-800x600`` asks for one)."""
    return state != "models-800x600" or (window.width(), window.height()) == SMALL_WINDOW


def size_missing(window: Any, state: str) -> str:
    """Why a sized state waits, besides the library's scan (empty when the size is right)."""
    return "" if sized(window, state) else f", or the window was {window.width()}x{window.height()}"


def _first_contact(window: Any) -> list[str]:
    """The first-contact hint's buttons on screen (none while a model is loaded or loading)."""
    from PySide6.QtWidgets import QPushButton

    names = ("noModelRecommended", "noModelImport")
    found = (window.findChild(QPushButton, name) for name in names)
    return [b.text() for b in found if b is not None and b.isVisible()]


def room_for_a_long_call(window: Any) -> None:
    """The live-call state's settings, applied before its prompt is sent (the worker applies them
    first): its model writes a call on and on until max tokens, so with room for many seconds of
    writing the call is still being written when the shot is taken (at 1,700 tokens/s the default
    1,024 tokens were gone within the settle delay)."""
    s = window.settings.model_copy(deep=True)
    s.sampling.max_tokens, s.model.context_length = LIVE_CALL_TOKENS, LIVE_CALL_TOKENS + 4096
    window.apply_settings(s)


def require_no_model(window: Any) -> None:
    """Raises unless the window has no model and shows the first-contact hint."""
    if window.model_info is not None or len(_first_contact(window)) < 2:
        raise StateNotReached("the window has a model: the first-contact hint is not shown")


def _in_view(window: Any) -> str:
    """The Models page's main actions in view, its buttons that the window's edge cuts (none: no
    action needs sideways scrolling to reach) and its lists that scroll sideways."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QAbstractScrollArea, QPushButton

    page = window.models_page()

    def inside(b: Any) -> bool:
        left = b.mapTo(window, QPoint(0, 0)).x()
        return left >= 0 and left + b.width() <= window.width()

    buttons = [b for b in page.findChildren(QPushButton) if b.isVisible()]
    actions = [
        b.text()
        for b in (page.import_button, page.folder_button, page.refresh_button)
        if b.isVisible() and inside(b)
    ]
    cut = [b.text() for b in buttons if not inside(b)]
    scrolls = [
        a.objectName() or type(a).__name__
        for a in page.findChildren(QAbstractScrollArea)
        if a.isVisible() and a.horizontalScrollBar().isVisible()
    ]
    return (
        f"actions in view: {', '.join(actions)}; buttons cut at the side: {', '.join(cut) or 'none'} "
        f"(of {len(buttons)}); sideways scrolling: {', '.join(scrolls) or 'none'}"
    )


#: the model an agent asks for by mistake in the ``server`` state: its row shows why it failed
MISSING_MODEL = "gpt-4o"


def server_requests(url: str, model: str | None) -> None:
    """What the ``server`` state's log shows: a model list, one short chat reply, then a chat
    request for a model the server does not have (a failed row, with its reason)."""
    import json
    import urllib.error
    import urllib.request

    def chat(name: str) -> None:
        body = json.dumps(
            {"model": name, "max_tokens": 16, "messages": [{"role": "user", "content": "Hello!"}]}
        ).encode()
        req = urllib.request.Request(
            url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        urllib.request.urlopen(req, timeout=120).read()  # noqa: S310 - our loopback server

    try:
        urllib.request.urlopen(url + "/v1/models", timeout=30).read()  # noqa: S310 - our loopback server
        if model:
            chat(model)
            try:
                chat(MISSING_MODEL)
            except urllib.error.HTTPError:
                pass  # refused, as it should be: the log says why
    except OSError:
        pass  # the state then waits for rows that never come and says so


def start_check(window: Any, on_done: Any) -> None:
    """Open the Check page and start a quick check (one scenario per category) of the loaded model;
    ``on_done(result)`` when it finished."""
    from app.engine.detection import detect_tool_format
    from app.engine.models.metadata import read_metadata

    path = str(window.model_info.path)
    meta = read_metadata(path)
    fmt = (
        "auto"
        if detect_tool_format(
            meta.chat_template,
            meta.tool_use_template,
            bos_token=meta.bos_token,
            eos_token=meta.eos_token,
        )
        else "hermes"
    )
    window.show_page("check")
    page = window.page_stack.page_widget("check")
    signal = getattr(page, "sig_run_finished", None)
    if signal is None:
        raise StateNotReached("the Check page could not be opened: " + getattr(page, "text", str)())
    signal.connect(on_done)
    page.model_edit.setText(path)
    if not page.start(
        {
            "kind": "in_process",
            "path": path,
            "tool_format": fmt,
            "selection": "quick",
            "max_tokens": CHECK_MAX_TOKENS,
        }
    ):
        raise StateNotReached(f"the check could not start: {page.status.text()}")


def open_first_red_cell(page: Any) -> None:
    """Open the finished check's first red cell (the "all" cell when none is red)."""
    row = page.matrix.rowCount() - 1
    cats = [*page.categories, "all"]
    red = next((i for i, c in enumerate(cats[:-1]) if page.cell_ratio(row, c) == 0.0), len(cats) - 1)
    page.open_cell(row, red)


def start_server_page(window: Any, page: Any, *, loaded: bool) -> None:
    """Start the Server page's server on a free port (8453 may be taken), then ask it for the model
    list and, with a model ``loaded``, one chat reply, so its log has rows."""
    import socket
    import threading

    window.show_page("server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        page.port.setValue(s.getsockname()[1])
    if not page.start():
        raise StateNotReached(f"the server could not start: {page.status.text()}")
    model = page._model_id() if loaded else None
    threading.Thread(target=server_requests, args=(page.address.text(), model), daemon=True).start()


def serve_as_remote(window: Any) -> Any:
    """Serve the loaded model with Callisto's own server on a free loopback port and add it as the
    remote engine :data:`REMOTE_NAME` (Callisto parsing, the model's file as the template); returns
    the running server (the caller stops it)."""
    from app.server import ApiServer, ServerConfig
    from app.storage.settings import RemoteProviderSettings

    path = str(window.model_info.path)
    server = ApiServer(ServerConfig(port=0, models=[path], use_library=False, n_ctx=2048))
    server.start()
    window.remote_engines.add_remote_provider(
        RemoteProviderSettings(
            name=REMOTE_NAME, url=server.url, kind="openai", mode="callisto", template=path
        )
    )
    return server


def summary(w: Any, st: str, *, loaded: bool, check_result: dict[str, Any] | None) -> str:
    """What the picture of state ``st`` shows, in words (tests and the screenshot script read it)."""
    model = Path(w.model_info.path).name if loaded else "no model"
    if st == "models-800x600":
        library = summary(w, "models", loaded=loaded, check_result=None)
        return f"window: {w.width()}x{w.height()}; {_in_view(w)}; {library}"
    if st == "empty-no-model":
        return f"model: {model}; first contact: {', '.join(_first_contact(w))}"
    if st == "models":
        table = getattr(w.models_page(), "library_table", None)
        rows = table.rowCount() if table is not None else 0
        items = [table.item(i, 0) for i in range(rows)] if table is not None else []
        names = [item.text() for item in items if item is not None]
        return f"library rows: {rows}: {', '.join(names)}"
    if st == "server":
        page = w.page_stack.page_widget("server")
        from app.ui.server_log import LOG_COLUMNS

        table = page.log_table
        failed = [table.item(r, LOG_COLUMNS.index("Error")) for r in range(table.rowCount())]
        errors = "; ".join(f"failed: {item.text()}" for item in failed if item is not None and item.text())
        return f"model: {model}; server: {page.address.text()}; log rows: {table.rowCount()}" + (
            f"; {errors}" if errors else ""
        )
    if st == "check" and check_result is not None:
        s = check_result["summary"]
        cells = ", ".join(f"{c} {v['passed']}/{v['total']}" for c, v in s["by_category"].items())
        return f"model: {model}; check: {s['passed']}/{s['total']} passed; cells: {cells}"
    last = w.chat.current_assistant()
    if st == "streaming":
        return f"model: {model}; streamed characters: {len(last.text()) if last else 0}"
    if st == "banner":
        return f"model: {model}; banners: {', '.join(b.code for b in w.chat.banners())}"
    if st == "reply-versions" and last is not None:
        return f"model: {model}; version {last.version[0]}/{last.version[1]}; tool calls: {len(w.tool_panel.entries)}"
    if st == "thinking" and last is not None:
        box = w.chat_ctl.thinking.box
        shown = f"thinking: {box.mode.currentText()}, {box.budget.text()}"
        return (
            f"model: {model}; {shown}; reasoning: {len(last.reasoning)} chars; answer: {last.text().strip()}"
        )
    if st == "live-call" and last is not None:
        writing = [c.view.call.name for c in last.cards.values() if c.view.writing]
        return f"model: {model}; writing a call to: {', '.join(writing)}; live: {last.live.text()}"
    if st in ("tool-call-with-panel", "remote"):
        e = w.tool_panel.entries[next(iter(w.tool_panel.entries))]
        read = f"; read by: {e.parser}" if e.parser else ""
        return (
            f"model: {model}; tool calls: {len(w.tool_panel.entries)}; selected: {e.call.name} ({e.status})"
            + read
        )
    return f"model: {model}"
