"""The worker's models and sessions (on the engine thread): loading a local model or connecting to
a remote one, settings and conversations applied, the session built with the window's approval
dialog (the dispatcher asks through :class:`~app.ui.approval_bridge.ApprovalBridge`), what the model picker shows about the loaded model, and the context meter.

Loading keeps the current model until the new one has loaded: a failed load leaves the old
model and its session as they were.
"""

from __future__ import annotations

import logging
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.ui.engine_types import EngineConfig, EngineState, ModelInfo, RemoteModel, format_label

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.engine.host import EngineHost
    from app.engine.llm import LoadedModel, LoadSettings
    from app.engine.messages import Message
    from app.storage.history import MessageRecord
    from app.storage.settings import RemoteProviderSettings
    from app.tools.types import ApprovalRequest
    from app.ui.approval_bridge import ApprovalBridge
    from app.ui.mcp_host import McpHost
    from app.ui.worker_signals import WorkerSignals

__all__ = ["OWNER", "Sessions", "load_failure"]

log = logging.getLogger(__name__)

OWNER = "window"  # the owner of the window's jobs on the shared engine host


def load_failure(path: str, exc: BaseException) -> str:
    """What the window says when ``path`` did not load: the file's name and the problem, once
    ("Could not load x.gguf: it is truncated", not the engine's "Cannot load /full/path/x.gguf: ..."
    after it); a problem with another file of the model (its projector) names that file."""
    from app.engine.errors import ModelLoadError

    name = Path(path).name
    if isinstance(exc, ModelLoadError):
        other = Path(exc.path).name
        return f"Could not load {name}: " + (exc.problem if other == name else f"{other}: {exc.problem}")
    return f"Could not load {name}: {exc}"


