"""Models made over Ollama's API: ``POST /api/create`` and ``POST /api/copy``.

A made model (a *preset*) is a name over a model file the server offers, with what Ollama's
Modelfile gives it: a ``system`` prompt, a chat ``template`` (Jinja, as every template here; an
Ollama Go template is a 400 that says so), ``parameters`` (Ollama's option names: the sampler
options, ``stop``, ``num_ctx`` and ``num_predict``), ``messages`` (a conversation every request
starts with) and a ``license``. ``from`` names the model it is made from: a file, or another made
model, whose settings it takes and may change. ``/api/copy`` gives a model a second name (a made
model's copy has its settings; a file's is a made model with none). Instead of ``from``, ``files``
may name a GGUF a client uploaded (``app.server._blobs``): it comes into the library, and the
made model is over it.

Every API applies a made model the same way, when a request names it
(:meth:`Preset.applied_to`, in ``Turn.submit_fn``): the request's own values win; its system
message, if it has none, is the preset's; the preset's messages come before the request's; a
request with a raw prompt (a completion, Ollama's ``raw``) gets the parameters only. Made models are
listed by every list (``/api/tags``, ``/v1/models``, LM Studio's) beside the files, with their
base's details; ``/api/show`` gives their Modelfile; ``/api/delete`` deletes a made model and never
its base's file.

They are kept in a JSON file (``ServerConfig.presets_path``; the server that offers the model
library keeps them in the data folder, so they last across runs and the window's server and
``serve`` share them), written whole to a temporary file and moved into place, so a full disk or a
crash never leaves half a file. A server without a file keeps them for its run. What else
Ollama's create takes (``adapters``, ``quantize``, the old ``modelfile`` text) is a 400 that says
what to do instead."""

from __future__ import annotations

import errno
import json
import os
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.server._blobs import read_files
from app.server._common import (
    SAMPLER_RANGES,
    check_bool,
    check_int,
    check_stop,
    check_str,
    read_chat_template,
    read_sampling,
    request_body,
    type_name,
)
from app.server._errors import ApiError, shown
from app.server._json import json_bytes, json_response

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._engine import TurnRequest

__all__ = [
    "MadeFromOllama",
    "Preset",
    "PresetStore",
    "copy",
    "create",
    "default_presets_path",
    "made_from_ollama",
    "parameters_text",
    "preset_name",
]

#: a made model's name as Ollama takes one: ``[namespace/]model[:tag]``
_NAME = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}(?:/[A-Za-z0-9][A-Za-z0-9_.-]{0,79}){0,2}(?::[A-Za-z0-9_.-]{1,64})?$"
)
_LATEST = ":latest"
_ROLES = ("system", "user", "assistant")
#: what Ollama's create takes and a server without its blob store cannot
_NOT_SERVED = {
    "adapters": "LoRA adapters are not applied by this server",
    "quantize": "models are not quantized here: pull the quantization you want",
    "modelfile": "send from, system, template, parameters and messages instead (ollama-python 0.4 and later do)",
}
_FIELDS = (
    "model",
    "name",
    "from",
    "files",
    "system",
    "template",
    "parameters",
    "messages",
    "license",
    "stream",
)
#: what a client may keep on this machine's disk through the API: this many made models, each with
#: at most this much text (its system prompt, messages and license; its template has the template
#: limit, ``app.engine.templates.MAX_TEMPLATE_CHARS``)
MAX_MADE = 256
MAX_TEXT_BYTES = 1 << 20


def default_presets_path() -> Path:
    """Where the server that offers the model library keeps made models: the data folder."""
    from app.storage.paths import data_dir

    return data_dir() / "presets.json"


def preset_name(name: str) -> str:
    """``name`` as a made model is kept: without Ollama's default tag ``:latest``."""
    return name[: -len(_LATEST)] if name.lower().endswith(_LATEST) and len(name) > len(_LATEST) else name


