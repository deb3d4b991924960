"""Ollama's blob uploads: ``HEAD`` and ``POST /api/blobs/sha256:<hex>``, and the ``files`` of
``/api/create`` that name them. This is how ``ollama create NAME -f Modelfile`` with ``FROM
./model.gguf`` (and the ollama SDK's ``create_blob`` then ``create(files=...)``, Open WebUI's GGUF
upload) gets a local GGUF file onto the server.

* ``HEAD /api/blobs/{digest}``: 200 when the server has that file (an upload not yet made into a
  model, or a model file Callisto downloaded or was sent with that sha256), else 404.
* ``POST /api/blobs/{digest}``: the body is the file. It is written beside the models folder
  (``<models folder>/.blobs``, not listed as a model) as it arrives, its sha256 computed on the way,
  and kept under its digest only when the whole body has come and the sha256 matches: a body cut
  short, a client that leaves, a wrong digest or a full disk keep nothing. Only GGUF files are
  taken (the first four bytes say so): Callisto runs GGUF models, and the server is not a place to
  store other files. The free disk space must stay above ``ServerConfig.min_free_disk_bytes``
  (:data:`DISK_MARGIN`, 512 MiB; 507 otherwise, before
  a byte is written when the body's length is given, else as soon as it falls below), so an upload
  never fills the disk the history and settings are written to. 201 when it is kept, 200 when the
  server had it already. The HTTP layer lets an upload take longer than a request's body timeout as
  long as it keeps coming (``app.server._http``, ``upload_prefixes``).
* ``files`` in ``/api/create`` (``{"model.gguf": "sha256:<hex>"}``; a vision projector GGUF may
  come with the model): the model's upload is moved into the models folder
  (``uploaded/<model name>/<file name>``), recorded in the library as a file Callisto owns (listed
  by the window, deleted by ``/api/delete``), and the projector paired with it. A file already there
  with that sha256 is used where it is. The name then names a made model over it
  (``app.server._presets``), with the settings given; a create with no settings whose name is the
  file's own name offers the file under it.

Uploads no ``/api/create`` took are deleted after :data:`STALE_S` (looked for at each upload)."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.server._errors import ApiError, shown

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._state import ServerState

__all__ = ["BLOB_PREFIX", "DISK_MARGIN", "STALE_S", "head_blob", "place_files", "read_files", "upload_blob"]

BLOB_PREFIX = "/api/blobs/"
#: the free disk space an upload must leave
DISK_MARGIN = 512 << 20
#: an upload no create has taken is deleted after this long
STALE_S = 3600.0
#: the bytes written at once (off the event loop)
_FLUSH = 4 << 20
_DIGEST = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")
_FILE_NAME = re.compile(r"^[^/\\:*?\"<>|\x00-\x1f]{1,200}$")
#: the most files a create may name: a model and its projector
MAX_FILES = 2
_FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _hex(digest: Any, where: str = "digest") -> str:
    m = _DIGEST.match(digest) if isinstance(digest, str) else None
    if m is None:
        raise ApiError(400, f"{where} must be sha256:<64 hex digits>, got {shown(digest)}", param=where)
    return m.group(1).lower()


def _folder(state: ServerState) -> Path:
    return Path(state.catalog.library().models_dir) / ".blobs"


def _blob(state: ServerState, hex_: str) -> Path:
    return _folder(state) / f"sha256-{hex_}"


def find(state: ServerState, hex_: str) -> Path | None:
    """The file whose sha256 is ``hex_``: an upload, else a model file the library owns."""
    blob = _blob(state, hex_)
    if blob.is_file():
        return blob
    return state.catalog.library().find_sha256(hex_)


def _prune(folder: Path, now: float) -> None:
    """Delete the uploads (and parts of uploads) older than :data:`STALE_S`."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        p = folder / name
        try:
            if name.startswith("sha256-") and now - p.stat().st_mtime > STALE_S:
                p.unlink()
        except OSError:
            pass


def _free(folder: Path) -> int:
    return shutil.disk_usage(folder).free


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def _no_room(said: str) -> ApiError:
    return ApiError(507, f"{said}; nothing was kept", code="insufficient_storage")


