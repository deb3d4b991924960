"""The server's configuration and the state its handlers share (a leaf of ``app.server``: the
three API modules and the app import it, it imports none of them)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from app.engine.llm import LoadSettings
from app.engine.scheduler import DEFAULT_PARALLEL

if TYPE_CHECKING:
    from app.engine.host import EngineHost
    from app.server._engine import TurnEnd
    from app.server._models import ModelCatalog, ModelEntry

__all__ = ["DEFAULT_PORT", "RecentResponses", "ServerConfig", "ServerState", "template_key"]

DEFAULT_PORT = 8453


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    api_key: str | None = None
    cors_origins: list[str] = field(default_factory=list)
    allowed_hosts: list[str] = field(default_factory=list)
    tool_format: str = "auto"  # chat.tool_format for every model served
    models: list[str] = field(default_factory=list)  # files offered besides the library
    use_library: bool = True
    preload: str | None = None  # a model to load at start (name or path)
    #: a request's body (images come in it as base64: one image at the engine's limit of 20 MiB,
    #: ``app.engine.vision.ImageLimits``, is about 27 MiB of base64)
    max_body_bytes: int = 32 * 1024 * 1024
    max_tokens_limit: int = 32768
    default_max_tokens: int = 2048
    queue_size: int = 16
    max_loaded: int = 1  # models loaded at a time (the least recently used is closed past it)
    n_ctx: int = 4096
    n_threads: int | None = None
    n_gpu_layers: int = 0
    #: the slots of a model this server loads (app.engine.scheduler): requests batched into one
    #: decode a step, up to this many at once, each with the whole n_ctx (``serve --parallel``)
    parallel: int = DEFAULT_PARALLEL
    #: the KV cache's type and flash attention (``serve --kv-type``, ``--flash-attn``)
    kv_type: str = "f16"
    flash_attn: bool = True
    #: speculative decoding (app.engine.speculative): draftless n-gram drafting (``serve
    #: --ngram-draft``) and a draft model, a small GGUF with the models' vocabulary (``--draft-model``)
    ngram_draft: bool = True
    draft_model: str | None = None
    #: chat templates used in place of models' own, by model file (its path as ``template_key`` writes
    #: it): ``serve --chat-template-file`` for the ``--model`` files, the window's This model
    #: settings for its server (``app.engine.llm.LoadSettings.chat_template``)
    chat_templates: dict[str, str] = field(default_factory=dict)
    #: where the models made over Ollama's /api/create and /api/copy are kept (``app.server._presets``);
    #: None: ``presets.json`` in the data folder for a server that offers the library, else in memory
    presets_path: str | None = None
    #: a model idle this long (seconds: no request running or queued) is unloaded, the next request
    #: loads it again; 0: never (``serve --idle-ttl``; a request's keep_alive / ttl wins: app.server._idle)
    idle_ttl_s: float = 0.0
    idle_sweep_s: float = 2.0  # how often idle models are looked for (0: only by hand, in tests)
    # What one client can hold (app/server/_http.py; README "Security"): a request's headers must
    # arrive within header_timeout_s, its body within body_timeout_s of the headers; at most
    # max_connections are open (fewer under a low open-file limit).
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    max_connections: int = 128
    # What one request may ask of the engine before any engine work (app/server/_common.py):
    # tools declared, and the JSON of its tool definitions and response schemas together.
    max_tools: int = 128
    max_schema_bytes: int = 256 * 1024
    #: the disk space an upload (Ollama's /api/blobs: app.server._blobs) must leave free
    min_free_disk_bytes: int = 512 * 1024 * 1024

    def presets_file(self) -> str | None:
        """Where made models are kept (:attr:`presets_path`), None: in memory."""
        if self.presets_path is not None:
            return self.presets_path or None
        if not self.use_library:
            return None
        from app.server._presets import default_presets_path

        return str(default_presets_path())

    def load_settings(self) -> LoadSettings:
        """What a model this server loads is loaded with."""
        return LoadSettings(
            n_ctx=self.n_ctx,
            n_gpu_layers=self.n_gpu_layers,
            n_threads=self.n_threads,
            parallel=self.parallel,
            kv_type=self.kv_type,
            flash_attn=self.flash_attn,
            ngram_draft=self.ngram_draft,
            draft_model=self.draft_model,
        )


def template_key(path: str | os.PathLike[str]) -> str:
    """A model file's key in ``ServerConfig.chat_templates``: its real absolute path, normalised
    (a link and its file are one model)."""
    return os.path.normcase(os.path.realpath(os.path.expanduser(os.fspath(path))))


class RecentResponses:
    """The Responses API's stored responses, in memory for this run: the latest ``max_items``, at
    most ``max_bytes`` together (their size as JSON, estimated by the caller); the least recently
    used go first. Each is what a later request's ``previous_response_id`` continues: the response
    as it was answered and the conversation it ended (Chat Completions messages)."""

    def __init__(self, max_items: int = 256, max_bytes: int = 64 * 1024 * 1024):
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[dict[str, Any], list[dict[str, Any]], int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def put(self, response: dict[str, Any], conversation: list[dict[str, Any]], size: int) -> None:
        with self._lock:
            self._drop(response["id"])
            if size > self.max_bytes:
                return  # too large to keep: a later request cannot continue it
            self._items[response["id"]] = (response, conversation, size)
            self._bytes += size
            while len(self._items) > self.max_items or self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))

    def get(self, rid: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        with self._lock:
            item = self._items.get(rid)
            if item is None:
                return None
            self._items.move_to_end(rid)
            return item[0], item[1]

    def delete(self, rid: str) -> bool:
        with self._lock:
            return self._drop(rid)

    def _drop(self, rid: str) -> bool:
        item = self._items.pop(rid, None)
        if item is not None:
            self._bytes -= item[2]
        return item is not None


class ServerState:
    def __init__(self, config: ServerConfig, host: EngineHost, catalog: ModelCatalog):
        from app.server._idle import IdleReaper
        from app.server._metrics import ServerMetrics
        from app.server._pull import DownloadJobs

        self.config = config
        self.host = host
        self.catalog = catalog
        #: unloads the models idle past their time to live (the config's default, read at each sweep)
        self.reaper = IdleReaper(host, default_ttl=lambda: self.config.idle_ttl_s)
        #: what a model this server loads is loaded with (a model already loaded is used as it is)
        self.load_settings = config.load_settings()
        self.finished: deque[TurnEnd] = deque(maxlen=64)  # how the latest turns ended (log, tests)
        #: every reply's counts since the start (``/metrics``)
        self.metrics = ServerMetrics()
        #: LM Studio's download jobs (``app.server._pull``), the latest kept for their status
        self.downloads = DownloadJobs()
        #: the Responses API's stored responses (``previous_response_id``), for this run
        self.responses = RecentResponses()
        #: LM Studio's stored chats (``/api/v1/chat``'s ``previous_response_id``), for this run
        self.chats = RecentResponses()
        #: the models made over Ollama's API (``app.server._presets``), which the catalog offers
        self.presets = catalog.presets

    def loaded_entry(self) -> ModelEntry | None:
        """The catalog's entry for the engine's most recently used model (None: none loaded)."""
        path = self.host.current
        return self.catalog.entry_for(path) if path is not None else None

    def settings_for(self, entry: ModelEntry) -> LoadSettings:
        """What ``entry``'s model is loaded with: the server's settings, with the projector the
        library pairs it with (``ModelEntry.mmproj``) where it has one, and the chat template set
        for its file (``ServerConfig.chat_templates``) where one is."""
        template = self.config.chat_templates.get(template_key(entry.path))
        if entry.mmproj is None and template is None:
            return self.load_settings
        return replace(
            self.load_settings, mmproj=entry.mmproj or self.load_settings.mmproj, chat_template=template
        )

    def metadata_for(self, entry: ModelEntry) -> Any:
        """``entry``'s file's metadata (``app.engine.models.metadata``), with the chat template its
        model renders with in place of its own: the one it is loaded with (a load's option may
        have set one, or removed the server's), else the one set for its file
        (``ServerConfig.chat_templates``); a made model's own template first. What ``/props`` and
        ``/api/show`` say of it."""
        from app.engine.models.metadata import read_metadata

        meta = read_metadata(entry.path)
        if entry.preset is not None and entry.preset.template is not None:
            return meta.with_chat_template(entry.preset.template)
        loaded_with = self.host.settings_of(entry.path)
        template = (
            loaded_with.chat_template
            if loaded_with is not None
            else self.config.chat_templates.get(template_key(entry.path))
        )
        return meta if template is None else meta.with_chat_template(template)

    def settings_for_context(self, entry: ModelEntry, n_ctx: int | None) -> tuple[LoadSettings, bool]:
        """(settings, exact) of a job on ``entry`` for a request that needs ``n_ctx`` tokens of
        context (Ollama's ``num_ctx``; None: any). A model not loaded is loaded with at least
        ``n_ctx``; one loaded with less than it (and less than its training context, which a load
        never passes) is loaded again with it and otherwise as it was (``exact``). A context never
        shrinks for a request: a client that sends a small one does not reload a model for it."""
        from app.engine.llm import round_context

        base = self.settings_for(entry)
        if not n_ctx:
            return base, False
        model, loaded_with = self.host.model(entry.path), self.host.settings_of(entry.path)
        if model is None or loaded_with is None:
            return replace(base, n_ctx=max(int(base.n_ctx), n_ctx)), False
        if int(model.n_ctx) >= round_context(n_ctx, model.metadata.context_length):
            return base, False
        return replace(loaded_with, n_ctx=n_ctx), True

    def has_vision(self, entry: ModelEntry) -> bool:
        """Whether ``entry``'s model reads images: a loaded model says (a projector loaded beside
        it); another has one when it would be loaded with one (chosen in the library, or an
        ``mmproj`` GGUF beside it: ``app.engine.vision.find_projector``)."""
        model = self.host.model(entry.path)
        if model is not None:
            return bool(getattr(model, "vision", False))
        mmproj = self.settings_for(entry).mmproj
        if mmproj is not None:
            return mmproj != "none"
        from app.engine.vision import find_projector

        return find_projector(entry.path) is not None

    def slot_card(self, entry: ModelEntry) -> dict[str, int]:
        """What one request gets on ``entry``'s model (``/v1/models``): ``n_ctx``, the context of
        each slot (never divided among them), and ``parallel``, the slots (requests batched at
        once). A loaded model says what it was loaded with; another what this server would load."""
        model = self.host.model(entry.path)
        if model is not None:
            return {"n_ctx": int(model.n_ctx), "parallel": int(getattr(model.backend, "parallel", 1))}
        parallel = self.load_settings.parallel
        return {"n_ctx": int(self.load_settings.n_ctx), "parallel": int(parallel) if parallel else 1}
