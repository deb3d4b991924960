"""Drag events for tests, made as the Qt binding takes them: PySide6 6.11 takes a ``QPoint`` for a
drag's enter and move events where 6.12 takes a ``QPointF`` (a drop takes a ``QPointF`` in both).
The project runs 6.11 on Python 3.11 and may run 6.12 on 3.12 (``app.ui.binding_check``)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QPointF

__all__ = ["drag_event"]


def drag_event(kind: type, pos: QPoint | QPointF, *args: Any) -> Any:
    """``kind(pos, actions, mime, buttons, modifiers)`` with ``pos`` as the binding wants it."""
    point = QPointF(pos)
    try:
        return kind(point, *args)
    except TypeError:  # 6.11's enter and move events: a QPoint
        return kind(point.toPoint(), *args)
