"""Try a load with this machine's memory out of reach: a Python process of its own (``python -c``)
runs ``setup``, then ``attempt`` with its address space bound (``RLIMIT_AS``) to what it maps
then plus ``headroom_mib``, then ``after`` with the bound lifted. llama.cpp's allocations fail for
real under the bound, as on a machine whose memory is short, on any machine (Linux only: macOS and
Windows do not enforce RLIMIT_AS).

:func:`refusals_under_memory_bound` returns the ``ModelLoadError`` s the attempt raised, as
printed; it asserts that the process ended well and that ``after`` ran (nothing was left broken)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["refusals_under_memory_bound"]

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = """
import resource, sys
import llama_cpp  # noqa: F401 - the library is mapped before the bound
from app.engine.errors import ModelLoadError
{setup}
mapped = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (mapped + {headroom} * 2**20, resource.RLIM_INFINITY))
try:
{attempt}
except ModelLoadError as exc:
    print("refused:", exc)
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
{after}
print("after: done")
"""


def refusals_under_memory_bound(
    setup: str, attempt: str, after: str, *args: str, headroom_mib: int
) -> list[str]:
    """The ``refused: …`` lines ``attempt`` printed under the bound (``args``: the script's argv)."""
    script = _SCRIPT.format(
        setup=textwrap.dedent(setup),
        attempt=textwrap.indent(textwrap.dedent(attempt), "    "),
        after=textwrap.dedent(after),
        headroom=int(headroom_mib),
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines and lines[-1] == "after: done", proc.stdout
    return [line.removeprefix("refused: ") for line in lines if line.startswith("refused: ")]
