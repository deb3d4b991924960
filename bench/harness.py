"""The benchmark harness: result rows, the machine they came from, medians, the table.

A row is ``{"name", "value", "unit", "goal", "meets", "machine", "date"}`` (see :class:`Row`).
Every figure module returns rows through :func:`row`; ``python -m bench`` prints them with
:func:`format_table` and writes them with :func:`write_results`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ROW_KEYS",
    "Row",
    "format_table",
    "interleave",
    "machine_info",
    "median",
    "read_results",
    "row",
    "write_results",
]

ROW_KEYS = ("name", "value", "unit", "goal", "meets", "machine", "date")


@dataclass(frozen=True)
class Row:
    """One figure. ``goal`` is a readable comparison such as ``">= 0.97"``; ``meets`` says
    whether ``value`` satisfies it (None value: the figure could not be measured; meets False)."""

    name: str
    value: float | None
    unit: str
    goal: str
    meets: bool
    machine: str
    date: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda v, g: v >= g,
    "<=": lambda v, g: v <= g,
    ">": lambda v, g: v > g,
    "<": lambda v, g: v < g,
}


def meets_goal(value: float | None, goal: str) -> bool:
    """``goal`` is ``"<op> <number>"`` (op one of >=, <=, >, <)."""
    if value is None:
        return False
    op, _, number = goal.strip().partition(" ")
    if op not in _OPS:
        raise ValueError(f"goal {goal!r} must read '<op> <number>' with op one of {sorted(_OPS)}")
    return _OPS[op](float(value), float(number))


_MACHINE: str | None = None


def machine_info() -> str:
    """CPU model, logical cores, RAM and OS, e.g. ``"AMD EPYC 7B13, 2 cores, 7.8 GiB RAM, Linux 6.1"``."""
    global _MACHINE
    if _MACHINE is not None:
        return _MACHINE
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpu = cpu or platform.processor() or platform.machine() or "unknown CPU"
    cores = os.cpu_count() or 0
    try:
        import psutil

        ram = f"{psutil.virtual_memory().total / 2**30:.1f} GiB RAM"
    except Exception:  # noqa: BLE001 - psutil is optional for the harness itself
        ram = "RAM unknown"
    osname = f"{platform.system()} {platform.release()}".strip()
    _MACHINE = f"{cpu}, {cores} cores, {ram}, {osname}, Python {platform.python_version()}"
    return _MACHINE


def row(
    name: str,
    value: float | None,
    unit: str,
    goal: str,
    *,
    machine: str | None = None,
    date: str | None = None,
) -> Row:
    """A row whose ``meets`` is computed from ``value`` and ``goal``."""
    if not name:
        raise ValueError("a row needs a name")
    v = None if value is None else float(value)
    return Row(
        name=name,
        value=v,
        unit=unit,
        goal=goal,
        meets=meets_goal(v, goal),
        machine=machine or machine_info(),
        date=date or _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
    )


def median(values: Iterable[float]) -> float:
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("median of no values")
    return statistics.median(vals)


def interleave(fns: Sequence[Callable[[], float]], pairs: int) -> list[list[float]]:
    """Run ``fns`` round-robin ``pairs`` times (a, b, a, b, ...; the order alternates each
    round so neither side always runs first) and return each one's list of results."""
    out: list[list[float]] = [[] for _ in fns]
    for i in range(pairs):
        order = range(len(fns)) if i % 2 == 0 else reversed(range(len(fns)))
        for j in order:
            out[j].append(float(fns[j]()))
    return out


def _fmt_value(v: float | None) -> str:
    if v is None:
        return "n/a"
    if v == 0 or 0.01 <= abs(v) < 1e6:
        return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{v:.3g}"


def format_table(rows: Sequence[Row | dict[str, Any]]) -> str:
    """A Markdown table of the rows (the README shows it)."""
    dicts = [r.to_dict() if isinstance(r, Row) else dict(r) for r in rows]
    lines = ["| figure | value | unit | goal | meets |", "|---|---:|---|---|:---:|"]
    for d in dicts:
        mark = "yes" if d["meets"] else "**no**"
        name = str(d["name"]).replace("|", "\\|")
        lines.append(f"| {name} | {_fmt_value(d['value'])} | {d['unit']} | {d['goal']} | {mark} |")
    return "\n".join(lines)


def write_results(rows: Sequence[Row], path: str | os.PathLike[str]) -> Path:
    """Write ``rows`` as a JSON list (atomically: a temp file, then rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = [r.to_dict() for r in rows]
    for d in data:
        if tuple(d) != ROW_KEYS:
            raise ValueError(f"row {d.get('name')!r} has keys {tuple(d)}, expected {ROW_KEYS}")
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, p)
    return p


def read_results(path: str | os.PathLike[str]) -> list[Row]:
    """Read rows back (checks each has exactly the row keys)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of rows")
    rows = []
    for d in data:
        if not isinstance(d, dict) or set(d) != set(ROW_KEYS):
            raise ValueError(f"{path}: a row must have exactly the keys {ROW_KEYS}, got {d!r}")
        rows.append(Row(**{k: d[k] for k in ROW_KEYS}))
    return rows