@dataclass(frozen=True)
class Preset:
    """A made model: ``name`` over the file ``base`` (its absolute path), with what it sets."""

    name: str
    base: str
    system: str | None = None
    template: str | None = None
    #: the parameters as the client gave them (checked); :meth:`applied_to` uses those it knows
    parameters: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    license: list[str] = field(default_factory=list)
    created: float = 0.0

    def applied_to(self, req: TurnRequest, max_tokens_limit: int) -> TurnRequest:
        """``req`` with what this model sets where the request sets nothing."""
        sampling = read_sampling(self.parameters, SAMPLER_RANGES, top_k=True, mirostat=True)
        changes: dict[str, Any] = {"sampling": {**sampling, **req.sampling}}
        if not req.stop:
            changes["stop"] = check_stop(self.parameters.get("stop"), "stop")
        if req.n_ctx is None:
            changes["n_ctx"] = check_int(self.parameters.get("num_ctx"), "num_ctx", lo=1, hi=2**24)
        n = check_int(self.parameters.get("num_predict"), "num_predict")
        if not req.max_tokens_given and n is not None and n > 0:  # (-1, -2: Ollama's "no limit")
            changes["max_tokens"] = min(n, max_tokens_limit)
        if req.chat_template is None and self.template is not None:
            changes["chat_template"] = self.template
        # a conversation (not a raw prompt, nor one that goes on from Ollama's context, which holds
        # the system prompt and messages its first request had)
        if req.messages and req.raw_prompt is None and req.fim is None and req.context is None:
            messages = list(req.messages)
            head = 1 if messages[0].get("role") == "system" else 0
            messages[head:head] = [dict(m) for m in self.messages]
            if not head and self.system:
                messages.insert(0, {"role": "system", "content": self.system})
            changes["messages"] = messages
        return replace(req, **changes)

    def chat_values(self) -> dict[str, Any]:
        """What the window's chat takes from this made model, only what it sets: ``system_prompt``,
        ``sampling`` (the sampler values), ``max_tokens``, ``n_ctx``, ``stop``, ``chat_template``
        and ``opening`` (its messages, as (role, content) pairs). Values that no longer pass the
        checks (a file written by hand) are left out."""
        out: dict[str, Any] = {}
        if self.system:
            out["system_prompt"] = self.system
        try:
            sampling = read_sampling(self.parameters, SAMPLER_RANGES, top_k=True, mirostat=True)
        except ApiError:
            sampling = {}
        if sampling:
            out["sampling"] = sampling
        for key, name in (("num_predict", "max_tokens"), ("num_ctx", "n_ctx")):
            try:
                n = check_int(self.parameters.get(key), key, hi=2**24)
            except ApiError:
                n = None
            if n is not None and n > 0:  # (num_predict -1, -2: Ollama's "no limit")
                out[name] = max(n, 256) if name == "n_ctx" else n  # (the window's least context)
        try:
            stop = check_stop(self.parameters.get("stop"), "stop")
        except ApiError:
            stop = None
        if stop:
            out["stop"] = tuple(stop)
        if self.template is not None:
            out["chat_template"] = self.template
        if self.messages:
            out["opening"] = tuple((str(m.get("role")), str(m.get("content", ""))) for m in self.messages)
        return out

    def modelfile(self, base_id: str) -> str:
        """The made model as Ollama's Modelfile writes it (``/api/show``)."""
        lines = [f"FROM {base_id}"]
        if self.template is not None:
            lines.append(f'TEMPLATE """{self.template}"""')
        if self.system is not None:
            lines.append(f'SYSTEM """{self.system}"""')
        lines += [f"PARAMETER {line}" for line in parameters_text(self.parameters).splitlines()]
        lines += [f'MESSAGE {m["role"]} """{m["content"]}"""' for m in self.messages]
        lines += [f'LICENSE """{text}"""' for text in self.license]
        return "\n".join(lines) + "\n"


def parameters_text(parameters: dict[str, Any]) -> str:
    """Ollama's ``parameters`` text: a line a value (``stop`` a line each)."""
    lines = []
    for key, value in parameters.items():
        for v in value if isinstance(value, list) else [value]:
            lines.append(f"{key:<30} {json.dumps(v) if isinstance(v, str) else v}")
    return "\n".join(lines)


