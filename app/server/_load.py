"""Load options over the API: ``POST /v1/models/load`` loads a model with the context, KV cache,
flash attention, slots, GPU layers, n-gram drafting and chat template a client asks for (the
server's settings fill in the rest), and ``POST /v1/models/unload`` unloads one. LM Studio's
clients find them at ``/api/v1/models/load`` and ``/api/v1/models/unload`` too (its field names:
``context_length``, ``flash_attention``, ``echo_load_config``; its ``instance_id`` answer), and
LM Studio's list of models at ``GET /api/v1/models``: each model's key, size, architecture,
quantization, parameters, training context, capabilities (vision, tool use) and its loaded
instance with its settings.

A model already loaded with exactly those settings (or, when the body gives none, with any) is
kept; one loaded otherwise is loaded again with them (as the window's own model is: the window goes on with it). The settings hold for that
load: a model unloaded and loaded again on demand (JIT) later gets the server's. ``ttl`` is the
time it stays loaded once idle, as on every request (``app.server._idle``). A load is a job on
the engine's queue like a request (429 when the queue is full); it waits for the requests
running on the model's slots to end before it replaces the model under them."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from app.server._common import check_bool, check_int, check_str, read_chat_template, request_body
from app.server._errors import ApiError, shown
from app.server._idle import parse_ttl
from app.server._json import json_response

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.engine.llm import LoadedModel, LoadSettings

__all__ = ["list_models", "load", "publisher", "unload"]

#: LM Studio's load fields that mean nothing to llama.cpp's loads here: taken, and named as ignored
_IGNORED = ("eval_batch_size", "num_experts", "offload_kv_cache_to_gpu")
_FIELDS = (
    "model",
    "context_length",
    "kv_cache_type",
    "flash_attention",
    "parallel",
    "gpu_layers",
    "ngram_draft",
    "chat_template",
    "ttl",
    "echo_load_config",
    *_IGNORED,
)


def _settings(body: dict[str, Any], base: LoadSettings) -> tuple[LoadSettings, bool]:
    """``base`` with the load options ``body`` gives (400 naming the field for a bad one), and
    whether it gives any."""
    from app.engine.models.estimate import KV_CACHE_TYPES
    from app.engine.scheduler import MAX_PARALLEL

    unknown = sorted(k for k in body if k not in _FIELDS)
    if unknown:
        raise ApiError(
            400,
            f"unknown load option {shown(unknown[0])}; the options are: {', '.join(_FIELDS[1:])}",
            param=unknown[0][:64],
        )
    changes: dict[str, Any] = {}
    if (n_ctx := check_int(body.get("context_length"), "context_length", lo=1, hi=2**24)) is not None:
        changes["n_ctx"] = n_ctx
    kv = body.get("kv_cache_type")
    if kv is not None:
        if kv not in KV_CACHE_TYPES:
            raise ApiError(
                400,
                f"kv_cache_type must be one of {', '.join(KV_CACHE_TYPES)}, got {kv!r}",
                param="kv_cache_type",
            )
        changes["kv_type"] = kv
    if body.get("flash_attention") is not None:
        changes["flash_attn"] = check_bool(body.get("flash_attention"), "flash_attention", True)
    if (parallel := check_int(body.get("parallel"), "parallel", lo=1, hi=MAX_PARALLEL)) is not None:
        changes["parallel"] = parallel
    if (layers := check_int(body.get("gpu_layers"), "gpu_layers", lo=-1)) is not None:
        changes["n_gpu_layers"] = layers
    if body.get("ngram_draft") is not None:  # speculative decoding by n-gram lookup (serve --ngram-draft)
        changes["ngram_draft"] = check_bool(body.get("ngram_draft"), "ngram_draft", True)
    if "chat_template" in body:
        # a Jinja template that replaces the model's own for this load (as ``--chat-template-file``
        # and Settings > This model do), compiled first so a broken one loads nothing; "" or null:
        # the model's own
        changes["chat_template"] = read_chat_template(body["chat_template"], "chat_template")
    settings = replace(base, **changes)
    if settings.kv_type != "f16" and not settings.flash_attn:
        raise ApiError(
            400,
            f"a {settings.kv_type} KV cache needs flash attention: leave flash_attention out or make it true",
            param="flash_attention" if "flash_attn" in changes else "kv_cache_type",
        )
    return settings, bool(changes)


def _config(model: LoadedModel, settings: LoadSettings) -> dict[str, Any]:
    """What the model was loaded with, in the load options' names."""
    return {
        "context_length": int(model.n_ctx),
        "kv_cache_type": settings.kv_type,
        "flash_attention": bool(settings.flash_attn),
        "parallel": int(getattr(model.backend, "parallel", 1) or 1),
        "gpu_layers": int(model.n_gpu_layers),
        "ngram_draft": bool(settings.ngram_draft),
        # the template it renders with when it is not the model's own (the whole of it: /props too)
        "chat_template": settings.chat_template,
    }