@dataclass(eq=False)
class Sessions:
    """The window's model (local or remote) and its session in :class:`EngineState`."""

    state: EngineState
    _: KW_ONLY
    host: EngineHost
    signals: WorkerSignals
    mcp_host: McpHost
    approvals: ApprovalBridge
    #: a conversation opened before any model was loaded
    pending_messages: list[MessageRecord] = field(default_factory=list)

    # -- loading ------------------------------------------------------------------------------------
    def load_settings(self) -> LoadSettings:
        from app.engine.llm import LoadSettings

        cfg = self.state.config
        kv_store = None
        if cfg.kv_store_mib > 0:
            from app.engine.kvstore import KVStoreConfig
            from app.storage.paths import data_dir

            kv_store = KVStoreConfig(str(data_dir() / "kv"), max_bytes=cfg.kv_store_mib * 1024**2)
        return LoadSettings(
            n_ctx=cfg.n_ctx,
            n_gpu_layers=cfg.n_gpu_layers,
            n_threads=cfg.n_threads,
            kv_type=cfg.kv_type,
            flash_attn=cfg.flash_attn,
            kv_store=kv_store,
            ngram_draft=cfg.ngram_draft,
            draft_model=cfg.draft_model,
            chat_template=cfg.chat_template,
        )

    @staticmethod
    def with_projector(settings: LoadSettings, path: str) -> LoadSettings:
        """``settings`` for loading ``path``: with the vision projector chosen for it in the
        library (the Models page), else as they are (the engine looks beside the model)."""
        from dataclasses import replace

        from app.engine.models.library import projector_for

        chosen = projector_for(path)
        return settings if chosen is None else replace(settings, mmproj=chosen)

    def _messages_to_keep(self) -> list[Any]:
        """The open conversation's messages: the session's, or those opened before any model."""
        if self.state.session is not None:
            return list(self.state.session.messages)
        pending, self.pending_messages = self.pending_messages, []
        return messages_from_records(pending)

    def load(self, path: str, config: EngineConfig | None) -> None:
        st, sig = self.state, self.signals
        if st.closing:
            return
        if config is not None:
            st.config = config
        sig.sig_load_progress.emit(0.05, f"Reading {Path(path).name}…")
        try:
            sig.sig_load_progress.emit(-1.0, f"Loading {Path(path).name}…")
            settings = self.load_settings()
            self.host.settings = settings  # what the server and the check load models with
            model = self.host.ensure(
                path, settings=self.with_projector(settings, path), exact=True, owner=OWNER
            )
        except Exception as exc:  # noqa: BLE001 - ModelLoadError and anything llama.cpp raises
            sig.sig_load_progress.emit(0.0, "")
            sig.sig_load_failed.emit(path, load_failure(path, exc))
            return
        messages = self._messages_to_keep()  # the open conversation goes on with the new model
        if not self.adopt(model, messages):
            return
        sig.sig_load_progress.emit(1.0, "Loaded")
        self.announce()

    def adopt(self, model: LoadedModel, messages: list[Any]) -> bool:
        """``model`` becomes the window's, its session built with ``messages``; False (said in the
        window) when the session cannot start: the model stays."""
        st = self.state
        st.model, st.session, st.remote = model, None, None
        try:
            self.build(messages)
        except Exception as exc:  # noqa: BLE001 - a template or tool problem: said in the window, the model stays
            self.signals.sig_error.emit(f"The model loaded but a chat session could not start: {exc}")
            return False
        return True

    def load_remote(self, entry: RemoteProviderSettings, model: str, config: EngineConfig | None) -> None:
        from app.engine.remote.keys import remote_key

        st, sig = self.state, self.signals
        if st.closing:
            return
        if config is not None:
            st.config = config
        sig.sig_load_progress.emit(-1.0, f"Connecting to {entry.name}…")
        messages = self._messages_to_keep()
        previous, previous_session = st.remote, st.session
        try:
            from app.engine.remote.keys import provider_from_settings

            st.remote = RemoteModel(entry, model, provider_from_settings(entry))
            self.build(messages)
        except Exception as exc:  # noqa: BLE001 - a keychain, URL or template problem: the old model stays
            st.remote, st.session = previous, previous_session
            sig.sig_load_progress.emit(0.0, "")
            sig.sig_load_failed.emit(
                remote_key(entry.name, model), f"Could not use {model} on {entry.name}: {exc}"
            )
            return
        old, st.model = st.model, None
        if old is not None:  # the window's local model is closed (the server loads it again if asked)
            self.host.unload(old.path)
        sig.sig_load_progress.emit(1.0, "Connected")
        self.state.info = self.model_info()
        sig.sig_loaded.emit(self.state.info)

    def configure(self, config: EngineConfig) -> None:
        st = self.state
        loads = (
            *("n_ctx", "n_gpu_layers", "n_threads", "kv_type", "flash_attn", "kv_store_mib"),
            *("ngram_draft", "draft_model"),  # speculative decoding is set up at load
            "chat_template",  # the loaded model's template (the server's requests use it too)
        )
        reload = st.model is not None and any(getattr(config, k) != getattr(st.config, k) for k in loads)
        st.config = config
        if st.model is None and st.remote is None:
            return
        if reload and st.model is not None:
            messages = list(st.session.messages) if st.session is not None else []
            self.load(str(st.model.path), config)
            if st.session is not None and messages:
                self.build(messages)
            return
        try:
            self.build(list(st.session.messages) if st.session is not None else [])
            self.announce()
        except Exception as exc:  # noqa: BLE001 - a template or tool problem: said in the window
            self.signals.sig_error.emit(f"Could not apply the settings: {exc}")

    def open(
        self, conversation_id: int | None, records: list[MessageRecord], system_prompt: str | None = None
    ) -> None:
        st = self.state
        st.conversation_id = conversation_id
        st.chat_system = system_prompt
        if st.model is None and st.remote is None:
            self.pending_messages = records
            return
        try:
            self.build(messages_from_records(records))
        except Exception as exc:  # noqa: BLE001 - a stored message the session refuses: said in the window
            self.signals.sig_error.emit(f"Could not open the conversation: {exc}")
            return
        self.emit_context()

    def set_chat_system(self, text: str | None) -> None:
        """The open conversation's own system prompt (None: the config's): the session is made
        again with its messages, and the context meter counts the new prompt."""
        st = self.state
        st.chat_system = text
        if st.session is None:
            return
        try:
            self.build(list(st.session.messages))
        except Exception as exc:  # noqa: BLE001 - a template that refuses it: said in the window
            self.signals.sig_error.emit(f"Could not use the system prompt: {exc}")
            return
        self.emit_context()

    # -- the session --------------------------------------------------------------------------------
    def approve(self, request: ApprovalRequest) -> str:
        """The dispatcher asks (on the engine thread); the window's dialog answers."""
        return self.approvals.ask(request, refuse=self.state.cancel.is_set() or self.state.closing)

    def announce(self) -> None:
        """Tell the window what is loaded now, and how much of its context the conversation takes."""
        self.state.info = self.model_info()
        self.signals.sig_loaded.emit(self.state.info)
        self.emit_context()

    def model_info(self) -> ModelInfo:
        st = self.state
        session = st.session
        tools = tuple(t["function"]["name"] for t in (session.tools or [])) if session is not None else ()
        if st.remote is not None:
            return ModelInfo(
                path=st.remote.key,
                name=st.remote.model,
                n_ctx=0,
                detected_format=None,
                detected_label=None,
                effective_format=None,
                remote=st.remote.entry.name,
                remote_mode=st.remote.entry.mode,
                tools=tools,
                thinking_kind="remote",  # the endpoint reads the choice (app.engine.remote)
                thinking_levels=("low", "medium", "high"),
            )
        m = st.model
        assert m is not None
        from app.engine.chat import ChatSession, detect_model_format

        local = session if isinstance(session, ChatSession) else None
        detected = local.detected_format if local is not None else detect_model_format(m)
        control = local.thinking_control if local is not None else None
        return ModelInfo(
            path=str(m.path),
            name=str(m.name),
            n_ctx=int(m.n_ctx),
            detected_format=detected,
            detected_label=format_label(detected),
            effective_format=local.effective_format if local is not None else None,
            template_is_fallback=bool(m.template_is_fallback),
            tools=tools,
            thinking_kind=control.kind if control is not None else "none",
            thinking_levels=tuple(control.levels) if control is not None else (),
            vision=bool(m.vision),
        )

    def build(self, messages: list[Any]) -> None:
        """A session from the config: the core's builder, with the window's approval dialog.
        Problems that turned some tools off are told to the window."""
        from app.engine.session import build_session, build_tools

        st, cfg = self.state, self.state.config
        self.mcp_host.ensure(cfg.mcp_servers_path, closing=st.closing)
        tools = build_tools(
            workspace=cfg.workspace,
            mcp=self.mcp_host.manager,
            approval=self.approve,
            approvals=cfg.approvals,
            pins=cfg.pins,
            default_approval=cfg.default_approval,
            approval_timeout_s=cfg.approval_timeout_s,
        )
        for problem in tools.problems:
            if problem.code == "workspace_unusable":
                self.signals.sig_error.emit(problem.message)
            else:
                self.signals.sig_window_notice.emit(problem.code, problem.message, problem.setting)
        # a local session's and a remote one's; the engine fills the sampling that is not set from
        # the GGUF's recommendations
        options: dict[str, Any] = {
            "system_prompt": st.chat_system or cfg.system_prompt or None,  # the chat's own first
            "sampling": dict(cfg.sampling) or None,
            "max_tokens": cfg.max_tokens,
            "max_rounds": cfg.max_tool_rounds,
            "messages": messages,
        }
        if st.remote is not None:
            from app.engine.remote import RemoteChatSession

            off = cfg.tool_format == "none"
            st.session = RemoteChatSession(
                st.remote.provider,
                st.remote.model,
                template=st.remote.entry.template or None,
                tool_format="auto" if off else cfg.tool_format,
                registry=None if off else tools.registry,
                dispatcher=None if off else tools.dispatcher,
                **options,
            )
            return
        assert st.model is not None  # a local model, or the remote one above
        from app.engine.messages import Message

        st.session = build_session(
            st.model,
            tools=tools,
            tool_format=cfg.tool_format,
            opening=[Message(role=role, content=content) for role, content in cfg.opening] or None,
            stop=cfg.stop or None,
            **options,
        )

    def emit_draft_context(self) -> None:
        """Tell the window how much of the context the next prompt takes with the message being
        written (``state.draft``, the latest the window gave)."""
        st = self.state
        st.draft_asked = False
        if st.session is None or st.remote is not None or st.busy.is_set():
            return
        from app.engine.context import measure_draft

        try:
            self.signals.sig_context.emit(measure_draft(st.session, st.draft))
        except Exception:  # noqa: BLE001 - the meter is informative; a turn reports real errors itself
            log.exception("measuring the message being written failed")

    def name_chat(self, cid: int, question: str, answer: str) -> None:
        """Ask the model (local, or a remote engine's) for a title of the chat ``cid`` that starts with ``question`` and
        ``answer``: ``sig_named(cid, title, "")``, or ``sig_named(cid, "", why not)``."""
        from app.engine.titles import model_title, remote_title

        remote, model = self.state.remote, self.state.model
        title, why = "", ""
        if remote is None and (model is None or model.closed):
            why = "no model is loaded"
        else:
            try:
                if remote is not None:
                    title = remote_title(remote.provider, remote.model, question, answer) or ""
                elif model is not None:
                    title = model_title(model, question, answer) or ""
            except Exception as exc:  # noqa: BLE001 - a crash, a deadline, the engine's error: said
                why = str(exc) or type(exc).__name__
            if not title and not why:
                why = "the model wrote no title"
        self.signals.sig_named.emit(cid, title, why)

    def emit_context(self) -> None:
        """Tell the window how much of the context the open conversation takes."""
        st = self.state
        if st.session is None or st.remote is not None:  # a remote engine's tokenizer is not here
            return
        from app.engine.context import measure

        try:
            self.signals.sig_context.emit(measure(st.session))
        except Exception:  # noqa: BLE001 - the meter is informative; a turn reports real errors itself
            log.exception("measuring the context failed")


def messages_from_records(records: Sequence[MessageRecord]) -> list[Message]:
    """The chat loop's messages from the stored ones (typed all the way: no dict round trip)."""
    from app.engine.messages import Message

    return [
        Message(
            role=r.role,
            content=r.content,
            reasoning=r.reasoning or "",
            tool_calls=[tc.call for tc in r.tool_calls],
            tool_call_id=r.tool_call_id,
            name=r.name,
            incomplete_calls=r.incomplete_calls,
            images=list(r.images) if r.role == "user" else [],
        )
        for r in records
    ]
