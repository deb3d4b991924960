"""A real Hugging Face hub stand-in on 127.0.0.1 for tests: threaded ``http.server``.

Serves the endpoints Callisto uses, over real bytes (tiny GGUFs):

* ``GET /api/models?search=&filter=&sort=downloads&limit=``  (JSON list, like the hub)
* ``GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=``  (files with size, oid and LFS sha256)
* ``GET|HEAD /{repo}/resolve/{rev}/{file}``  302 to ``/_cdn/{repo}/{file}`` for LFS files, with
  the hub's headers (``X-Repo-Commit``, ``X-Linked-Etag``, ``X-Linked-Size``, ``ETag``)
* ``GET|HEAD /_cdn/{repo}/{file}`` with ``Range: bytes=N-`` support (206 + Content-Range)

Fault knobs (per file name, consumed as they fire):

* ``drop_after[file] = [n_bytes, ...]``  send the full Content-Length header, then only n bytes, then
  close the socket (one entry per request);
* ``fail_status[file] = [500, 500]``  answer these statuses first;
* ``corrupt.add(file)``  flip a byte in every body served;
* ``hold_after[file] = n``  serve n bytes, then wait until ``release.set()`` (deterministic pauses);
* ``throttle_bps``  sleep between 8 KiB chunks to cap the speed;
* ``endless.add(file)``  no Content-Length: the file's bytes, then junk until the client hangs up;
* ``short_bodies[file] = n``  ignore ``Range`` and answer every request 200 with only n bytes;
* ``api_fail``  every /api request answers this status (e.g. 500); ``api_garbage`` answers invalid JSON.

Access knobs:

* ``gated[repo_id] = token``  ``/resolve/`` of that repo needs ``Authorization: Bearer <token>``:
  401 without one, 403 with another (as huggingface.co answers for a gated repo whose licence was
  not accepted). Listing its files stays open, as on the hub. The CDN URL stays open too (the
  hub's are signed URLs).
* ``cdn_origin``  e.g. ``hub.url.replace("127.0.0.1", "localhost")``: LFS redirects go to this
  other origin (an absolute URL, like the hub's CDN host) instead of a path on the same origin.

Every request is logged in ``requests`` as ``(method, path, range_header)``, and in ``seen`` as
``(method, path, host_header, authorization_header)``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.support.quiet_http import QuietHTTPServer

__all__ = ["FakeHub", "HubRepo"]

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class HubRepo:
    repo_id: str
    files: dict[str, bytes]
    downloads: int = 0
    likes: int = 0
    tags: list[str] = field(default_factory=lambda: ["gguf", "text-generation"])
    declared_sizes: dict[str, int] = field(default_factory=dict)  # lie about a size (full-disk tests)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, HubRepo] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        self.drop_after: dict[str, list[int]] = {}
        self.fail_status: dict[str, list[int]] = {}
        self.corrupt: set[str] = set()
        self.hold_after: dict[str, int] = {}
        self.endless: set[str] = set()
        self.short_bodies: dict[str, int] = {}
        self.release = threading.Event()
        self.held = threading.Event()  # set when a hold_after point is reached
        self.throttle_bps: int | None = None
        self.api_fail: int | None = None
        self.api_garbage = False
        self.gated: dict[str, str] = {}
        self.cdn_origin: str | None = None
        self.seen: list[tuple[str, str, str | None, str | None]] = []
        self._lock = threading.Lock()
        self._server: QuietHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- set-up ---------------------------------------------------------------------------------
    def add_repo(self, repo_id: str, files: dict[str, bytes], **kwargs) -> HubRepo:
        repo = HubRepo(repo_id, dict(files), **kwargs)
        self.repos[repo_id] = repo
        return repo

    def sha256(self, repo_id: str, filename: str) -> str:
        return _sha256(self.repos[repo_id].files[filename])

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the hub first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
        self._server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        # a short poll interval: shutdown() waits up to one interval (0.5 s by default)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="fake-hub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _take(self, table: dict[str, list[int]], name: str) -> int | None:
        with self._lock:
            queue = table.get(name)
            if queue:
                return queue.pop(0)
        return None

    def count(self, method: str, path_part: str) -> int:
        return sum(1 for m, p, _ in self.requests if m == method and path_part in p)


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub
    protocol_version = "HTTP/1.0"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    # -- plumbing -------------------------------------------------------------------------------
    def _json(self, payload, status: int = 200, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, message: str, error_code: str | None = None) -> None:
        headers = {"X-Error-Message": message}
        if error_code:
            headers["X-Error-Code"] = error_code
        self._json({"error": message}, status, headers)

    def do_HEAD(self) -> None:
        self._route()

    def do_GET(self) -> None:
        self._route()

    def _route(self) -> None:
        hub = self.hub
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        hub.requests.append((self.command, path, self.headers.get("Range")))
        hub.seen.append((self.command, path, self.headers.get("Host"), self.headers.get("Authorization")))
        query = parse_qs(parts.query)
        try:
            if path.startswith("/api/"):
                if hub.api_fail:
                    return self._error(hub.api_fail, "Internal Error (fake hub)")
                if hub.api_garbage:
                    body = b"<html>not json"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return None
                if path == "/api/models":
                    return self._list_models(query)
                if path.startswith("/api/models/") and "/tree/" in path:
                    return self._tree(path[len("/api/models/") :])
                return self._error(404, "Not found")
            if path.startswith("/_cdn/"):
                return self._serve_file(path[len("/_cdn/") :])
            if "/resolve/" in path:
                return self._resolve(path.lstrip("/"))
            return self._error(404, "Not found")
        except (BrokenPipeError, ConnectionResetError):
            return None

    # -- API ------------------------------------------------------------------------------------
    def _list_models(self, query: dict[str, list[str]]) -> None:
        search = (query.get("search") or [""])[0].lower()
        filters = query.get("filter") or []
        limit = int((query.get("limit") or ["1000"])[0])
        sort = (query.get("sort") or [""])[0]
        repos = [
            r
            for r in self.hub.repos.values()
            if search in r.repo_id.lower() and all(f in r.tags for f in filters)
        ]
        if sort in ("downloads", "likes"):
            repos.sort(key=lambda r: getattr(r, sort), reverse=True)
        payload = [
            {
                "_id": _git_oid(r.repo_id.encode()),
                "id": r.repo_id,
                "modelId": r.repo_id,
                "downloads": r.downloads,
                "likes": r.likes,
                "tags": r.tags,
                "library_name": "gguf",
                "pipeline_tag": "text-generation",
                "private": False,
                "createdAt": "2025-01-01T00:00:00.000Z",
                "lastModified": "2025-01-02T00:00:00.000Z",
            }
            for r in repos[:limit]
        ]
        self._json(payload)

    def _split_repo(self, rest: str) -> tuple[HubRepo | None, str]:
        for repo_id, repo in self.hub.repos.items():
            if rest.startswith(repo_id + "/"):
                return repo, rest[len(repo_id) + 1 :]
        return None, rest

    def _tree(self, rest: str) -> None:
        repo, tail = self._split_repo(rest)
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound")
        # tail: "tree/{rev}[/{path}]"
        _, _, after = tail.partition("tree/")
        _rev, _, sub = after.partition("/")
        entries = []
        for name, data in sorted(repo.files.items()):
            if sub and not name.startswith(sub.rstrip("/") + "/"):
                continue
            size = repo.declared_sizes.get(name, len(data))
            entry = {"type": "file", "oid": _git_oid(data), "size": size, "path": name}
            if name.endswith(".gguf"):
                entry["lfs"] = {"oid": _sha256(data), "size": size, "pointerSize": 134}
            entries.append(entry)
        self._json(entries)

    # -- files ----------------------------------------------------------------------------------
    def _resolve(self, rest: str) -> None:
        repo, tail = self._split_repo(rest)
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound")
        _, _, after = tail.partition("resolve/")
        _rev, _, filename = after.partition("/")
        if filename not in repo.files:
            return self._error(404, "Entry not found", "EntryNotFound")
        needed = self.hub.gated.get(repo.repo_id)
        if needed is not None:
            sent = self.headers.get("Authorization")
            if not sent:
                return self._error(401, "Access to this gated repo requires authentication", "GatedRepo")
            if sent != f"Bearer {needed}":
                return self._error(403, "Access to this gated repo is restricted", "GatedRepo")
        data = repo.files[filename]
        status = self.hub._take(self.hub.fail_status, filename)
        if status is not None:
            return self._error(status, f"fake hub fault {status}")
        if filename.endswith(".gguf"):
            self.send_response(302)
            self.send_header(
                "Location", f"{self.hub.cdn_origin or ''}/_cdn/{quote(repo.repo_id)}/{quote(filename)}"
            )
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("X-Linked-Etag", f'"{_sha256(data)}"')
            self.send_header("X-Linked-Size", str(repo.declared_sizes.get(filename, len(data))))
            self.send_header("ETag", f'"{_git_oid(data)}"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self._send_bytes(repo, filename, data)

    def _serve_file(self, rest: str) -> None:
        repo, filename = self._split_repo(rest)
        if repo is None or filename not in repo.files:
            return self._error(404, "Entry not found")
        status = self.hub._take(self.hub.fail_status, filename)
        if status is not None:
            return self._error(status, f"fake hub fault {status}")
        return self._send_bytes(repo, filename, repo.files[filename])

    def _send_misbehaving(self, filename: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if filename in self.hub.short_bodies:
            body = data[: self.hub.short_bodies[filename]]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(data)
            junk = b"\0" * 65536
            for _ in range(100_000):  # 6.5 GB at most: "endless" for any test
                self.wfile.write(junk)
        except OSError:
            return  # the client hung up, as it should

    def _send_bytes(self, repo: HubRepo, filename: str, data: bytes) -> None:
        hub = self.hub
        if filename in hub.corrupt and data:
            data = (
                bytes([data[0] ^ 0xFF]) + data[1:-1] + bytes([data[-1] ^ 0xFF]) if len(data) > 1 else b"\x00"
            )
        if filename in hub.endless or filename in hub.short_bodies:
            return self._send_misbehaving(filename, data)
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            first = rng[len("bytes=") :].split("-", 1)[0]
            start = int(first) if first else 0
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        body = data[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{_sha256(repo.files[filename])}"')
        self.send_header("X-Repo-Commit", COMMIT)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if self.command == "HEAD":
            return
        drop = hub._take(hub.drop_after, filename)
        hold = hub.hold_after.get(filename)
        sent = 0
        chunk = 8192
        while sent < len(body):
            if drop is not None and sent >= drop:
                self.wfile.flush()
                self.connection.shutdown(2)  # the connection drops mid-file
                return
            if hold is not None and start + sent >= hold and not hub.release.is_set():
                self.wfile.flush()
                hub.held.set()
                hub.release.wait(30)
            end = len(body)
            if drop is not None:
                end = min(end, drop)
            if hold is not None and start + sent < hold:
                end = min(end, hold - start)
            piece = body[sent : min(sent + chunk, end)]
            self.wfile.write(piece)
            sent += len(piece)
            if hub.throttle_bps:
                time.sleep(len(piece) / hub.throttle_bps)
        self.wfile.flush()
