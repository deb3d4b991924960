"""The Starlette application and the server that runs it on uvicorn in a background thread."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine.host import EngineHost
from app.server import (
    _anthropic,
    _blobs,
    _llamacpp,
    _lmstudio,
    _load,
    _metrics,
    _ollama,
    _openai,
    _presets,
    _pull,
    _responses,
)
from app.server._errors import ApiError, api_of_path, error_response, log_error
from app.server._models import ModelCatalog, ModelEntry
from app.server._state import ServerConfig, ServerState

__all__ = [
    "ApiServer",
    "RequestLogEntry",
    "create_app",
    "resolve_model_arg",
    "serve_option_errors",
    "serve_warnings",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestLogEntry:
    """One served request, as the window's log shows it."""

    time: float
    method: str
    path: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    duration_s: float
    tool_calls: int
    status: int
    #: why it failed, as the client was told ("" when it did not)
    error: str = ""


def _routes():
    from starlette.routing import Route

    return [
        Route("/v1/chat/completions", _openai.chat_completions, methods=["POST"]),
        Route("/v1/completions", _openai.completions, methods=["POST"]),
        Route("/v1/embeddings", _openai.embeddings, methods=["POST"]),
        Route("/v1/responses", _responses.create_response, methods=["POST"]),
        Route("/v1/responses/{response_id}", _responses.get_response, methods=["GET"]),
        Route("/v1/responses/{response_id}", _responses.delete_response, methods=["DELETE"]),
        Route("/v1/models", _openai.list_models, methods=["GET"]),
        Route("/v1/models/load", _load.load, methods=["POST"]),
        Route("/v1/models/unload", _load.unload, methods=["POST"]),
        Route("/v1/models/{model:path}", _openai.get_model, methods=["GET"]),
        Route("/api/v1/chat", _lmstudio.chat, methods=["POST"]),  # LM Studio's
        Route("/api/v1/models", _load.list_models, methods=["GET"]),
        Route("/api/v0/models", _lmstudio.v0_models, methods=["GET"]),  # LM Studio's older REST API
        Route("/api/v0/models/{model:path}", _lmstudio.v0_get_model, methods=["GET"]),
        Route("/api/v0/chat/completions", _lmstudio.v0_chat_completions, methods=["POST"]),
        Route("/api/v0/completions", _lmstudio.v0_completions, methods=["POST"]),
        Route("/api/v0/embeddings", _openai.embeddings, methods=["POST"]),
        Route("/api/v1/models/load", _load.load, methods=["POST"]),
        Route("/api/v1/models/download", _pull.download, methods=["POST"]),
        Route("/api/v1/models/download/status/{job_id}", _pull.download_status, methods=["GET"]),
        Route("/api/v1/models/unload", _load.unload, methods=["POST"]),
        Route("/v1/messages", _anthropic.messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", _anthropic.count_tokens, methods=["POST"]),
        Route("/api/chat", _ollama.chat, methods=["POST"]),
        Route("/api/generate", _ollama.generate, methods=["POST"]),
        Route("/api/embed", _ollama.embed, methods=["POST"]),
        Route("/api/embeddings", _ollama.embeddings, methods=["POST"]),
        Route("/api/tags", _ollama.tags, methods=["GET"]),
        Route("/api/show", _ollama.show, methods=["POST"]),
        Route("/api/version", _ollama.version, methods=["GET"]),
        Route("/api/ps", _ollama.ps, methods=["GET"]),
        Route("/api/pull", _pull.pull, methods=["POST"]),
        Route("/api/delete", _pull.delete, methods=["DELETE"]),
        Route("/api/create", _presets.create, methods=["POST"]),
        Route("/api/copy", _presets.copy, methods=["POST"]),
        Route("/api/blobs/{digest}", _blobs.head_blob, methods=["HEAD"]),
        Route("/api/blobs/{digest}", _blobs.upload_blob, methods=["POST"]),
        Route("/completion", _llamacpp.completion, methods=["POST"]),  # llama-server's own
        Route("/infill", _llamacpp.infill, methods=["POST"]),
        Route("/rerank", _llamacpp.rerank, methods=["POST"]),
        Route("/v1/rerank", _llamacpp.rerank, methods=["POST"]),  # Jina's and llama-server's
        Route("/v2/rerank", _llamacpp.rerank, methods=["POST"]),  # Cohere's
        # llama-server's paths without /v1, where a client whose base URL lacks it sends them
        Route("/chat/completions", _openai.chat_completions, methods=["POST"]),
        Route("/completions", _openai.completions, methods=["POST"]),
        Route("/embeddings", _openai.embeddings, methods=["POST"]),
        Route("/models", _openai.list_models, methods=["GET"]),
        Route("/reranking", _llamacpp.rerank, methods=["POST"]),
        Route("/v1/reranking", _llamacpp.rerank, methods=["POST"]),
        Route("/tokenize", _llamacpp.tokenize, methods=["POST"]),
        Route("/detokenize", _llamacpp.detokenize, methods=["POST"]),
        Route("/apply-template", _llamacpp.apply_template, methods=["POST"]),
        Route("/props", _llamacpp.props, methods=["GET"]),
        Route("/slots", _metrics.slots, methods=["GET"]),
        Route("/metrics", _metrics.metrics, methods=["GET"]),
        Route("/health", _health, methods=["GET"]),
        Route("/", _root, methods=["GET", "HEAD"]),
    ]


async def _root(request):
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("Callisto is running")  # what Ollama answers, so its clients find us


async def _health(request):
    """llama-server's readiness probe: the server answers (models load on demand)."""
    from app.server._json import json_response

    return json_response({"status": "ok"})


def create_app(state: ServerState, *, on_response: Callable[[dict[str, Any]], None] | None = None):
    """The ASGI app: routes behind the gate (Host, Origin, API key); errors in each API's shape."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException

    from app.server._auth import Gate

    async def api_error(request, exc: ApiError):
        log_error(request.scope, exc)
        return error_response(api_of_path(request.url.path), exc)

    async def http_error(request, exc: HTTPException):
        msg = {
            404: f"there is no endpoint {request.url.path}",
            405: f"{request.method} is not allowed on {request.url.path}",
        }.get(exc.status_code, str(exc.detail))
        err = ApiError(exc.status_code, msg)
        log_error(request.scope, err)
        return error_response(api_of_path(request.url.path), err)

    async def crash(request, exc: Exception):
        log.exception("request failed")
        err = ApiError(500, f"internal error: {exc}")
        log_error(request.scope, err)
        return error_response(api_of_path(request.url.path), err)

    # Starlette types a handler as taking any Exception; each of these takes the class it is keyed by.
    handlers: dict[Any, Any] = {ApiError: api_error, HTTPException: http_error, Exception: crash}
    app = Starlette(routes=_routes(), exception_handlers=handlers)
    app.state.callisto = state
    return Gate(
        app,
        bound_host=state.config.host,
        api_key=state.config.api_key,
        cors_origins=state.config.cors_origins,
        allowed_hosts=state.config.allowed_hosts,
        on_response=on_response,
    )


class ApiServer:
    """The server: ``start()`` binds and serves in a background thread (raises ``OSError`` with a
    clear message when the port is taken), ``stop()`` shuts it down. ``log`` keeps the latest
    requests; ``on_request`` is called (on the server's thread) for each one.

    ``host``: the engine to run requests on (the window's, shared with its chat; it is neither
    started nor stopped here). Without one the server has an engine of its own (``serve``).
    ``library``: the window's ``Library`` (the server lists the models the window's library holds).
    ``held()``: the model the window holds (a path or None), never unloaded for being idle;
    ``clock()``: the monotonic seconds idle times are measured in (tests give their own)."""

    def __init__(
        self,
        config: ServerConfig | None = None,
        *,
        on_request: Callable[[RequestLogEntry], None] | None = None,
        host: EngineHost | None = None,
        library: Any = None,
        held: Callable[[], Any] | None = None,
        clock: Callable[[], float] | None = None,
    ):
        self.config = config or ServerConfig()
        from app.server._presets import PresetStore

        self.catalog = ModelCatalog(
            self.config.models,
            use_library=self.config.use_library,
            library=library,
            presets=PresetStore(self.config.presets_file()),
        )
        self.owns_host = host is None
        if host is None:
            host = EngineHost(
                max_loaded=self.config.max_loaded,
                queue_size=self.config.queue_size,
                settings=self.config.load_settings(),
                name="callisto-server-engine",
            )
        self.host = host
        self.state = ServerState(self.config, self.host, self.catalog)
        self.reaper = self.state.reaper  # unloads idle models (app.server._idle)
        if held is not None:
            self.reaper.held = held
        if clock is not None:
            self.reaper.clock = clock
        self.on_request = on_request
        self.log: deque[RequestLogEntry] = deque(maxlen=500)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.port = self.config.port

    @property
    def url(self) -> str:
        host = self.config.host
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        if ":" in shown:
            shown = f"[{shown}]"
        return f"http://{shown}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _record(self, data: dict[str, Any]) -> None:
        entry = RequestLogEntry(
            time=time.time(),
            method=data.get("method", ""),
            path=data.get("path", ""),
            model=data.get("model", "") or "",
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            duration_s=float(data.get("duration_s") or 0.0),
            tool_calls=int(data.get("tool_calls") or 0),
            status=int(data.get("status") or 0),
            error=str(data.get("error") or ""),
        )
        self.log.append(entry)
        if self.on_request is not None:
            try:
                self.on_request(entry)
            except Exception:  # noqa: BLE001 - a broken listener must not break serving
                log.exception("request listener failed")

    def bind(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        if hasattr(socket, "SO_EXCLUSIVEADDRUSE"):  # Windows: no port stealing
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
        else:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.config.host, self.config.port))
        except OSError as exc:
            sock.close()
            raise OSError(
                exc.errno,
                f"cannot listen on {self.config.host}:{self.config.port}: "
                f"{exc.strerror or exc} (is another server using the port?)",
            ) from exc
        sock.listen(128)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        return sock

    def start(self) -> None:
        """Bind (``OSError`` when the port is busy), start the engine thread and the server thread."""
        if self.running:
            return
        import uvicorn

        entry = (
            self.catalog.resolve(self.config.preload) if self.config.preload else None
        )  # 404: nothing bound
        _import_model_readers()
        self._sock = self.bind()
        if self.owns_host:
            self.host.start()
        if entry is not None:
            from app.server._engine import submit_job

            submit_job(self.host, self._preload_job(entry))
        self.reaper.start(self.config.idle_sweep_s)
        from app.server._http import ConnectionLimits, bounded_protocol, quiet_accept_errors

        app = create_app(self.state, on_response=self._record)
        limits = ConnectionLimits(
            header_timeout_s=self.config.header_timeout_s,
            body_timeout_s=self.config.body_timeout_s,
            max_connections=self.config.max_connections,
            upload_prefixes=(_blobs.BLOB_PREFIX,),
        )
        cfg = uvicorn.Config(
            app,
            http=bounded_protocol(limits),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=30,
            timeout_graceful_shutdown=3,
        )
        self._server = uvicorn.Server(cfg)
        self._server.install_signal_handlers = lambda: None  # uvicorn <0.29
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            quiet_accept_errors(loop)

            async def main() -> None:
                task = asyncio.ensure_future(self._server.serve(sockets=[self._sock]))
                while not self._server.started and not task.done():
                    await asyncio.sleep(0.01)
                ready.set()
                await task

            try:
                loop.run_until_complete(main())
            except BaseException:  # noqa: BLE001 - logged; start() reports a failed start
                log.exception("the API server stopped")
            finally:
                ready.set()
                loop.close()

        self._thread = threading.Thread(target=run, name="callisto-server", daemon=True)
        self._thread.start()
        ready.wait(15)
        if not self._server.started:
            self.stop()
            raise OSError(f"the API server did not start on {self.config.host}:{self.port}")

    def stop(self, timeout: float = 10.0) -> None:
        server, thread = self._server, self._thread
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)
        self._server, self._thread = None, None
        self.reaper.stop()
        self.state.downloads.cancel_all()  # (a part file stays: a later download resumes it)
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        if self.owns_host:
            self.host.stop(timeout)

    @property
    def finished(self) -> Any:
        """How the latest turns ended (``TurnEnd``s, newest last)."""
        return self.state.finished

    def _preload_job(self, entry: ModelEntry) -> Any:
        """Load ``entry`` on the engine now (``serve --model``); runs nothing else. Idle from then:
        unloaded past the server's idle time like any model a request loaded."""
        from app.engine.host import Job

        path = self.reaper.begin(entry)
        return Job(
            run=lambda host, model: self.reaper.end(path, None),
            model=entry,
            settings=self.state.settings_for(entry),
            on_error=lambda _err: self.reaper.end(path, None),
        )

    def serve_forever(self, on_started: Callable[[], None] | None = None) -> None:
        """Start, call ``on_started``, and run in the foreground until Ctrl-C or SIGTERM
        (``python -m app serve``). The handlers are in place before the start, so a signal sent
        as soon as the server says where it listens, or while the model loads, stops it cleanly.
        A failed start raises (``OSError``, ``ApiError``) after everything started is stopped."""
        _stop_on_signals()
        try:
            self.start()
            if on_started is not None:
                on_started()
            while self.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM stop ``serve`` whatever the parent left behind: a SIGINT it ignored
    (which Python then keeps ignored) or blocked is taken back, SIGTERM (service managers,
    containers) stops as cleanly as Ctrl-C. Only on the main thread, where handlers can be set."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, interrupt)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _import_model_readers() -> None:
    """Import what loading a model imports (gguf, and yaml through it) before the first request.

    Imported lazily on a request's thread, a first import can meet a server whose file descriptors
    its connections hold (each module file is opened once), or another thread's first import of
    the same package, and leave a partially initialised module behind: a model that then fails to
    load for a reason that has nothing to do with the model."""
    import contextlib

    with contextlib.suppress(ImportError):
        import gguf  # noqa: F401


def serve_option_errors(
    *, api_key: str | None, max_loaded: int, queue: int, idle_ttl: float = 0.0, parallel: int = 1
) -> list[str]:
    """What is wrong with ``serve``'s options (empty: nothing). An empty key (``--api-key
    "$UNSET"``) is refused rather than taken as no key: the user meant to require one."""
    errors = []
    if api_key is not None:
        if not api_key.strip():
            errors.append(
                "--api-key is empty (an unset variable?): give a key, or leave the option out to serve "
                "without one"
            )
        elif api_key != api_key.strip():
            errors.append("--api-key starts or ends with spaces, which no client can send")
    if max_loaded < 1:
        errors.append(f"--max-loaded-models must be at least 1, got {max_loaded}")
    if queue < 1:
        errors.append(f"--queue must be at least 1, got {queue}")
    from app.engine.scheduler import MAX_PARALLEL

    if not 1 <= parallel <= MAX_PARALLEL:
        errors.append(
            f"--parallel must be 1 to {MAX_PARALLEL} (llama.cpp's limit of sequences), got {parallel}"
        )
    if not 0 <= idle_ttl < float("inf"):  # NaN too
        errors.append(f"--idle-ttl must be 0 (never) or a number of seconds, got {idle_ttl}")
    return errors


def serve_warnings(host: str, api_key: str | None, port: int) -> list[str]:
    """What ``serve`` says before it starts: listening beyond this machine without a key."""
    import ipaddress

    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback or api_key:
        return []
    where = "every network this machine is on" if host in ("0.0.0.0", "::") else host
    return [
        f"warning: the server listens on {host} ({where}) without an API key: anyone who can reach "
        f"port {port} of this machine can use it; give --api-key KEY"
    ]


def resolve_model_arg(value: str) -> tuple[list[str], str]:
    """``--model PATH_OR_NAME``: (extra files to offer, the name to preload)."""
    p = Path(value).expanduser()
    if p.suffix == ".gguf" or p.exists():
        return [str(p)], str(p.resolve())
    return [], value
