"""The words of the window's tool-format badge, beside the model picker: how the loaded model's
tool calls are read (the format Callisto recognised, the one chosen, off, or a remote engine's
way). Qt-free."""

from __future__ import annotations

from typing import Any

__all__ = ["format_badge_text"]


def _short_label(label: str) -> str:
    """ "Hermes JSON (Qwen2.5, Qwen3, ...)" -> "Hermes JSON": the badge stays short."""
    return label.split(" (", 1)[0].strip() or label


def format_badge_text(state: Any) -> tuple[str, str]:
    """The badge's words and tooltip for the loaded model (plain words, no setting keys)."""
    info = state.model_info
    if info is None:
        return "", ""
    if info.remote is not None:
        how = {
            "api": "API tools",
            "callisto": "Callisto parsing",
            "auto": "tools by the engine's template",
        }
        return (
            f"Remote: {info.remote}",
            f"{info.name} on the remote engine {info.remote}; tool calls: {how.get(info.remote_mode or '', '—')}.",
        )
    eff = state.config_for(info.path).tool_format
    if eff == "none":
        return "Tools off", "You turned tool calling off for this model (Settings → Tools)."
    if eff == "auto":
        if info.detected_format:
            label = info.detected_label or info.detected_format
            return (
                f"Tools: {_short_label(label)} (auto)",
                f"Callisto recognised this model's tool-call format: {label}.",
            )
        return (
            "No tools",
            "This model's chat template shows no tool-call format Callisto knows; it can still chat.",
        )
    from app.engine.formats import FORMATS

    fmt = FORMATS.get(eff)
    label = (fmt.label if fmt is not None else "") or eff
    return f"Tools: {_short_label(label)} (set)", f"You chose this tool-call format: {label}."
