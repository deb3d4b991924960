"""The stdio transport of an MCP server, Callisto's own so that it owns the server's whole process tree.

What it adds to the SDK's ``stdio_client``:

* **stderr is a bounded tail** (:class:`StderrTail`, the last :data:`STDERR_TAIL_BYTES`): a chatty
  or hostile server cannot fill memory or the disk; the tail gives its last words to an error.
* **every process the server started is stopped** (:class:`ProcessTree`): on POSIX the server leads
  its own process group (``start_new_session``) and its descendants are also tracked by parent
  (a child that called ``setsid`` leaves the group but not the tree); closing signals the group and
  each tracked descendant, SIGTERM then SIGKILL after :data:`KILL_GRACE_S`. On Windows the server
  runs in a job object that kills every member when it is closed (the SDK's
  ``create_windows_process``).
* **a crash is seen at once**: the server process itself is watched, so when it exits the
  connection closes and a call in flight fails now, even while a descendant still holds the pipes
  (which would otherwise keep the connection open until the call's timeout).
* **nothing outlives the app** (:class:`Guard`): on POSIX a small guard process (this file run as a
  script, stdlib only) watches a pipe from the app and the server's tree; when the app is gone
  (SIGKILL, a crash, SIGTERM: the pipe reaches its end) it stops the server's group and every
  descendant it has seen, as ``close`` would. On Windows the job object does this: it is closed,
  and its members killed, when the app's last handle goes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = [
    "KILL_GRACE_S",
    "MAX_LINE_CHARS",
    "STDERR_TAIL_BYTES",
    "Guard",
    "ProcessTree",
    "StderrTail",
    "stdio_transport",
]

log = logging.getLogger(__name__)

#: How much of a server's stderr is kept (the newest bytes).
STDERR_TAIL_BYTES = 64 * 1024
#: The longest line (one JSON-RPC message) read from a server's stdout.
MAX_LINE_CHARS = 64 * 1024 * 1024
#: How long a server has to exit after its stdin closes, and its processes after SIGTERM.
EXIT_GRACE_S = 2.0
KILL_GRACE_S = 2.0
_WATCH_INTERVAL_S = 0.05
_TREE_REFRESH_EVERY = 20  # watch ticks between two looks at the server's descendants (about 1 s)


class StderrTail:
    """The last ``limit`` bytes a server wrote to stderr; ``total`` counts every byte it wrote."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self._buf += data
        if len(self._buf) > self.limit:
            del self._buf[: len(self._buf) - self.limit]

    def text(self) -> str:
        return self._buf.decode("utf-8", "replace")

    def last_line(self, max_chars: int = 200) -> str:
        lines = [ln.strip() for ln in self.text().splitlines() if ln.strip()]
        return lines[-1][:max_chars] if lines else ""

    def clear(self) -> None:
        self._buf.clear()
        self.total = 0


# -- the process tree ---------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, str]] | None:
    """pid -> (parent pid, start time) of every process, or None where this cannot be read."""
    if sys.platform.startswith("linux"):
        table: dict[int, tuple[int, str]] = {}
        try:
            entries = os.listdir("/proc")
        except OSError:
            return None
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read().decode("ascii", "replace")
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 19:
                table[int(entry)] = (int(fields[1]), fields[19])  # ppid, starttime
        return table
    if sys.platform == "win32":
        return None  # the job object holds the tree
    try:  # macOS and the BSDs
        out = subprocess.run(
            ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "lstart="],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    table = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            table[int(parts[0])] = (int(parts[1]), parts[2].strip())
    return table


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
            return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")
        except OSError:
            return False
    return True


