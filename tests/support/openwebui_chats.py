"""Open WebUI chat exports written as Open WebUI writes them (a list of ``{"title", "created_at",
"updated_at", "pinned", "chat": {"history": {"messages": {...}, "currentId"}, ...}}``), made for the
tests that import them: messages as a tree, by id, each with its parent and children."""

from __future__ import annotations

from typing import Any

__all__ = ["owui_chat", "owui_message"]


def owui_message(mid: str, role: str, content: str, parent: str | None, **more: Any) -> dict[str, Any]:
    return {"id": mid, "parentId": parent, "childrenIds": [], "role": role, "content": content, **more}


def owui_chat(
    title: str, messages: list[dict[str, Any]], current: str, *, created: int, **more: Any
) -> dict[str, Any]:
    """An export entry: ``messages`` linked to their parents' ``childrenIds``, ``current`` shown."""
    tree = {m["id"]: dict(m, childrenIds=[]) for m in messages}
    for m in tree.values():
        if m["parentId"] in tree:
            tree[m["parentId"]]["childrenIds"].append(m["id"])
    chat = {
        "id": "",
        "title": title,
        "models": ["llama3.2:3b"],
        "history": {"messages": tree, "currentId": current},
        "messages": list(tree.values()),
        "tags": [],
        "timestamp": created * 1000,
        "files": [],
    }
    return {
        "id": f"chat-{created}",
        "title": title,
        "chat": chat,
        "created_at": created,
        "updated_at": created + 60,
        **more,
    }
