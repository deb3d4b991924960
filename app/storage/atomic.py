"""Atomic file replacement: write a temp file beside the target, fsync it, then os.replace.

A crash, a full disk or a failing write at any point leaves either the old file or the new
one, never a half-written one, and never a stray temp file when the failure is an exception.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["AtomicWriteError", "atomic_write_bytes", "atomic_write_text"]


class AtomicWriteError(OSError):
    """Writing the new contents failed; the previous file (if any) is untouched."""


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (same-directory temp file + ``os.replace``)."""
    target = Path(path)
    directory = target.parent
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise AtomicWriteError(
            exc.errno, f"cannot create a temporary file in {directory}: {exc.strerror or exc}"
        ) from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            view = memoryview(data)
            while view:
                written = fh.write(view)
                view = view[written:]
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(OSError):
            if target.exists():
                os.chmod(tmp, target.stat().st_mode & 0o7777)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise AtomicWriteError(exc.errno, f"could not write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(directory)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``text`` atomically."""
    atomic_write_bytes(path, text.encode(encoding))
