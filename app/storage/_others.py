"""What reading other apps' chats shares (``lmstudio``, ``openwebui``): their times, and a chat's
title when the app kept none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.storage.history import MessageRecord

__all__ = ["chat_title", "epoch_seconds"]


def epoch_seconds(value: Any) -> float | None:
    """A time another app wrote (milliseconds, or seconds since 1970) as seconds; None for none
    or nonsense."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value <= 0:
        return None
    seconds = value / 1000 if value > 1e11 else float(value)
    return seconds if seconds < 4e9 else None  # (after 2096: not a time)


def chat_title(name: Any, messages: Sequence[MessageRecord], fallback: str) -> str:
    """The chat's title: the ``name`` the app kept (its white space folded), else its first
    question's first 60 characters, else ``fallback``."""
    if isinstance(name, str) and name.strip():
        return " ".join(name.split())
    first = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    return " ".join(first.split())[:60] or fallback