class PresetStore:
    """The made models, by name (without regard to case), kept in ``path`` (None: in memory).

    The file is read (first when it is asked for) and read again whenever it changed, so two
    servers (the window's and ``serve``) and the window share one set of made models."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._items: dict[str, Preset] = {}
        self._stamp: tuple[int, int] | None = None  # the file's (mtime_ns, size) when last read
        self.problem: str | None = None  # why the file could not be read (its models are not offered)

    def file_stamp(self) -> tuple[int, int] | None:
        """The file's (modification time, size) now, one ``stat`` (None: no file): it reads again
        when this changes, and a caller that must not read (the window's UI thread) can watch it."""
        if self.path is None:
            return None
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _fresh(self) -> None:
        """Read the file again if it changed since it was last read (under the lock)."""
        if self.path is None:
            return
        stamp = self.file_stamp()
        if stamp == self._stamp and (stamp is not None or not self._items):
            return
        self._stamp, self._items, self.problem = stamp, {}, None
        if stamp is None:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            for item in data.get("presets", []):
                preset = Preset(**item)
                self._items[preset.name.lower()] = preset
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            self._items = {}
            self.problem = f"{self.path} cannot be read ({exc}); the models made over the API are not offered"

    def all(self) -> list[Preset]:
        with self._lock:
            self._fresh()
            return list(self._items.values())

    def get(self, name: str) -> Preset | None:
        with self._lock:
            self._fresh()
            return self._items.get(preset_name(name).lower())

    def put(self, preset: Preset) -> None:
        with self._lock:
            self._fresh()
            items = {**self._items, preset.name.lower(): preset}
            self._save(items)
            self._items = items

    def delete(self, name: str) -> bool:
        with self._lock:
            self._fresh()
            key = preset_name(name).lower()
            if key not in self._items:
                return False
            items = {k: v for k, v in self._items.items() if k != key}
            self._save(items)
            self._items = items
            return True

    def _save(self, items: dict[str, Preset]) -> None:
        """Write the file whole, then move it into place (a failed write changes nothing)."""
        if self.path is None:
            return
        if self.problem is not None:
            raise ApiError(
                500, f"{self.problem}: fix or remove it before making models", code="presets_unreadable"
            )
        from app.storage.atomic import atomic_write_bytes

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path, json_bytes({"presets": [asdict(p) for p in items.values()]}))
            self._stamp = self.file_stamp()
        except OSError as exc:
            raise ApiError(
                507 if exc.errno == errno.ENOSPC else 500,
                f"the model could not be saved to {self.path}: {exc.strerror or exc}",
                code="presets_not_saved",
            ) from None


# -- the requests ----------------------------------------------------------------------------------


def _check_name(value: Any, where: str) -> str:
    name = check_str(value, where)
    assert name is not None
    if not _NAME.match(name):
        raise ApiError(
            400,
            f"{where} {shown(name)} is not a model name: letters, digits, '_', '.', '-', up to two '/' "
            "and one ':tag'",
            param=where,
        )
    return preset_name(name)


def _messages(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, f"messages must be an array, got {type_name(value)}", param="messages")
    out = []
    for i, m in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in _ROLES or not isinstance(m.get("content"), str):
            raise ApiError(
                400, f"{where} must be {{role: system, user or assistant, content: a string}}", param=where
            )
        out.append({"role": m["role"], "content": m["content"]})
    return out