async def load(request: Request):
    """Load a model with the options the body gives; answer when it is loaded (or why it is not)."""
    from starlette.concurrency import run_in_threadpool

    state, body = await request_body(request)
    name = check_str(body.get("model"), "model")
    ttl = parse_ttl(body.get("ttl"))
    echo = check_bool(body.get("echo_load_config"), "echo_load_config", False)
    entry = await run_in_threadpool(state.catalog.resolve, name, None)
    request.scope.setdefault("callisto.log", {})["model"] = entry.id
    # no options: the model as it is loaded (or with the server's settings); options: exactly those
    settings, exact = _settings(body, state.settings_for(entry))
    path = state.reaper.begin(entry)  # in use until it is loaded: no sweep unloads it meanwhile
    started = time.monotonic()
    try:
        host = state.host
        model, effective = host.model(entry.path), host.settings_of(entry.path)
        if model is None or effective is None or not host.loaded_as(entry.path, settings if exact else None):
            # a job on the engine's queue loads it (after the requests on a model it replaces)
            model, effective = await _load_job(state, entry, settings, exact)
    finally:
        state.reaper.end(path, ttl)
    answer: dict[str, Any] = {
        "type": "vlm" if getattr(model, "vision", False) else "llm",
        "instance_id": entry.id,
        "load_time_seconds": round(time.monotonic() - started, 3),
        "status": "loaded",
    }
    if echo or request.url.path.startswith("/v1/"):
        answer["load_config"] = _config(model, effective)
    ignored = [k for k in _IGNORED if body.get(k) is not None]
    if ignored:
        answer["ignored"] = ignored
    return json_response(answer)


async def _load_job(state: Any, entry: Any, settings: LoadSettings, exact: bool) -> tuple[Any, Any]:
    """Load ``entry`` with ``settings`` (``exact``: reload it if it is loaded otherwise) by a job
    on the engine's queue; (the model, what it was loaded with), or the load's error."""
    from starlette.concurrency import run_in_threadpool

    from app.engine.host import Job
    from app.server._engine import as_api_error, submit_job

    done = threading.Event()
    out: list[Any] = []

    def run(host: Any, model: Any) -> None:
        out.append((model, host.settings_of(entry.path)))
        done.set()

    def failed(err: BaseException) -> None:
        out.append(err)
        done.set()

    submit_job(
        state.host, Job(run=run, model=entry, owner="server", settings=settings, exact=exact, on_error=failed)
    )
    await run_in_threadpool(done.wait)
    if isinstance(out[0], BaseException):
        raise as_api_error(out[0])
    return out[0]


async def unload(request: Request):
    """Unload a model once no request uses it: now if none does (answered once it is gone), else
    when the last one ends."""
    from starlette.concurrency import run_in_threadpool

    state, body = await request_body(request)
    name = check_str(body.get("instance_id", body.get("model")), "instance_id")
    entry = await run_in_threadpool(state.catalog.resolve, name, None)
    request.scope.setdefault("callisto.log", {})["model"] = entry.id
    if state.host.model(entry.path) is None:
        raise ApiError(
            404, f"the model {entry.id} is not loaded", param="instance_id", code="model_not_loaded"
        )
    await run_in_threadpool(state.reaper.expire, entry)
    return json_response({"instance_id": entry.id})


async def list_models(request: Request):
    """``GET /api/v1/models``: the models offered, as LM Studio's REST API lists them."""
    from starlette.concurrency import run_in_threadpool

    state = request.app.state.callisto
    entries = await run_in_threadpool(state.catalog.entries, refresh=True)
    return json_response({"models": [_lm_studio_model(state, e) for e in entries]})


def publisher(entry: Any) -> str:
    """LM Studio's ``publisher`` of a model: the repository's owner for one downloaded into the
    library (its folder is ``owner__repo``), else ""."""
    owner, sep, _repo = entry.path.parent.name.partition("__")
    return owner if sep else ""


def _lm_studio_model(state: Any, entry: Any) -> dict[str, Any]:
    """One model in LM Studio's words (``type`` is "embedding" for a loaded model that writes no
    text; ``publisher``: the repository's owner for a model downloaded into the library)."""
    from app.engine.models.metadata import format_parameter_count

    host = state.host
    model, settings = host.model(entry.path), host.settings_of(entry.path)
    loaded = []
    if model is not None and settings is not None:
        config = _config(model, settings)
        loaded.append(
            {
                "id": entry.id,
                "config": {
                    "context_length": config["context_length"],
                    "parallel": config["parallel"],
                    "flash_attention": config["flash_attention"],
                    "kv_cache_type": config["kv_cache_type"],
                },
            }
        )
    bits = round(entry.size * 8 / entry.parameter_count, 2) if entry.parameter_count and entry.size else None
    return {
        "type": "embedding" if model is not None and not getattr(model, "generates", True) else "llm",
        "publisher": publisher(entry),
        "key": entry.id,
        "display_name": entry.id,
        "architecture": entry.architecture,
        "quantization": {"name": entry.quantization, "bits_per_weight": bits} if entry.quantization else None,
        "size_bytes": entry.size,
        "params_string": format_parameter_count(entry.parameter_count) if entry.parameter_count else None,
        "loaded_instances": loaded,
        "max_context_length": entry.context_length or (int(model.n_ctx) if model is not None else None),
        "format": "gguf",
        "capabilities": {
            "vision": state.has_vision(entry),
            "trained_for_tool_use": entry.tool_format not in (None, "", "none"),
        },
    }