class ProcessTree:
    """A server process and every process it started, so that all of them can be stopped.

    ``refresh()`` records the server's descendants (pid and start time, so a reused pid is never
    signalled); the watcher calls it about once a second and before each stop, so a child whose
    parent has exited is still known.
    """

    def __init__(self) -> None:
        self.pid: int | None = None
        self.started: str | None = None
        self.known: dict[int, str] = {}  # descendant pid -> start time

    def attach(self, pid: int) -> None:
        self.pid = pid
        self.known = {}
        table = _proc_table() if sys.platform != "win32" else None
        self.started = table[pid][1] if table and pid in table else None  # the server's start time

    def _group_is_ours(self) -> bool:
        """Whether the process group named by the server's pid is still the server's: false once that
        pid belongs to another process (then only the known descendants are signalled, one by one)."""
        if self.pid is None or self.started is None:
            return self.pid is not None
        table = _proc_table()
        if table is None or self.pid not in table:
            return True  # the leader is gone: what is left in its group is what it started
        return table[self.pid][1] == self.started

    def refresh(self) -> None:
        if self.pid is None or sys.platform == "win32":
            return
        table = _proc_table()
        if table is None:
            return
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        server_is_ours = self.pid in table and (self.started is None or table[self.pid][1] == self.started)
        roots = [p for p in self.known if p in table and table[p][1] == self.known[p]]
        if server_is_ours:
            roots.append(self.pid)
        seen: set[int] = set()
        while roots:
            parent = roots.pop()
            for child in children.get(parent, ()):
                if child not in seen:
                    seen.add(child)
                    self.known.setdefault(child, table[child][1])
                    roots.append(child)
        # forget the ones that are gone, or whose pid now belongs to another process
        self.known = {p: st for p, st in self.known.items() if p in table and table[p][1] == st}

    def _members(self) -> list[int]:
        return [p for p in self.known if _alive(p)]

    def _signal(self, sig: int) -> None:
        if self.pid is None:
            return
        if self._group_is_ours():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)  # the server's group: it leads it (start_new_session)
        for pid in self.known:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def _group_alive(self) -> bool:
        if self.pid is None or not self._group_is_ours():
            return False
        if _alive(self.pid):
            return True
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        if sys.platform.startswith("linux"):
            # only live members count: an orphan zombie waits for its new parent to reap it
            table = _proc_table() or {}
            return any(_pgid(p) == self.pid and _alive(p) for p in table if p != os.getpid())
        return True

    def stop(self, grace_s: float = KILL_GRACE_S) -> None:
        """SIGTERM the group and every known descendant; SIGKILL what is left after ``grace_s``.
        POSIX only (on Windows the job object does this); blocking, so run it off the loop."""
        if self.pid is None or sys.platform == "win32":
            return
        self.refresh()
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (self._members() or self._group_alive()):
            time.sleep(0.05)
        if self._members() or self._group_alive():
            self._signal(signal.SIGKILL)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


# -- the guard: the tree is stopped when the app is gone -------------------------------------------

#: How often the guard looks at the server's descendants (seconds): /proc on Linux, ``ps`` elsewhere.
GUARD_REFRESH_S = 1.0 if sys.platform.startswith("linux") else 5.0


class Guard:
    """The app's side of a server's guard process (POSIX; a no-op on Windows, where the job object
    covers it). A frozen bundle runs its own executable as the guard (``--mcp-guard PID``).

    The guard holds the read end of a pipe whose only write end is here (close-on-exec, so no other
    child inherits it): when this process ends in any way, the guard reads the end of the pipe and
    stops the server's tree. ``release()`` says the app stopped the server itself."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, pid: int) -> None:
        if sys.platform == "win32" or not sys.executable:
            return
        if getattr(sys, "frozen", False):  # the bundle's executable: app.__main__ runs the guard
            cmd = [sys.executable, "--mcp-guard", str(pid)]
        else:  # a bare interpreter running this file: no site, no app imports, quick to start
            cmd = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--guard", str(pid)]
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C to the app's terminal group does not reach it
                close_fds=True,
            )
        except OSError as exc:
            log.warning("could not start the guard of MCP server process %s: %s", pid, exc)

    def release(self) -> None:
        """The server was stopped by the app: the guard exits without signalling anything."""
        proc, self.proc = self.proc, None
        if proc is None or proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.write(b"q")
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _guard_main(pid: int) -> None:
    """The guard process: until its stdin ends, note the server's descendants; then stop them all."""
    import select

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tree = ProcessTree()
    tree.attach(pid)
    fd = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], GUARD_REFRESH_S)
        if ready:
            try:
                data = os.read(fd, 64)
            except OSError:
                data = b""
            if b"q" in data:
                return  # the app stopped the server itself
            if not data:
                break  # the app is gone
            continue
        tree.refresh()
        if not tree._members() and not tree._group_alive():
            return  # the server and everything it started have exited
    tree.stop()


# -- the transport ------------------------------------------------------------------------------


