"""What the tests of other apps' chats (LM Studio's, Jan's) check alike: the reply of their
``WEATHER`` chats that called ``get_weather`` for Lyon, and an import run from the window's menu."""

from __future__ import annotations

from typing import Any

__all__ = ["check_weather_call", "imported_from_menu"]


def check_weather_call(messages: list[Any]) -> None:
    """``messages[1]`` is the reply that thought, called ``get_weather`` for Lyon and got its
    result, and ``messages[2]`` that result as the tool's message, as Callisto keeps a turn."""
    lead = messages[1]
    assert lead.reasoning == "The user wants the weather." and lead.extra["model_name"] == "qwen3-4b"
    (call,) = lead.tool_calls
    assert (call.call_id, call.name, call.arguments, call.result) == (
        "call-1",
        "get_weather",
        {"city": "Lyon"},
        "12 °C, rain",
    )
    assert (messages[2].tool_call_id, messages[2].name) == ("call-1", "get_weather")


def imported_from_menu(qtbot: Any, w: Any, action: Any, text: str, timeout: int = 30_000) -> str:
    """Run the File menu's ``action`` (named ``text``) in the window ``w``; what the status bar
    says when the import has ended."""
    assert action.text() == text
    action.trigger()
    qtbot.waitUntil(lambda: w.statusBar().currentMessage().startswith("Imported"), timeout=timeout)
    return str(w.statusBar().currentMessage())
