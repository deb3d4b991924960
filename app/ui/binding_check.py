"""A check of the Qt binding the window runs on.

PySide6 6.12.0 on Python 3.11 gives back one reference to ``None`` that it never took on every
call of a Qt method that returns nothing (``label.setText``, ``widget.update``, ...). ``None``'s
count falls by one a call, and the process dies ("Fatal Python error: none_dealloc: deallocating
None") when it reaches zero: after about 5,000 calls in a small script, after a long enough session
in the window, or when the interpreter exits. PySide6 6.11 does not do it, and from Python 3.12 on
``None`` is immortal, so the same calls are harmless there. The project keeps PySide6 below 6.12 on
Python 3.11 (``pyproject.toml``, ``constraints.txt``); :func:`releases_none` tells a person whose
environment has the pair anyway (a ``pip install`` outside the project's pins), at start, in the
log and on stderr, before the window dies of it.
"""

from __future__ import annotations

import sys

__all__ = ["binding_problem", "releases_none"]


def releases_none(calls: int = 200) -> bool:
    """Whether ``calls`` calls of a Qt method that returns nothing lower ``None``'s reference
    count (by at least half as many: other code may take or drop a reference meanwhile)."""
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(calls):
        probe.setObjectName("probe")
    return before - sys.getrefcount(None) >= calls // 2


def binding_problem() -> str | None:
    """What to tell the person when the binding releases ``None`` (None when it does not)."""
    if not releases_none():
        return None
    import PySide6

    return (
        f"PySide6 {PySide6.__version__} on Python {sys.version.split()[0]} releases a reference to "
        "None on every Qt call that returns nothing, and the window will crash when the count runs "
        "out. Install the versions the project pins (pip install -c constraints.txt -e .; "
        "PySide6-Essentials below 6.12 on Python 3.11) or run it on Python 3.12 or later."
    )
