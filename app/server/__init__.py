"""Qt-free local API server: the OpenAI, Anthropic, Ollama and llama-server APIs on Callisto's engine.

Public API::

    from app.server import ApiServer, ServerConfig
    server = ApiServer(ServerConfig(port=8453, models=["model.gguf"]))
    server.start()          # binds (OSError when the port is taken) and serves in the background
    server.url              # http://127.0.0.1:8453
    server.stop()

``ApiServer(config, host=engine_host)`` serves on an :class:`app.engine.host.EngineHost` it is
given (the window's: one queue and one set of loaded models for the chat and the server) and
neither starts nor stops it; without one it runs an engine of its own (``python -m app serve``).

Endpoints: ``/v1/chat/completions``, ``/v1/completions``, ``/v1/responses``, ``/v1/embeddings``,
``/v1/models`` (OpenAI), ``/v1/messages``, ``/v1/messages/count_tokens`` (Anthropic),
``/api/chat``, ``/api/generate``, ``/api/embed``, ``/api/embeddings``, ``/api/tags``, ``/api/show``,
``/api/version``, ``/api/ps``, ``/api/pull``, ``/api/delete``, ``/api/create``, ``/api/copy``
(Ollama; the models made over the API are ``PresetStore``'s), ``/api/blobs/{digest}`` (Ollama's
upload of a GGUF for ``/api/create``: ``_blobs``), ``/api/v1/chat``, ``/api/v0/*``
(LM Studio's), ``/completion``,
``/infill``, ``/rerank`` (``/reranking``), ``/tokenize``, ``/detokenize``, ``/apply-template``,
``/props``, ``/slots``, ``/metrics``, ``/health`` and the OpenAI paths without ``/v1``
(llama-server),
``/v1/models/load``, ``/v1/models/unload`` (load options; also under ``/api/v1/models/`` for LM
Studio's clients). Token log probabilities come where each API has them (``_logprobs``). Every
generation goes through the engine host, behind a bounded queue: a model with slots
(``serve --parallel N``, ``app.engine.scheduler``) batches the requests it runs at once into one
decode a step; calls are parsed and returned, never run (the client runs its tools).
Names load lazily: ``import app.server`` imports neither Starlette nor llama.cpp.

Bounds (``ServerConfig``): a request's headers must arrive within ``header_timeout_s`` (10 s) and
its body within ``body_timeout_s`` (60 s) of them, else 408; at most ``max_connections`` (128,
fewer under a low open-file limit) are open, idle ones giving way to new ones (``_http``); a body
of at most ``max_body_bytes`` (32 MiB: images come as base64 in it; else 413) with no integer past 4300 digits; at most
``max_tools`` (128) tools and ``max_schema_bytes`` (256 KiB) of tool and response schemas per
request, checked before any engine work (else 400 naming the limit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.lazy import lazy_exports

_EXPORTS = {
    "ApiServer": "app.server._app",
    "DEFAULT_PORT": "app.server._state",
    "RequestLogEntry": "app.server._app",
    "ServerConfig": "app.server._state",
    "create_app": "app.server._app",
    "ApiError": "app.server._errors",
    "Preset": "app.server._presets",
    "PresetStore": "app.server._presets",
    "default_presets_path": "app.server._presets",
    "made_from_ollama": "app.server._presets",
}

__all__ = [
    "DEFAULT_PORT",
    "ApiError",
    "ApiServer",
    "Preset",
    "PresetStore",
    "RequestLogEntry",
    "ServerConfig",
    "create_app",
    "default_presets_path",
    "made_from_ollama",
]

if TYPE_CHECKING:
    from app.server._app import ApiServer, RequestLogEntry, create_app
    from app.server._errors import ApiError
    from app.server._presets import Preset, PresetStore, default_presets_path, made_from_ollama
    from app.server._state import DEFAULT_PORT, ServerConfig

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
