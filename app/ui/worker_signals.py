"""The signals the engine worker sends the window (queued by Qt from the engine thread to the UI
thread). :class:`app.ui.worker.EngineWorker` is one; its collaborators receive it as this type,
so they can only emit."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

__all__ = ["WorkerSignals"]


class WorkerSignals(QObject):
    """Every event of the engine thread the window shows."""

    sig_text = Signal(str)
    sig_reasoning = Signal(str)
    sig_tool_call_started = Signal(object)  # ToolCallStartedEvent
    sig_tool_call_finished = Signal(object)  # ToolCallFinishedEvent
    sig_tool_call_incomplete = Signal(object)  # ToolCallIncomplete: cut off or undeclared, not run
    sig_notice = Signal(object)  # NoticeEvent
    sig_done = Signal(object)  # DoneEvent
    sig_load_progress = Signal(float, str)  # fraction (<0: unknown), what is happening
    sig_loaded = Signal(object)  # ModelInfo
    sig_error = Signal(str)
    sig_load_failed = Signal(str, str)  # path, message: the model loaded before (if any) is still loaded
    sig_approval_requested = Signal(object)  # app.tools.ApprovalRequest
    sig_busy = Signal(bool)
    sig_conversation_saved = Signal(int)  # conversation id whose messages changed
    sig_window_notice = Signal(str, str, object)  # code, message, setting (or None): a window banner
    sig_context = Signal(object)  # app.engine.context.ContextUsage of the open conversation
    sig_named = Signal(int, str, str)  # a chat's title from the model: its id, the title ("": none), why not