class _Receiving:
    """One upload being written: a part file, its sha256 so far and its size."""

    def __init__(self, folder: Path, hex_: str, margin: int = DISK_MARGIN):
        self.folder = folder
        self.margin = margin
        self.hex = hex_
        self.part = folder / f"sha256-{hex_}.{uuid.uuid4().hex}.part"
        self.sha = hashlib.sha256()
        self.size = 0
        self.refused: ApiError | None = None
        self._file = open(self.part, "xb")  # noqa: SIM115 - closed by finish() or abort()

    def write(self, data: bytes) -> None:
        """Write ``data``; what cannot be kept (not a GGUF, a full disk) sets :attr:`refused` and
        deletes the part: the rest of the body is read and dropped, and :meth:`finish` says why."""
        if self.refused is not None:
            return
        if self.size == 0 and data[:4] != b"GGUF"[: len(data[:4])]:
            self._refuse(
                ApiError(
                    400,
                    "the upload is not a GGUF file (it does not begin with GGUF): this server runs "
                    "GGUF models and keeps no other files",
                    code="not_gguf",
                )
            )
            return
        try:
            self._file.write(data)
        except OSError as exc:
            if exc.errno in _FULL:
                self._refuse(_no_room(f"the disk is full: {exc.strerror}"))
            else:
                self._refuse(ApiError(500, f"the upload could not be written: {exc.strerror or exc}"))
            return
        self.sha.update(data)
        self.size += len(data)
        if _free(self.folder) < self.margin:
            self._refuse(_no_room(f"the upload would leave less than {_mib(self.margin)} free on the disk"))

    def _refuse(self, err: ApiError) -> None:
        self.refused = err
        self.abort()

    def finish(self) -> None:
        """Keep the whole upload under its digest (400 when it is not the file its digest names)."""
        if self.refused is not None:
            raise self.refused
        got = self.sha.hexdigest()
        if self.size < 4:
            self.abort()
            raise ApiError(400, f"the upload is {self.size} bytes: a GGUF file is larger", code="not_gguf")
        if got != self.hex:
            self.abort()
            raise ApiError(
                400,
                f"digest mismatch: the upload's sha256 is {got}, not the {self.hex} its path names; "
                "nothing was kept",
                code="digest_mismatch",
            )
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self.part, self.folder / f"sha256-{self.hex}")
        except OSError as exc:
            self.abort()
            if exc.errno in _FULL:
                raise _no_room(f"the disk is full: {exc.strerror}") from None
            raise ApiError(500, f"the upload could not be kept: {exc.strerror or exc}") from None

    def abort(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass
        self.part.unlink(missing_ok=True)


def _begin(state: ServerState, hex_: str, length: int | None) -> _Receiving:
    """A new upload of ``hex_``; 507 when ``length`` bytes would leave less than the free space
    the server keeps."""
    folder = _folder(state)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ApiError(500, f"the upload folder {folder} cannot be made: {exc.strerror or exc}") from None
    _prune(folder, time.time())
    free, margin = _free(folder), state.config.min_free_disk_bytes
    if length is not None and free - length < margin:
        raise _no_room(
            f"the upload is {length} bytes and the disk has {free} free; at least {_mib(margin)} must stay free"
        )
    try:
        return _Receiving(folder, hex_, margin)
    except OSError as exc:
        raise ApiError(500, f"the upload cannot be written: {exc.strerror or exc}") from None


def _length(request: Request) -> int | None:
    text = (request.headers.get("content-length") or "").strip()
    if not re.fullmatch(r"[0-9]{1,19}", text):
        return None
    return int(text)


async def head_blob(request: Request):
    """``HEAD /api/blobs/{digest}``: 200 when the server has the file, else 404."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response

    state: ServerState = request.app.state.callisto
    hex_ = _hex(request.path_params["digest"])
    found = await run_in_threadpool(find, state, hex_)
    return Response(status_code=200 if found is not None else 404)


async def upload_blob(request: Request):
    """``POST /api/blobs/{digest}``: keep the body under its digest (201; 200: already here)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import ClientDisconnect
    from starlette.responses import Response

    state: ServerState = request.app.state.callisto
    hex_ = _hex(request.path_params["digest"])
    have = await run_in_threadpool(find, state, hex_)
    if have is not None:  # the client sends it all the same (the ollama SDK does): uvicorn reads
        return Response(status_code=200)  # the rest and drops it, so the client sees the answer
    receiving = await run_in_threadpool(_begin, state, hex_, _length(request))
    buf = bytearray()
    try:
        async for chunk in request.stream():
            if receiving.refused is not None:
                break  # the rest is read and dropped by uvicorn: the client sees the answer
            buf += chunk
            if len(buf) >= _FLUSH:
                await run_in_threadpool(receiving.write, bytes(buf))
                buf.clear()
        if buf and receiving.refused is None:
            await run_in_threadpool(receiving.write, bytes(buf))
        await run_in_threadpool(receiving.finish)
    except ClientDisconnect:
        await run_in_threadpool(receiving.abort)
        raise ApiError(
            408, "the client went away before its upload arrived whole; nothing was kept"
        ) from None
    except BaseException:
        await run_in_threadpool(receiving.abort)
        raise
    request.scope.setdefault("callisto.log", {})["model"] = f"sha256:{hex_[:12]}"
    return Response(status_code=201)


# -- /api/create's files ---------------------------------------------------------------------------

_place_lock = threading.Lock()


def read_files(value: Any) -> dict[str, str]:
    """``files`` as given (file name -> sha256 hex); 400 for anything else."""
    if value is None or value == {}:
        return {}
    if not isinstance(value, dict):
        raise ApiError(400, "files must be an object of file names and sha256 digests", param="files")
    if len(value) > MAX_FILES:
        raise ApiError(
            400,
            f"files names {len(value)} files; at most {MAX_FILES}: a model and its projector",
            param="files",
        )
    out: dict[str, str] = {}
    for name, digest in value.items():
        if not _FILE_NAME.match(name) or name.strip(" .") == "" or Path(name).name != name:
            raise ApiError(
                400, f"files has the file name {shown(name)}: give a plain file name", param="files"
            )
        if not name.lower().endswith(".gguf"):
            raise ApiError(
                400,
                f"files has {shown(name)}: this server runs GGUF files (a model and its mmproj "
                "projector); convert safetensors to GGUF (llama.cpp's convert_hf_to_gguf.py) first",
                param="files",
            )
        out[name] = _hex(digest, f"files[{name[:64]}]")
    return out


def place_files(state: ServerState, name: str, files: dict[str, str], *, own_name: bool) -> Path:
    """The model file the uploads ``files`` name, in the library (moved there from the uploads,
    or found there by its sha256), its projector paired with it; the model's path. ``own_name``:
    the model's file may be named so that its id is ``name`` (the create sets nothing else)."""
    with _place_lock:  # two creates of one upload: the second finds it where the first put it
        return _place(state, name, files, own_name)


def _place(state: ServerState, name: str, files: dict[str, str], own_name: bool) -> Path:
    from app.engine.models._gguf import read_summary
    from app.engine.models.download import safe_name

    library = state.catalog.library()
    found: dict[str, Path] = {}
    for file_name, hex_ in files.items():
        path = find(state, hex_)
        if path is None:
            raise ApiError(
                400,
                f"{file_name}'s upload sha256:{hex_} is not on this server: send it first "
                f"(POST {BLOB_PREFIX}sha256:{hex_})",
                param="files",
                code="blob_not_found",
            )
        found[file_name] = path
    kinds: dict[str, bool] = {}
    for file_name, path in found.items():
        try:
            kinds[file_name] = bool(read_summary(path).is_projector)
        except (OSError, ValueError) as exc:
            raise ApiError(400, f"{file_name} is not a usable GGUF file: {exc}", param="files") from None
    models = [f for f, projector in kinds.items() if not projector]
    if len(models) != 1:
        raise ApiError(
            400,
            f"files must hold one model GGUF (and at most its projector); it holds {len(models)}",
            param="files",
        )
    folder = Path(library.models_dir) / "uploaded" / safe_name(name, "model name")
    placed: dict[str, Path] = {}
    for file_name, path in found.items():
        if path.parent != _folder(state):
            placed[file_name] = path  # a file the library has: used where it is
            continue
        stem = file_name[: -len(".gguf")]
        if not kinds[file_name] and not own_name and stem.lower() == name.lower():
            stem = f"{stem}-{files[file_name][:8]}"  # its id must not be the made model's name
        dest = folder / f"{stem}.gguf"
        if dest.exists():
            dest = folder / f"{stem}-{files[file_name][:12]}.gguf"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            os.replace(path, dest)
        except OSError as exc:
            raise ApiError(500, f"{file_name} could not be moved into the models folder: {exc}") from None
        library.register_upload(dest, sha256=files[file_name], filename=file_name)
        placed[file_name] = dest
    model = placed[models[0]]
    for file_name, path in placed.items():
        if kinds[file_name]:
            library.set_projector(model, path)
    state.catalog.add(model)
    return model
