"""Jan's chats written as Jan keeps them (``<data>/threads/<id>/thread.json`` and
``messages.jsonl``), made for the tests that bring them in: a message's parts, a message, a
thread folder."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["JAN_MADE", "jan_message", "jan_text", "jan_thread", "write_jan_thread"]

JAN_MADE = 1_765_000_000_000  # when the first message was written, in Jan's milliseconds


def jan_text(value: str, kind: str = "text") -> dict:
    """A ``text`` (or ``reasoning``) part."""
    return {"type": kind, "text": {"value": value, "annotations": []}}


def jan_message(role: str, *parts: dict | str, n: int = 0, thread: str = "t1", **more) -> dict:
    """A message of Jan's ``messages.jsonl``: its parts (a string is a text part), written ``n``
    seconds after :data:`JAN_MADE`; ``metadata``, ``id``, ``tool_call_id`` in ``more``."""
    content = [jan_text(p) if isinstance(p, str) else p for p in parts]
    return {
        "id": more.pop("id", f"m{n}"),
        "object": "thread.message",
        "thread_id": thread,
        "role": role,
        "content": content,
        "status": "ready",
        "created_at": JAN_MADE + n * 1000,
        "completed_at": JAN_MADE + n * 1000,
        **more,
    }


def jan_thread(title: str, model: str = "qwen3-4b", instructions: str | None = None, **metadata) -> dict:
    """A ``thread.json``: its title, its model and instructions, its ``metadata``."""
    assistant = {"id": "jan", "name": "Jan", "model": {"id": model, "engine": "llamacpp"}}
    if instructions is not None:
        assistant["instructions"] = instructions
    return {
        "id": "t1",
        "object": "thread",
        "title": title,
        "assistants": [assistant],
        "created": JAN_MADE / 1000 + 999,  # (Jan rewrites it on every change: not when it was made)
        "updated": JAN_MADE / 1000 + 999,
        "metadata": metadata,
    }


def write_jan_thread(data: Path, name: str, thread: dict | None, messages: list[dict | str]) -> Path:
    """Write a chat under Jan's data folder ``data``: its ``thread.json`` (none when None) and its
    messages, one a line (a string is written as it is: a broken line)."""
    folder = data / "threads" / name
    folder.mkdir(parents=True)
    if thread is not None:
        (folder / "thread.json").write_text(json.dumps(thread), encoding="utf-8")
    lines = [m if isinstance(m, str) else json.dumps(m) for m in messages]
    (folder / "messages.jsonl").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return folder
