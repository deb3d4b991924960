"""Reading a file a user named, without hanging: the one helper every such reader uses.

A path a user (or a result file, a scenario folder, a settings field) names may be a FIFO, which
blocks ``open`` until a writer comes; a device such as ``/dev/zero`` or ``/dev/urandom``, which
never ends; a folder; or a regular file far larger than anything the reader expects. Each of
these is refused here with one sentence, before anything is read: the file is opened without
blocking (``O_NONBLOCK``, ``O_CLOEXEC``), checked with ``fstat`` on the open descriptor (so a
swap after a check cannot slip in), and read to at most ``max_bytes`` (a file that grows while it
is read is still cut there). JSON nested deeper than the parser can follow is a ``ValueError``,
not a ``RecursionError``.

Imports nothing of the app but :mod:`app.units`: it sits at the bottom layer, beside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from typing import IO, Any

from app.units import format_bytes

__all__ = [
    "FileRefused",
    "loads_json",
    "open_regular_file",
    "read_json_file",
    "read_regular_file",
    "read_text_file",
]

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


class FileRefused(OSError):
    """The file is not one a reader takes: not a regular file, or too large. ``str()`` is the reason."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(reason)
        self.filename = os.fspath(path)
        self.strerror = reason

    def __str__(self) -> str:
        return self.strerror or ""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


@contextlib.contextmanager
def open_regular_file(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> Iterator[IO[bytes]]:
    """The file at ``path`` open for binary reading; :class:`FileRefused` when it is not a regular
    file (a FIFO is refused without waiting for a writer) or, given ``max_bytes``, larger than that.
    Other ``OSError`` (missing, no permission) pass through."""
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(path, f"it is not a regular file but {_kind(st.st_mode)}")
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileRefused(
                path,
                f"it is {format_bytes(st.st_size)}, over the {format_bytes(max_bytes)} limit for this file",
            )
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def read_regular_file(path: str | os.PathLike[str], *, max_bytes: int) -> bytes:
    """All of a regular file's bytes, at most ``max_bytes`` (see :func:`open_regular_file`)."""
    with open_regular_file(path, max_bytes=max_bytes) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while it was read, or says size 0 and never ends (/proc)
        raise FileRefused(path, f"it is over the {format_bytes(max_bytes)} limit for this file")
    return data


def read_text_file(path: str | os.PathLike[str], *, max_bytes: int) -> str:
    """:func:`read_regular_file` decoded as UTF-8 (``UnicodeDecodeError`` when it is not)."""
    return read_regular_file(path, max_bytes=max_bytes).decode("utf-8")


def read_json_file(path: str | os.PathLike[str], *, max_bytes: int) -> Any:
    """A JSON file's value. ``OSError`` when it cannot be read (:class:`FileRefused` among them),
    ``ValueError`` when it is not JSON, is nested too deeply, or holds a number too long to convert."""
    data = read_regular_file(path, max_bytes=max_bytes)
    return loads_json(data)


def loads_json(data: bytes | str) -> Any:
    """``json.loads`` with nesting too deep for the parser as a ``ValueError``."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
