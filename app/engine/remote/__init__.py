"""Remote engines (Qt-free, on httpx): chat with models served by llama-server, vLLM, SGLang,
Ollama, LM Studio or any OpenAI-compatible or Anthropic endpoint, with Callisto's own tools.

    from app.engine.remote import Provider, RemoteChatSession, list_models
    provider = Provider("http://127.0.0.1:8080", kind="openai")
    list_models(provider)                        # ["model-a", ...]
    session = RemoteChatSession(provider, "model-a", parser="auto", registry=..., dispatcher=...)
    for event in session.send("hi", cancel=threading.Event()): ...   # app.engine.events types

``parser``: ``api`` (the endpoint's function calling), ``callisto`` (raw text completed by the
endpoint, rendered and parsed by Callisto) or ``auto``. Keys: :mod:`app.engine.remote.keys`.
Names load lazily: importing this package imports neither httpx nor keyring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.lazy import lazy_exports

_EXPORTS = {
    "KINDS": "app.engine.remote._client",
    "MODES": "app.engine.remote._client",
    "Provider": "app.engine.remote._client",
    "RemoteError": "app.engine.remote._client",
    "fetch_props": "app.engine.remote._client",
    "list_models": "app.engine.remote._client",
    "PARSERS": "app.engine.remote._session",
    "RemoteChatSession": "app.engine.remote._session",
    "RemoteTemplate": "app.engine.remote._session",
    "is_repo_id": "app.engine.remote._session",
    "load_template": "app.engine.remote._session",
    "template_from_hub": "app.engine.remote._session",
}

__all__ = [
    "KINDS",
    "MODES",
    "PARSERS",
    "Provider",
    "RemoteChatSession",
    "RemoteError",
    "RemoteTemplate",
    "fetch_props",
    "is_repo_id",
    "list_models",
    "load_template",
    "template_from_hub",
]

if TYPE_CHECKING:
    from app.engine.remote._client import KINDS, MODES, Provider, RemoteError, fetch_props, list_models
    from app.engine.remote._session import (
        PARSERS,
        RemoteChatSession,
        RemoteTemplate,
        is_repo_id,
        load_template,
        template_from_hub,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