def _parameters(value: Any, max_tokens_limit: int) -> dict[str, Any]:
    """The parameters, each known one checked as a request's option is (400 naming it)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError(400, f"parameters must be an object, got {type_name(value)}", param="parameters")
    read_sampling(value, SAMPLER_RANGES, top_k=True, mirostat=True, where="parameters.")
    params = dict(value)
    if "stop" in params:
        params["stop"] = check_stop(params["stop"], "parameters.stop")
    check_int(value.get("num_ctx"), "parameters.num_ctx", lo=1, hi=2**24)
    check_int(value.get("num_predict"), "parameters.num_predict", lo=-2, hi=max_tokens_limit)
    if len(json_bytes(params)) > 64 * 1024:
        raise ApiError(400, "parameters is larger than 64 KiB", param="parameters")
    return params


@dataclass(frozen=True)
class MadeFromOllama:
    """What :func:`made_from_ollama` did: the made models it made (their names), those it left
    as they were (a made model of that name was there), and what it could not take, with why."""

    made: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def made_from_ollama(
    store: PresetStore,
    models: list[tuple[Any, Path]],
    *,
    max_tokens_limit: int,
    file_ids: Iterable[str] = (),
) -> MadeFromOllama:
    """A made model for each of Ollama's ``models`` (``app.engine.models.ollama_store.OllamaModel``,
    each with the file it is linked as) whose Modelfile sets anything (a system prompt, messages,
    a sampler value, a context or reply length), named as Ollama names it, over that file: so
    "mario" answers as Mario here too. Each setting is checked as ``/api/create`` checks it; one
    that does not pass is left out and said. A made model already of that name is kept as it is
    (it may be the person's own); a name that is a model file's id (``file_ids``) is left, as a
    made model never hides a file."""
    done = MadeFromOllama()
    files = {f.lower() for f in file_ids}
    for model, path in models:
        if not model.sets_anything():
            continue
        try:
            name = _check_name(model.name, "model")
        except ApiError:
            done.left.append(f"{model.name}: not a name a made model takes")
            continue
        if store.get(name) is not None:
            done.kept.append(name)
            continue
        if name.lower() in files:
            done.left.append(f"{name}: the name of a model file here")
            continue
        try:
            _room_for(store, name)
        except ApiError as exc:
            done.left.append(f"{name}: {exc.message}")
            break
        values: dict[str, Any] = {}
        for key, read in (
            ("system", lambda v: check_str(v, "system", allow_none=True)),
            ("parameters", lambda v: _parameters(v, max_tokens_limit)),
            ("messages", _messages),
            ("license", lambda v: _license(list(v) or None)),
        ):
            try:
                values[key] = read(getattr(model, key))
            except ApiError as exc:
                done.left.append(f"{name}'s {key} ({exc.message})")
        if (
            len(json_bytes([values.get("system"), values.get("messages"), values.get("license")]))
            > MAX_TEXT_BYTES
        ):
            values["license"] = []  # (the licence is the one that grows; the file keeps it anyway)
        store.put(
            Preset(name=name, base=str(path), created=time.time(), **{k: v for k, v in values.items() if v})
        )
        done.made.append(name)
    return done


def _license(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ApiError(400, "license must be a string or an array of strings", param="license")


def _room_for(presets: PresetStore, name: str) -> None:
    """A 400 when ``presets`` keeps :data:`MAX_MADE` made models and ``name`` is not one of them."""
    if presets.get(name) is None and len(presets.all()) >= MAX_MADE:
        raise ApiError(
            400,
            f"this server keeps at most {MAX_MADE} made models: delete one (/api/delete) first",
            code="too_many_models",
        )


def _taken_by_a_file(state: Any, name: str, where: str, but: frozenset[Path] = frozenset()) -> None:
    """A 400 naming ``where`` when ``name`` is a model file's id (a made model never hides a file),
    unless that file is one of ``but``."""
    for e in state.catalog.entries():
        if e.preset is None and e.id.lower() == name.lower() and e.path not in but:
            raise ApiError(
                400,
                f"{name} is the name of a model file: give the new model another name",
                param=where,
                code="model_exists",
            )


async def create(request: Request):
    """``POST /api/create``: make (or make again) a model from another, with the settings given."""
    from starlette.concurrency import run_in_threadpool

    state, body = await request_body(request)
    for key, why in _NOT_SERVED.items():
        if body.get(key) not in (None, {}, [], ""):
            raise ApiError(400, f"{key} is not served: {why}", param=key)
    unknown = sorted(k for k in body if k not in _FIELDS and k not in _NOT_SERVED)
    if unknown:
        raise ApiError(
            400,
            f"unknown field {shown(unknown[0])}; the fields are: {', '.join(_FIELDS)}",
            param=unknown[0][:64],
        )
    name = _check_name(body.get("model", body.get("name")), "model")
    source = check_str(body.get("from"), "from", allow_none=True)
    files = read_files(body.get("files"))
    if source and files:
        raise ApiError(400, "give from or files, not both", param="files")
    if not source and not files:
        raise ApiError(
            400, "from is required: name the model to make this one from (or upload it: files)", param="from"
        )
    stream = check_bool(body.get("stream"), "stream", True)
    system = check_str(body.get("system"), "system", allow_none=True)
    template = read_chat_template(body.get("template"), "template") if "template" in body else None
    parameters = _parameters(body.get("parameters"), state.config.max_tokens_limit)
    messages = _messages(body.get("messages"))
    license_ = _license(body.get("license"))
    if len(json_bytes([system, messages, license_])) > MAX_TEXT_BYTES:
        raise ApiError(400, "system, messages and license together are larger than 1 MiB", param="system")

    settings = any(
        body.get(k) not in (None, {}, [], "")
        for k in ("system", "template", "parameters", "messages", "license")
    )

    def make() -> Preset | None:
        if files:
            _room_for(state.presets, name)  # (before the upload is moved in)
            base = _uploaded(state, name, files, settings)
            if base is None:
                return None
        else:
            base = state.catalog.resolve(source)
        _taken_by_a_file(state, name, "model")
        _room_for(state.presets, name)
        parent: Preset | None = base.preset
        preset = Preset(
            name=name,
            base=str(base.path),
            system=system if system is not None else parent.system if parent else None,
            template=template if template is not None else parent.template if parent else None,
            parameters={**(parent.parameters if parent else {}), **parameters},
            messages=messages or (list(parent.messages) if parent else []),
            license=license_ or (list(parent.license) if parent else []),
            created=time.time(),
        )
        state.presets.put(preset)
        return preset

    await run_in_threadpool(make)
    request.scope.setdefault("callisto.log", {})["model"] = name
    if files:
        steps = [
            {"status": "parsing GGUF"},
            *({"status": f"using existing layer sha256:{h}"} for h in files.values()),
        ]
    else:
        steps = [{"status": f"using {source} as the base"}]
    steps += [{"status": "writing manifest"}, {"status": "success"}]
    if not stream:
        return json_response(steps[-1])
    from starlette.responses import Response

    return Response(b"".join(json_bytes(s) + b"\n" for s in steps), media_type="application/x-ndjson")


def _uploaded(state: Any, name: str, files: dict[str, str], settings: bool) -> Any:
    """The entry of the model file ``files`` names, in the library now (``app.server._blobs``);
    None when the made model is that file itself (no settings, and the file's name is ``name``)."""
    from app.server._blobs import place_files

    library = state.catalog.library()
    # a name a file has stays that file's, unless the file is this upload (sent before) and the
    # create sets nothing: the file itself is then the model
    mine = () if settings else (library.find_sha256(h) for h in files.values())
    _taken_by_a_file(state, name, "model", frozenset(p.resolve() for p in mine if p is not None))
    path = place_files(state, name, files, own_name=not settings)
    entry = state.catalog.entry_for(path)
    if not settings and entry.id.lower() == name.lower():
        state.presets.delete(name)  # an older made model of that name would hide the file
        return None
    return entry


async def copy(request: Request):
    """``POST /api/copy``: the ``source`` model under the name ``destination`` too."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response

    state, body = await request_body(request)
    source = check_str(body.get("source"), "source")
    destination = _check_name(body.get("destination"), "destination")

    def make() -> None:
        entry = state.catalog.resolve(source)
        _taken_by_a_file(state, destination, "destination")
        _room_for(state.presets, destination)
        original = entry.preset or Preset(name=destination, base=str(entry.path))
        state.presets.put(replace(original, name=destination, created=time.time()))

    await run_in_threadpool(make)
    return Response(status_code=200)
