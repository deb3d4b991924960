"""File tools confined to one folder the user chose (the workspace).

Every path the model gives is relative to the workspace. Refused, with one clear sentence:
absolute paths, ``~``, drive letters, UNC paths, backslashes, ``..`` components, NUL bytes,
anything whose real path (symlinks resolved) leaves the workspace, symlink loops, anything
that is not a regular file or folder (devices, FIFOs, sockets), files with extra hard links
(they may be the same file as one outside), and files over the size limit.

The checked path is then opened one component at a time from the workspace folder
(``openat`` with ``O_NOFOLLOW`` on every folder and on the file, where the platform has
``dir_fd``: Linux, macOS), so a folder or file swapped for a symlink between the check and
the open is refused, never followed; files are checked again with ``fstat`` after opening. On
Windows, which has no ``openat``, each opened file's final path (``GetFinalPathNameByHandleW``)
must still lie inside the workspace. Listing and searching walk folder descriptors the same way.

``search_files`` and ``write_file`` cooperate with the dispatcher's time limit
(:mod:`app.tools.cancel`): a regular expression is matched by the ``regex`` engine with the
GIL released and a time limit, and a write is staged in a hidden temporary file and renamed
into place only after its commit point, so a write stopped in time changes nothing.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import tempfile
import time
import unicodedata
from pathlib import Path

from app.tools.cancel import check_cancelled, commit_side_effect, remaining_time
from app.tools.registry import tool_from_function
from app.tools.types import Tool, ToolError
from app.units import format_bytes

__all__ = ["MAX_NAME_BYTES", "MAX_WRITE_BYTES", "Workspace", "WorkspaceError", "workspace_tools"]

MAX_PATH_CHARS = 1024
MAX_READ_BYTES = 2 * 1024 * 1024
MAX_WRITE_BYTES = 1024 * 1024  # of UTF-8: what lands on the disk, whatever the characters
MAX_NAME_BYTES = 255  # one file or folder name (ext4, APFS, NTFS: 255 UTF-16 units on Windows)
MAX_LIST_ENTRIES = 500
MAX_SEARCH_FILES = 2000
MAX_SEARCH_MATCHES = 200
MAX_SEARCH_LINE = 500
MAX_QUERY_CHARS = 1000
MAX_REGEX_LINE = 4096  # characters of each line a regular expression is tried on
SEARCH_TIMEOUT_S = 10.0  # a search's own time limit (the dispatcher's may be shorter)

_DRIVE_RE = re.compile(r"^[A-Za-z]:")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
# openat-style opening (every component relative to its folder's descriptor) where supported.
_AT = (
    os.open in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
    and os.scandir in os.supports_fd
    and bool(_NOFOLLOW)
)
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK, errno.ENOTDIR}


def _final_path(fd: int) -> str | None:
    """The path the kernel says ``fd`` is open on (Windows only; None where not known)."""
    if os.name != "nt":  # pragma: no cover - POSIX opens with openat instead
        return None
    try:  # pragma: no cover - Windows
        import ctypes
        import msvcrt
        from ctypes import wintypes

        handle = msvcrt.get_osfhandle(fd)  # type: ignore[attr-defined]
        fn = ctypes.windll.kernel32.GetFinalPathNameByHandleW  # type: ignore[attr-defined]
        fn.argtypes = [wintypes.HANDLE, wintypes.LPWSTR, wintypes.DWORD, wintypes.DWORD]
        buf = ctypes.create_unicode_buffer(32768)
        n = fn(handle, buf, 32768, 0)
        if not n:
            return None
        return buf.value.removeprefix("\\\\?\\")
    except Exception:  # noqa: BLE001 - pragma: no cover
        return None


# Control characters (C0, C1, DEL), format characters (bidirectional overrides, zero-width
# characters, Unicode tags), line and paragraph separators, and surrogates (a name that is not
# UTF-8): a name holding one can rewrite a terminal or hide what it says.
_ODD_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _odd(ch: str) -> bool:
    return unicodedata.category(ch) in _ODD_CATEGORIES


def _shown(text: str) -> str:
    """``text`` with every control or invisible character written as an escape (``\\x1b``,
    ``\\u202e``, ``\\n``): file names in results and refusals can neither act on a terminal nor
    split a line."""
    if not any(_odd(ch) for ch in text):
        return text
    return "".join(
        ch.encode("unicode_escape", "backslashreplace").decode("ascii") if _odd(ch) else ch for ch in text
    )


def _q(path: str) -> str:
    """A path for a sentence: quoted, clipped to 80 characters, escaped."""
    return f"'{_shown(path[:80])}'"


def _name_too_long(name: str) -> bool:
    if os.name == "nt":  # pragma: no cover - Windows counts UTF-16 units
        return len(name.encode("utf-16-le", "surrogatepass")) // 2 > MAX_NAME_BYTES
    return len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES


def _skip_reason(message: str) -> str:
    """Why a search passed over a file, from the read's refusal."""
    if "limit" in message:
        return "over the read limit"
    if "binary" in message:
        return "binary"
    if "not a regular file" in message:
        return "not a regular file"
    if "hard link" in message:
        return "more than one hard link"
    return "could not be read"


