"""The models made over the API (Ollama's ``/api/create``: ``app.server._presets``) as the window's
model picker offers them: a key per made model (``made:<name>``), its label and tooltip, and the file
picking it loads (``app.ui.model_bar``; what it sets goes on top of the settings in
``app.ui.window_state.engine_config_for``). Qt-free."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "MADE",
    "made_base",
    "made_key",
    "made_note",
    "made_picker_items",
    "parse_made_key",
    "startup_made",
]

#: what a made model sets, in words (``Preset.chat_values``' keys)
_WORDS = {
    "system_prompt": "system prompt",
    "opening": "opening messages",
    "sampling": "sampler values",
    "max_tokens": "reply length",
    "n_ctx": "context length",
    "stop": "stop strings",
    "chat_template": "chat template",
}

MADE = "made:"  # the picker's key of a made model: "made:<name>"


def made_key(name: str) -> str:
    return MADE + name


def parse_made_key(data: Any) -> str | None:
    """The made model's name a picker key names, else None."""
    return data[len(MADE) :] if isinstance(data, str) and data.startswith(MADE) else None


def made_picker_items(state: Any) -> list[tuple[str, str, str]]:
    """(label, key, tooltip) of each made model whose file is there, as the store lists them."""
    try:
        presets = state.presets.all()
    except Exception:  # noqa: BLE001 - an unreadable file: the Models page's pane says why
        return []
    return [
        (
            f"{p.name} · made",
            made_key(p.name),
            f"Made over the API from {Path(p.base).name}: what it sets (system prompt, "
            "parameters, template) applies over your settings",
        )
        for p in presets
        if Path(p.base).is_file()
    ]


def made_base(state: Any, name: str) -> str | None:
    """The file of the made model ``name``, None when it was deleted or its file is gone."""
    try:
        preset = state.presets.get(name)
    except Exception:  # noqa: BLE001 - an unreadable file
        return None
    if preset is None or not Path(preset.base).is_file():
        return None
    return str(preset.base)


def startup_made(state: Any, path: str) -> str | None:
    """The made model the window opens on with the file ``path``: the one it last chatted with,
    when that was over this file and is still there; else None (the file as it is)."""
    name = state.settings.model.last_made
    base = made_base(state, name) if name else None
    if base is None or state.made_preset(name, path) is None:
        return None
    return str(name)


def made_note(state: Any) -> str | None:
    """Settings → This model's words on the made model in use (what it sets wins over the values
    there and the global ones); None when the chat uses a file as it is."""
    import html

    info = state.model_info
    preset = state.made_preset(state.made, info.path if info is not None else None)
    if preset is None:
        return None
    sets = [_WORDS.get(k, k) for k in preset.chat_values()]
    name = html.escape(preset.name)
    if not sets:
        return f"You are chatting with <b>{name}</b>, made over the API; it sets nothing of its own."
    return (
        f"You are chatting with <b>{name}</b>, made over the API: its {', '.join(sets)} "
        "win over these values and the global ones."
    )
