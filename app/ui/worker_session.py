"""The worker's session building: the core's session builder with the window's approval dialog,
what the model picker shows about the loaded model, and the context meter."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.ui.engine_types import EngineConfig, ModelInfo, format_label

if TYPE_CHECKING:
    from app.engine.chat import ChatSession
    from app.engine.llm import LoadedModel
    from app.tools.types import ApprovalRequest
    from app.ui.mcp_host import McpHost

__all__ = ["SessionPart"]

log = logging.getLogger(__name__)


class SessionPart:
    """Part of :class:`app.ui.worker.EngineWorker`: builds its ``session`` (on the engine thread)."""

    model: LoadedModel | None
    remote: tuple[Any, str, Any] | None  # (RemoteProviderSettings, model, Provider)
    session: ChatSession | None
    config: EngineConfig
    mcp_host: McpHost
    _closing: bool
    sig_error: Any
    sig_window_notice: Any
    sig_context: Any
    _approve: Callable[[ApprovalRequest], str]  # TurnPart's

    def _model_info(self) -> ModelInfo:
        session = self.session
        tools = tuple(t["function"]["name"] for t in (session.tools or [])) if session is not None else ()
        if self.remote is not None:
            from app.ui.remote_models import remote_key

            entry, name, _provider = self.remote
            return ModelInfo(
                path=remote_key(entry.name, name),
                name=name,
                n_ctx=0,
                detected_format=None,
                detected_label=None,
                effective_format=None,
                remote=entry.name,
                remote_mode=entry.mode,
                tools=tools,
            )
        m = self.model
        assert m is not None
        from app.engine.chat import detect_model_format

        detected = session.detected_format if session is not None else detect_model_format(m)
        return ModelInfo(
            path=str(m.path),
            name=str(m.name),
            n_ctx=int(m.n_ctx),
            detected_format=detected,
            detected_label=format_label(detected),
            effective_format=session.effective_format if session is not None else None,
            template_is_fallback=bool(m.template_is_fallback),
            tools=tools,
        )

    def _build_session(self, messages: list[Any]) -> None:
        """A session from the config: the core's builder, with this worker's approval dialog.
        Problems that turned some tools off are told to the window."""
        from app.engine.session import build_session, build_tools

        cfg = self.config
        self.mcp_host.ensure(cfg.mcp_servers_path, closing=self._closing)
        tools = build_tools(
            workspace=cfg.workspace,
            mcp=self.mcp_host.manager,
            approval=self._approve,
            approvals=cfg.approvals,
            default_approval=cfg.default_approval,
            approval_timeout_s=cfg.approval_timeout_s,
        )
        for problem in tools.problems:
            if problem.code == "workspace_unusable":
                self.sig_error.emit(problem.message)
            else:
                self.sig_window_notice.emit(problem.code, problem.message, problem.setting)
        if self.remote is not None:
            from app.engine.remote import RemoteChatSession

            entry, name, provider = self.remote
            self.session = RemoteChatSession(  # type: ignore[assignment]
                provider,
                name,
                template=entry.template or None,
                tool_format="auto" if cfg.tool_format == "none" else cfg.tool_format,
                registry=None if cfg.tool_format == "none" else tools.registry,
                dispatcher=None if cfg.tool_format == "none" else tools.dispatcher,
                system_prompt=cfg.system_prompt or None,
                sampling=self._sampling(cfg),
                max_tokens=cfg.max_tokens,
                messages=messages,
            )
            return
        self.session = build_session(
            self.model,
            tools=tools,
            tool_format=cfg.tool_format,
            system_prompt=cfg.system_prompt,
            sampling=self._sampling(cfg),
            max_tokens=cfg.max_tokens,
            messages=messages,
        )

    @staticmethod
    def _sampling(cfg: EngineConfig) -> Any:
        """The user's sampler values; the engine fills the rest from the model's GGUF recommendations."""
        return dict(cfg.sampling) or None

    @staticmethod
    def _messages_from_dicts(dicts: list[dict]) -> list[Any]:
        from app.engine.chat import Message

        return [Message.from_dict(d) for d in dicts]

    def _emit_context(self) -> None:
        """Tell the window how much of the context the open conversation takes."""
        if self.session is None or self.remote is not None:  # a remote engine's tokenizer is not here
            return
        from app.engine.context import measure

        try:
            self.sig_context.emit(measure(self.session))
        except Exception:  # noqa: BLE001 - the meter is informative; a turn reports real errors itself
            log.exception("measuring the context failed")