async def _spawn(command: str, args: list[str], env: dict[str, str], cwd: str | None) -> Any:
    import anyio

    if sys.platform == "win32":  # pragma: no cover - Windows: the SDK's spawn, in a kill-on-close job object
        from mcp.os.win32.utilities import create_windows_process, get_windows_executable_command

        command = await anyio.to_thread.run_sync(get_windows_executable_command, command)
        return await create_windows_process(command, args, env, subprocess.PIPE, cwd)  # type: ignore[arg-type]
    return await anyio.open_process(
        [command, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _parse_line(line: str) -> Any:
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


class _LineTooLong(ValueError):
    pass


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str] | None,
    cwd: str | None,
    *,
    tail: StderrTail,
    tree: ProcessTree,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the (read, write) streams the SDK's ``Client`` speaks over."""
    import anyio
    from mcp.client.stdio import get_default_environment

    process = await _spawn(command, list(args), get_default_environment() | (env or {}), cwd)
    tree.attach(process.pid)
    guard = Guard()
    await anyio.to_thread.run_sync(guard.start, process.pid)
    read_in, read_out = anyio.create_memory_object_stream[Any](0)
    write_in, write_out = anyio.create_memory_object_stream[Any](0)
    exited = anyio.Event()

    async def stdout_reader() -> None:
        buffer = ""
        try:
            async with read_in:
                async for chunk in process.stdout:
                    lines = (buffer + chunk.decode("utf-8", "replace")).split("\n")
                    buffer = lines.pop()
                    if len(buffer) > MAX_LINE_CHARS:
                        buffer = ""
                        await read_in.send(_LineTooLong(f"a line of more than {MAX_LINE_CHARS:,} characters"))
                    for line in lines:
                        if line.strip():
                            await read_in.send(_parse_line(line))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass

    async def stdin_writer() -> None:
        try:
            async with write_out:
                async for message in write_out:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_in.aclose()  # the session sees the connection end instead of waiting

    async def stderr_reader() -> None:
        stderr = getattr(process, "stderr", None)
        if (
            stderr is None
        ):  # pragma: no cover - the SDK's Windows fallback (Popen) process: read it on a thread
            pipe = getattr(getattr(process, "popen", None), "stderr", None)
            while pipe is not None:
                data = await anyio.to_thread.run_sync(pipe.read1, 65536, abandon_on_cancel=True)
                if not data:
                    return
                tail.feed(data)
            return
        with contextlib.suppress(
            anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError
        ):
            async for chunk in stderr:
                tail.feed(chunk)

    async def watcher() -> None:
        """The server itself exiting closes the connection at once (a descendant may hold the pipes)."""
        tick = 0
        while process.returncode is None:
            await anyio.sleep(_WATCH_INTERVAL_S)
            tick += 1
            if tick % _TREE_REFRESH_EVERY == 0:
                tree.refresh()
        exited.set()
        for _ in range(5):  # its last words are in the pipe already: let the reader take them
            await anyio.sleep(0.02)
        await read_in.aclose()

    async def shutdown() -> None:
        write_in.close()
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
        with anyio.move_on_after(EXIT_GRACE_S):
            await exited.wait()
        if sys.platform == "win32":  # pragma: no cover
            from mcp.os.win32.utilities import close_process_job, terminate_windows_process_tree

            await terminate_windows_process_tree(process)
            close_process_job(process)
        else:
            await anyio.to_thread.run_sync(tree.stop)
        with anyio.move_on_after(KILL_GRACE_S):
            await exited.wait()
        for stream in (process.stdout, getattr(process, "stderr", None)):
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.aclose()
        transport = getattr(getattr(process, "_process", None), "_transport", None)
        close = getattr(transport, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()
        for s in (read_in, read_out, write_in, write_out):
            with contextlib.suppress(Exception):
                await s.aclose()

    async with anyio.create_task_group() as tg:
        for fn in (stdout_reader, stdin_writer, stderr_reader, watcher):
            tg.start_soon(fn)
        try:
            yield read_out, write_in
        finally:
            with anyio.CancelScope(shield=True):
                await shutdown()
                await anyio.to_thread.run_sync(guard.release)
            tg.cancel_scope.cancel()


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--guard":
    _guard_main(int(sys.argv[2]))
