"""The one rule for which tool-call family a model's templates use.

The session (at load), ``python -m app inspect``, the library and the Models page, and the
server all ask :func:`detect_tool_format`: the ``tool_use`` template first, then the chat
template, each rendered in the sandbox with the model's own bos/eos text. A model without a
template of its own (Callisto's fallback ChatML) has no format. Results are cached by the
templates' text, so asking again is free.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["DETECT_SECONDS", "detect_tool_format"]

DETECT_SECONDS = 5.0  # all the renders of one detection together


def detect_tool_format(
    chat_template: str | None,
    tool_use_template: str | None = None,
    *,
    bos_token: str | None = "",
    eos_token: str | None = "",
) -> str | None:
    """The family name, or None when the templates render no call a family reads. Never raises."""
    return _detect(chat_template or "", tool_use_template or "", bos_token or "", eos_token or "")


@lru_cache(maxsize=64)
def _detect(chat_template: str, tool_use_template: str, bos: str, eos: str) -> str | None:
    if not chat_template.strip() and not tool_use_template.strip():
        return None
    from app.engine.formats import detect_template
    from app.engine.templates import render_deadline

    try:
        # All of detection's renders share one deadline: a hostile template costs that, not the
        # per-render limit times the dozen renders detection makes.
        with render_deadline(DETECT_SECONDS):
            return detect_template(
                chat_template, bos_token=bos, eos_token=eos, tool_use=tool_use_template or None
            )
    except Exception:  # noqa: BLE001 - detection must never break loading or listing a model
        return None
