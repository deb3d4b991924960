"""Issue 29, N21: under a memory limit (``ulimit -v``) a sound GGUF was reported as
"corrupt GGUF metadata: MemoryError". It is out of memory, and says so.

A real subprocess reads a real tiny GGUF (with a large string array, so that reading it needs
memory) under RLIMIT_AS set a little above what it already uses, raised step by step until the
read succeeds: every failure on the way is "out of memory", never "corrupt"."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHILD = r"""
import json, resource, sys
from app.engine.models.metadata import GGUFMetadataError, GGUFOutOfMemoryError, read_metadata

read_metadata(sys.argv[1])  # every lazy import done before the limit
def used():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmSize"))
seen = []
for mb in range(1, 129):
    resource.setrlimit(resource.RLIMIT_AS, (used() + mb * 1024 * 1024, resource.RLIM_INFINITY))
    try:
        read_metadata(sys.argv[2])
    except GGUFMetadataError as exc:
        seen.append([type(exc).__name__, isinstance(exc, GGUFOutOfMemoryError), exc.problem])
        continue
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    seen.append(["ok", False, ""])
    break
print(json.dumps(seen))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_n21_a_sound_gguf_read_out_of_memory_says_out_of_memory(tiny_gguf):
    small = tiny_gguf()
    big = tiny_gguf(extra_metadata={"callisto.test.words": [f"word{i}" for i in range(300_000)]})
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(small), str(big)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    seen = json.loads(out.stdout)
    assert seen[-1][0] == "ok"  # with room enough, the file reads: it is sound
    failures = seen[:-1]
    assert failures  # the first limits were too tight to read it
    for kind, out_of_memory, problem in failures:
        assert (kind, out_of_memory) == ("GGUFOutOfMemoryError", True), problem
        assert "out of memory" in problem and "corrupt" not in problem
