"""The Server page's slots (a part of :mod:`app.ui.server_page`): the "Parallel requests" field
(``server.parallel``: while the server runs, every model of the window's engine is loaded with
that many slots, see ``EngineHost.set_parallel``), the note under it (each slot gets the whole
context, and the KV memory that takes), and "Active slots" (busy of N, and by whom).

A change of the field is saved at once; a running server's models get the new slots once the
person stops stepping (one reload, not one per step)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QFormLayout, QLabel, QSpinBox

from app.ui.labels import FormNote

__all__ = ["ServerSlots", "SlotsSources", "load_fields", "spin_box"]

_SHA256 = re.compile(r"[0-9a-f]{64}")

MIB = 1024**2


def spin_box(name: str, span: tuple[int, int, int], tip: str, changed: Callable[[int], None]) -> QSpinBox:
    """A named spin box from ``span`` (lowest, highest, value) that calls ``changed`` on a change."""
    box = QSpinBox()
    box.setObjectName(name)
    box.setRange(span[0], span[1])
    box.setValue(span[2])
    box.setToolTip(tip)
    box.valueChanged.connect(changed)
    return box


def load_fields(
    settings: Any, model_path: str | None, *, n_ctx: int | None = None, n_threads: int | None = None
) -> dict[str, Any]:
    """What a model the server loads itself is loaded with, as ``ServerConfig`` fields: the chat's
    model's effective settings (``app.storage.settings.effective_settings``: the global ones with
    its override on top), those the window's own model loads with (``Sessions.load_settings``):
    its context (``n_ctx``, ``n_threads``: the page's own, where it was given them), GPU layers,
    threads, the KV cache's type, flash attention and speculative decoding; and the chat template
    each model's own settings set (This model), by its file."""
    from app.server._state import template_key
    from app.storage.settings import effective_settings

    eff = effective_settings(settings, model_path)
    templates = {
        template_key(key): ov.chat_template
        for key, ov in settings.model_overrides.items()
        if ov.chat_template and not _SHA256.fullmatch(key)  # (a sha256 key names no file)
    }
    return {
        "chat_templates": templates,
        "n_ctx": int(n_ctx or eff.context_length),
        "n_threads": n_threads or eff.threads,
        "n_gpu_layers": eff.gpu_layers,  # None: automatic, as the window's (LoadSettings.n_gpu_layers)
        "kv_type": eff.kv_type,
        "flash_attn": eff.flash_attn,
        "ngram_draft": eff.ngram_draft,
        "draft_model": eff.draft_model,
    }


@dataclass(frozen=True)
class SlotsSources:
    """What the part reads of its page, each when it is needed: ``save(n)`` keeps the setting,
    ``host()`` the engine the server runs on (the window's, or a server's own; None: none yet),
    ``shared()`` the window's engine (None: the server has its own), ``server()`` the running
    server (None: off),
    ``model_path()`` the chat's model file, ``n_ctx()`` the context a model is loaded with and
    ``kv_type()`` its KV cache's type."""

    save: Callable[[int], None]
    host: Callable[[], Any]
    shared: Callable[[], Any]
    server: Callable[[], Any]
    model_path: Callable[[], str | None]
    n_ctx: Callable[[], int]
    kv_type: Callable[[], str]


class ServerSlots(QObject):
    """Adds "Parallel requests", its note and "Active slots" to the ``form`` of the page ``parent``."""

    APPLY_MS = 600  # a run of steps on the field reloads the models once

    def __init__(self, form: QFormLayout, value: int, sources: SlotsSources, parent: QObject) -> None:
        super().__init__(parent)  # the page: its timers end with it
        self.sources = sources
        self.box = spin_box(
            "serverParallel",
            (1, 16, int(value)),
            "While the server runs, a model is loaded with this many slots: this many requests (and "
            "the chat's turn) stream at once, batched; with the server off the chat's model has one",
            self._on_value,
        )
        self.box.setSuffix(" slots")
        form.addRow("Parallel requests", self.box)
        self.note = FormNote()
        self.note.setObjectName("serverParallelNote")
        form.addRow("", self.note)
        # the loaded model's slots in use: requests streaming at once, batched (app.engine.scheduler)
        self.active = QLabel("-")
        self.active.setObjectName("serverSlots")
        form.addRow("Active slots", self.active)
        self._shapes: dict[str, tuple[int, int, int] | None] = {}  # a file's KV shape, read once
        self._apply = QTimer(self)
        self._apply.setSingleShot(True)
        self._apply.setInterval(self.APPLY_MS)
        self._apply.timeout.connect(self.apply)
        self._tick = QTimer(self)
        self._tick.setInterval(1000)
        self._tick.timeout.connect(self.refresh)
        self._tick.start()
        self.refresh()

    @property
    def value(self) -> int:
        return int(self.box.value())

    def set_value(self, n: int) -> None:
        """The setting changed elsewhere: the field shows it (and a running server applies it)."""
        if self.box.value() != n:
            self.box.setValue(int(n))

    def started(self) -> None:
        """The server started on the window's engine: its models get the field's slots (the
        window's is loaded again with them). A server's own engine loads with them anyway."""
        host = self.sources.shared()
        if host is not None:
            host.set_parallel(self.value, owner="server")

    def stopped(self, *, restart: bool = False) -> None:
        """The server stopped: the window's models get one slot again (unless it starts again)."""
        self._apply.stop()
        host = self.sources.shared()
        if not restart and host is not None and host.parallel is not None:
            host.set_parallel(None, owner="server")

    def apply(self) -> None:
        """A running server's models get the field's slots now (loaded again with them)."""
        self._apply.stop()
        server = self.sources.server()
        if server is None:
            return
        state = server.state
        state.config.parallel = self.value
        state.load_settings = replace(state.load_settings, parallel=self.value)  # what /v1/models says
        self.started()

    def _on_value(self, value: int) -> None:
        self.sources.save(int(value))
        self.show_note()
        if self.sources.server() is not None:
            self._apply.start()  # (again): once the person stops stepping

    def _kv_per_slot(self, path: str, n_ctx: int) -> int | None:
        """The KV cache one slot of ``path`` takes at ``n_ctx`` (None: its shape is unknown)."""
        from app.engine.models.estimate import kv_cache_bytes

        if path not in self._shapes:
            from app.engine.models._gguf import read_summary

            try:
                s = read_summary(path)
            except (OSError, ValueError):
                s = None
            self._shapes[path] = None
            if s is not None and s.n_layers and s.n_kv_heads and s.head_dim:
                self._shapes[path] = (s.n_layers, s.n_kv_heads, s.head_dim)
        shape = self._shapes[path]
        if shape is None:
            return None
        return kv_cache_bytes(shape[0], n_ctx, shape[1], shape[2], kv_type=self.sources.kv_type())

    def show_note(self) -> None:
        """Each slot gets the whole context, and the KV memory that takes."""
        n, path, host = self.value, self.sources.model_path(), self.sources.host()
        model = host.model(path) if path and host is not None else None
        n_ctx = int(model.n_ctx) if model is not None else int(self.sources.n_ctx())
        text = f"Each slot gets the whole context ({n_ctx:,} tokens) and a KV cache of its own"
        per = self._kv_per_slot(path, n_ctx) if path else None
        if path and per is not None:
            name = Path(path).name.removesuffix(".gguf")
            text += f": {n} × {per / MIB:,.0f} MiB = {n * per / MIB:,.0f} MiB of KV memory for {name}"
        self.note.setText(text + ". With the server off the chat's model has one slot.")

    def refresh(self) -> None:
        """The note, and Active slots: busy of N and by whom (each slot with the whole context)."""
        from app.ui.engine_jobs import slot_users

        self.show_note()
        host = self.sources.host()
        model = host.model(host.current) if host is not None and host.current is not None else None
        if host is None or model is None:
            self.active.setText("-")
            return
        slots = int(model.backend.parallel) if model.isolated else 1
        owners = host.slot_owners() if slots > 1 else [o for o in [host.running_owner] if o is not None]
        users = f": {slot_users(owners)}" if owners else ""
        self.active.setText(f"{len(owners)} of {slots} busy{users} ({model.n_ctx:,} tokens of context each)")