class WorkspaceError(ValueError):
    """The workspace folder itself is unusable (missing, not a folder)."""


def _cannot_write(path: str, exc: OSError) -> ToolError:
    return ToolError(f"{_q(path)} cannot be written ({exc.strerror or exc}).")


def _write_all(fd: int, data: bytes, path: str) -> None:
    """Write ``data`` to the new file open at ``fd`` and flush it to the disk; the file is closed
    after. Raises ToolError (the model's words) when that fails."""
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise _cannot_write(path, exc) from None


class Workspace:
    """A folder the file tools may touch, and nothing outside it."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_read_bytes: int = MAX_READ_BYTES,
        search_timeout_s: float = SEARCH_TIMEOUT_S,
    ) -> None:
        path = Path(root).expanduser()
        if not path.exists():
            raise WorkspaceError(f"The workspace folder {str(path)!r} does not exist")
        if not path.is_dir():
            raise WorkspaceError(f"The workspace {str(path)!r} is not a folder")
        self.root = path.resolve(strict=True)
        self.max_read_bytes = max_read_bytes
        self.search_timeout_s = search_timeout_s

    # -- path checks --------------------------------------------------------------------

    def _lexical_check(self, path: str) -> str:
        if not isinstance(path, str):
            raise ToolError(f"The path must be a string, got {type(path).__name__}.")
        shown = _shown(path[:80])
        if "\x00" in path:
            raise ToolError("The path contains a NUL character, which is not allowed.")
        if len(path) > MAX_PATH_CHARS:
            raise ToolError(f"The path is too long (more than {MAX_PATH_CHARS} characters).")
        text = path.strip()
        if not text:
            raise ToolError(
                'The path is empty; give a path relative to the workspace ("." is the workspace folder).'
            )
        if text == ".":
            return "."
        if text.startswith("~"):
            raise ToolError(f"'{shown}' refers to a home folder; use a path relative to the workspace.")
        if text.startswith(("\\\\", "//")):
            raise ToolError(f"'{shown}' is a network (UNC) path; use a path relative to the workspace.")
        if _DRIVE_RE.match(text):
            raise ToolError(f"'{shown}' has a drive letter; use a path relative to the workspace.")
        if "\\" in text:
            raise ToolError(f"'{shown}' contains a backslash; use '/' between folder names.")
        if text.startswith("/") or os.path.isabs(text):
            raise ToolError(f"'{shown}' is an absolute path; use a path relative to the workspace.")
        names = text.split("/")
        if ".." in names:
            raise ToolError(f"'{shown}' goes up out of the folder with '..', which is not allowed.")
        for name in names:
            if _name_too_long(name):
                raise ToolError(
                    f"A name in '{shown}' is longer than {MAX_NAME_BYTES} bytes, which file systems do not allow."
                )
        return text

    def resolve(self, path: str) -> Path:
        """The real absolute path for ``path`` (relative to the workspace), or ToolError."""
        rel = self._lexical_check(path)
        candidate = self.root / rel
        try:
            real = Path(os.path.realpath(candidate, strict=False))
            # realpath leaves a symlink loop unresolved instead of failing: detect it.
            if os.path.islink(real):
                raise ToolError(f"{_q(path)} is a symbolic link loop.")
        except (OSError, RuntimeError, ValueError):
            raise ToolError(f"{_q(path)} cannot be resolved (symbolic link loop or invalid name).") from None
        if real != self.root and self.root not in real.parents:
            raise ToolError(f"{_q(path)} leads outside the workspace, which is not allowed.")
        return real

    def relative(self, real: Path) -> str:
        rel = real.relative_to(self.root).as_posix()
        return rel or "."

    def _check_regular(self, st: os.stat_result, path: str) -> None:
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{_q(path)} is a folder, not a file.")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{_q(path)} is not a regular file (device, pipe or socket), so it is refused.")
        if st.st_nlink > 1:
            raise ToolError(
                f"{_q(path)} has more than one hard link (it may be a file outside the workspace), so it is refused."
            )

    def _parts(self, real: Path) -> tuple[str, ...]:
        return real.relative_to(self.root).parts

    def _changed(self, path: str) -> ToolError:
        return ToolError(
            f"{_q(path)} changed while it was opened (a folder or file became a symbolic link), "
            "so it is refused."
        )

    def _open_dir(self, parts: tuple[str, ...], path: str, *, create: bool = False) -> int:
        """Descriptor of the folder ``root/parts``, opened component by component, no link followed."""
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise ToolError(f"The workspace folder cannot be opened ({exc.strerror or exc}).") from None
        try:
            for name in parts:
                try:
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise ToolError(f"{_q(path)} does not exist.") from None
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    except OSError as exc:
                        raise ToolError(
                            f"The folder for {_q(path)} cannot be created ({exc.strerror or exc})."
                        ) from None
                    try:
                        nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError:
                        raise self._changed(path) from None
                except OSError as exc:
                    if exc.errno in _LINK_ERRNOS:
                        try:
                            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        except OSError:
                            raise self._changed(path) from None
                        if not stat.S_ISLNK(st.st_mode) and not stat.S_ISDIR(st.st_mode):
                            raise ToolError(f"{_q(path)}: {_q(name)} is a file, not a folder.") from None
                        raise self._changed(path) from None
                    raise ToolError(f"{_q(path)} cannot be opened ({exc.strerror or exc}).") from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _inside(self, fd: int, path: str) -> None:
        """Windows: refuse a descriptor whose final path left the workspace (no openat there)."""
        final = _final_path(fd)
        if final is not None:
            real = Path(os.path.normcase(final))
            root = Path(os.path.normcase(str(self.root)))
            if real != root and root not in real.parents:
                os.close(fd)
                raise ToolError(f"{_q(path)} leads outside the workspace, which is not allowed.")

    def _open_read(self, path: str) -> tuple[int, os.stat_result, Path]:
        real = self.resolve(path)
        flags = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | _CLOEXEC
        try:
            if _AT:
                parts = self._parts(real)
                if not parts:
                    raise ToolError(f"{_q(path)} is a folder, not a file.")
                dfd = self._open_dir(parts[:-1], path)
                try:
                    fd = os.open(parts[-1], flags, dir_fd=dfd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.EMLINK):
                        raise self._changed(path) from None
                    raise
                finally:
                    os.close(dfd)
            else:
                fd = os.open(real, flags)
                self._inside(fd, path)
        except FileNotFoundError:
            raise ToolError(f"{_q(path)} does not exist.") from None
        except IsADirectoryError:
            raise ToolError(f"{_q(path)} is a folder, not a file.") from None
        except OSError as exc:
            raise ToolError(f"{_q(path)} cannot be opened ({exc.strerror or exc}).") from None
        try:
            st = os.fstat(fd)
            self._check_regular(st, path)
            if st.st_size > self.max_read_bytes:
                raise ToolError(
                    f"{_q(path)} is {format_bytes(st.st_size)}, over the {format_bytes(self.max_read_bytes)} limit "
                    "for reading files."
                )
        except BaseException:
            os.close(fd)
            raise
        return fd, st, real

    def read_bytes(self, path: str) -> bytes:
        fd, st, _ = self._open_read(path)
        try:
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(self.max_read_bytes + 1)
        except OSError as exc:
            raise ToolError(f"{_q(path)} cannot be read ({exc.strerror or exc}).") from None
        if len(data) > self.max_read_bytes:
            raise ToolError(
                f"{_q(path)} is over the {format_bytes(self.max_read_bytes)} limit for reading files."
            )
        return data

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        if b"\x00" in data[:8192]:
            raise ToolError(f"{_q(path)} is a binary file, not text.")
        return data.decode("utf-8", errors="replace")

    # -- tools --------------------------------------------------------------------------

    def list_files(self, path: str = ".") -> str:
        """List the files and folders in a folder of the workspace.

        Args:
            path: Folder relative to the workspace root; "." is the root.
        """
        real = self.resolve(path)
        try:
            if not real.exists():
                raise ToolError(f"{_q(path)} does not exist.")
            if not real.is_dir():
                raise ToolError(f"{_q(path)} is a file, not a folder; use read_file to read it.")
        except OSError as exc:
            raise ToolError(f"{_q(path)} cannot be listed ({exc.strerror or exc}).") from None
        try:
            # The entries of a listed descriptor read their types and sizes through it (``dir_fd``),
            # so they are described before it is closed.
            if _AT:
                dfd = self._open_dir(self._parts(real), path)
                try:
                    entries = sorted(os.scandir(dfd), key=lambda e: e.name.lower())
                    lines = [self._describe(e) for e in entries[:MAX_LIST_ENTRIES]]
                finally:
                    os.close(dfd)
            else:
                entries = sorted(os.scandir(real), key=lambda e: e.name.lower())
                lines = [self._describe(e) for e in entries[:MAX_LIST_ENTRIES]]
        except OSError as exc:
            raise ToolError(f"{_q(path)} cannot be listed ({exc.strerror or exc}).") from None
        where = _shown(self.relative(real))
        if not lines:
            return f"{where}: empty folder."
        header = f"{where}: {len(entries)} entries"
        if len(entries) > MAX_LIST_ENTRIES:
            header += f" (showing the first {MAX_LIST_ENTRIES})"
        return header + "\n" + "\n".join(lines)

    @staticmethod
    def _describe(entry: os.DirEntry[str]) -> str:
        name = _shown(entry.name)
        try:
            if entry.is_symlink():
                return f"{name} (symbolic link)"
            if entry.is_dir(follow_symlinks=False):
                return f"{name}/"
            if entry.is_file(follow_symlinks=False):
                return f"{name} ({format_bytes(entry.stat(follow_symlinks=False).st_size)})"
            return f"{name} (special file)"
        except OSError:
            return f"{name} (unreadable)"

    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a text file of the workspace, optionally only some lines.

        Args:
            path: File relative to the workspace root.
            start_line: First line to read (1-based, inclusive). Leave out to start at line 1.
            end_line: Last line to read (inclusive). Leave out to read to the end.
        """
        text = self.read_text(path)
        lines = text.splitlines()
        total = len(lines)
        first = 1 if start_line is None else start_line
        last = total if end_line is None else end_line
        if first < 1:
            raise ToolError(f"start_line must be 1 or more, got {first}.")
        if end_line is not None and last < first:
            raise ToolError(f"end_line ({last}) is before start_line ({first}).")
        shown = _shown(path)
        if total == 0:
            return f"{shown}: empty file."
        if first > total:
            raise ToolError(f"start_line {first} is past the end of {_q(path)}, which has {total} lines.")
        last = min(last, total)
        body = "\n".join(lines[first - 1 : last])
        if first == 1 and last == total:
            return f"{shown} ({total} lines):\n{body}"
        return f"{shown} (lines {first}-{last} of {total}):\n{body}"

    def search_files(self, query: str, regex: bool = False, path: str = ".") -> str:
        """Search the text files of the workspace for a string or regular expression.

        Args:
            query: The text to find (or a Python regular expression when regex is true).
            regex: Treat query as a regular expression.
            path: Folder (or file) to search in, relative to the workspace root.
        """
        if not query:
            raise ToolError("The query is empty.")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"The query is too long (more than {MAX_QUERY_CHARS} characters).")
        # Plain text: a substring test, linear in the line. A regular expression runs on the
        # ``regex`` engine, which releases the GIL while matching (the app stays responsive) and
        # stops at a time limit (a catastrophically backtracking pattern cannot run away).
        # The engine's limit counts processor time, which on a busy machine runs slower than the
        # clock: take a third of what is left of the call's time so the search usually reports its
        # own error before the dispatcher's limit (which stops it in any case).
        budget = remaining_time(self.search_timeout_s)
        limit = min(self.search_timeout_s, max(0.05, budget / 3))
        cpu_start = time.process_time()
        if regex:
            import regex as regex_engine

            try:
                compiled = regex_engine.compile(query)
            except (regex_engine.error, ValueError, OverflowError, RecursionError) as exc:
                raise ToolError(f"The regular expression is invalid ({exc}).") from None

            def found(line: str) -> bool:
                left = limit - (time.process_time() - cpu_start)
                if left <= 0:
                    raise TimeoutError
                return compiled.search(line[:MAX_REGEX_LINE], timeout=left, concurrent=True) is not None
        else:

            def found(line: str) -> bool:
                return query in line

        real = self.resolve(path)
        try:
            if not real.exists():
                raise ToolError(f"{_q(path)} does not exist.")
            is_file = real.is_file()
        except OSError as exc:
            raise ToolError(f"{_q(path)} cannot be searched ({exc.strerror or exc}).") from None
        files: list[Path] = []
        if is_file:
            files.append(real)
        else:
            if _AT and hasattr(os, "fwalk"):
                # fwalk opens each folder relative to its parent's descriptor without following
                # links; the start folder is checked the same way first.
                os.close(self._open_dir(self._parts(real), path))
                walker = ((d, dn, fn) for d, dn, fn, _ in os.fwalk(real, follow_symlinks=False))
            else:
                walker = ((d, dn, fn) for d, dn, fn in os.walk(real, followlinks=False))
            for dirpath, dirnames, filenames in walker:
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") or d == ".")
                for name in sorted(filenames):
                    files.append(Path(dirpath) / name)
                    if len(files) >= MAX_SEARCH_FILES:
                        break
                if len(files) >= MAX_SEARCH_FILES:
                    break
        matches: list[str] = []
        skipped: dict[str, list[str]] = {}  # reason -> the files passed over for it
        long_lines = 0
        for file in files:
            rel = self.relative(file)
            try:
                if file.is_symlink():
                    skipped.setdefault("symbolic link", []).append(rel)
                    continue
                text = self.read_text(rel)
            except ToolError as exc:
                skipped.setdefault(_skip_reason(str(exc)), []).append(rel)
                continue
            except OSError:
                skipped.setdefault("could not be read", []).append(rel)
                continue
            rel = _shown(rel)
            check_cancelled()
            for number, line in enumerate(text.splitlines(), start=1):
                if regex and len(line) > MAX_REGEX_LINE:
                    long_lines += 1
                if number % 1000 == 0:
                    check_cancelled()
                try:
                    hit = found(line)
                except TimeoutError:
                    raise ToolError(
                        f"The regular expression took too long (over {round(limit, 2):g} s of matching, stopped at "
                        f"{rel}:{number}); "
                        "it probably backtracks catastrophically. Simplify it, e.g. avoid nested repeats "
                        "like (a+)+."
                    ) from None
                if hit:
                    shown = line.strip()
                    if len(shown) > MAX_SEARCH_LINE:
                        shown = shown[:MAX_SEARCH_LINE] + "..."
                    matches.append(f"{rel}:{number}: {shown}")
                    if len(matches) >= MAX_SEARCH_MATCHES:
                        break
            if len(matches) >= MAX_SEARCH_MATCHES:
                break
        n_skipped = sum(len(v) for v in skipped.values())
        if not matches:
            result = f"No matches for {query!r} in {len(files) - n_skipped} files."
        else:
            result = f"{len(matches)} matches for {query!r}"
            if len(matches) >= MAX_SEARCH_MATCHES:
                result += f" (stopped at {MAX_SEARCH_MATCHES})"
            result += ":\n" + "\n".join(matches)
        if skipped:
            # A file passed over may hold what was searched for: say which, and why.
            parts = []
            for reason, names in sorted(skipped.items(), key=lambda kv: -len(kv[1])):
                if reason == "over the read limit":
                    reason = f"over the {format_bytes(self.max_read_bytes)} read limit"
                shown = ", ".join(_shown(n) for n in names[:3]) + (
                    f" and {len(names) - 3} more" if len(names) > 3 else ""
                )
                parts.append(f"{len(names)} {reason} ({shown})")
            result += (
                f"\n(Skipped {n_skipped} file{'s' if n_skipped != 1 else ''}: " + "; ".join(parts) + ".)"
            )
        if len(files) >= MAX_SEARCH_FILES:
            result += f"\n(Searched only the first {MAX_SEARCH_FILES} files.)"
        if long_lines:
            result += (
                f"\n({long_lines} lines longer than {MAX_REGEX_LINE} characters were searched only in their first "
                f"{MAX_REGEX_LINE} characters.)"
            )
        return result

    def _write_at(self, path: str, real: Path, data: bytes) -> str:
        """write_file where openat exists: every folder and the target opened relative to its parent."""
        parts = self._parts(real)
        name = parts[-1]
        root_fd = self._open_dir((), path)
        parent_fd: int | None = None
        tmp: str | None = None
        stage_fd = root_fd
        try:
            try:
                parent_fd = self._open_dir(parts[:-1], path)
            except ToolError:
                if os.path.lexists(real.parent):
                    raise
                parent_fd = None  # missing folders are created after the commit point
            if parent_fd is not None:
                stage_fd = parent_fd
                try:
                    self._check_regular(os.stat(name, dir_fd=parent_fd, follow_symlinks=False), path)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    raise _cannot_write(path, exc) from None
            # As on every platform: stage in a hidden file, commit with one rename (see write_file).
            tmp = f".callisto-{secrets.token_hex(8)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
            try:
                fd = os.open(tmp, flags, 0o666, dir_fd=stage_fd)
            except OSError as exc:
                tmp = None
                raise _cannot_write(path, exc) from None
            _write_all(fd, data, path)
            check_cancelled()
            commit_side_effect()  # from here on the write happens even if the time runs out
            if parent_fd is None:
                parent_fd = self._open_dir(parts[:-1], path, create=True)
            try:
                # Renames a name inside the folder descriptor; never follows a symlink at the target.
                os.replace(tmp, name, src_dir_fd=stage_fd, dst_dir_fd=parent_fd)
            except OSError as exc:
                raise _cannot_write(path, exc) from None
            tmp = None
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp, dir_fd=stage_fd)
                except OSError:
                    pass
            if parent_fd is not None:
                os.close(parent_fd)
            os.close(root_fd)
        return f"Wrote {len(data)} bytes to {_shown(self.relative(real))}."

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace (asks the user first).

        Args:
            path: File relative to the workspace root; missing folders are created.
            content: The complete new content of the file.
        """
        too_long = ToolError(f"The content is too long (more than {MAX_WRITE_BYTES} bytes of UTF-8).")
        if len(content) > MAX_WRITE_BYTES:  # every character is one byte or more
            raise too_long
        rel = self._lexical_check(path)
        if rel == "." or path.strip().endswith("/"):
            raise ToolError(f"{_q(path)} names a folder; give a file name.")
        odd = next((ch for ch in path if _odd(ch)), None)
        if odd is not None:
            raise ToolError(
                f"{_q(path)} contains a control or invisible character (U+{ord(odd):04X}), which file names "
                "may not hold."
            )
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise too_long
        real = self.resolve(path)
        if _AT:
            return self._write_at(path, real, data)
        if os.path.lexists(real):
            st = os.lstat(real)
            self._check_regular(st, path)
        parent = real.parent
        # The new content goes to a hidden temporary file first (in the target folder when it
        # exists, else the workspace root: the same file system either way), nothing visible
        # changes until the commit point, and the commit is one rename. So a call stopped by
        # its time limit before the commit leaves the workspace exactly as it was.
        staging = parent if parent.is_dir() else self.root
        if Path(os.path.realpath(staging)) != staging:
            raise ToolError(f"{_q(path)} leads outside the workspace, which is not allowed.")
        try:
            fd, tmp = tempfile.mkstemp(prefix=".callisto-", suffix=".tmp", dir=staging)
        except OSError as exc:
            raise _cannot_write(path, exc) from None
        try:
            _write_all(fd, data, path)
            check_cancelled()
            commit_side_effect()  # from here on the write happens even if the time runs out
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ToolError(
                    f"The folder for {_q(path)} cannot be created ({exc.strerror or exc})."
                ) from None
            # The parent may have been swapped for a symlink meanwhile: check its real path again.
            if Path(os.path.realpath(parent)) != parent or (
                parent != self.root and self.root not in parent.parents
            ):
                raise ToolError(f"{_q(path)} leads outside the workspace, which is not allowed.")
            try:
                os.replace(tmp, real)  # replaces a name, never follows a symlink at the target
            except OSError as exc:
                raise _cannot_write(path, exc) from None
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return f"Wrote {len(data)} bytes to {_shown(self.relative(real))}."


def workspace_tools(workspace: Workspace) -> list[Tool]:
    """The four file tools bound to ``workspace``; write_file has side effects (asks first)."""
    return [
        tool_from_function(workspace.list_files, name="list_files"),
        tool_from_function(workspace.read_file, name="read_file"),
        tool_from_function(workspace.search_files, name="search_files", cancellable=True),
        tool_from_function(workspace.write_file, name="write_file", side_effects=True, cancellable=True),
    ]
