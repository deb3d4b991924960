"""The models made over the API (Ollama's ``/api/create``: ``app.server._presets``) as the window's
model picker offers them: a key per made model (``made:<name>``), its label and tooltip, the file
picking it loads (``app.ui.model_bar``; what it sets goes on top of the settings in
``app.ui.window_state.engine_config_for``), and Settings → This model's words on it. The made models
are read off the UI thread (:func:`read_made`: a client may have written a large file) into
``WindowState.made_presets``; everything else here reads that. Qt-free."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "MADE",
    "MADE_POLL_MS",
    "made_base",
    "made_key",
    "made_note",
    "made_picker_items",
    "parse_made_key",
    "read_made",
]

MADE = "made:"  # the picker's key of a made model: "made:<name>"
#: how often the window looks whether the made models' file changed (a server made or deleted one)
MADE_POLL_MS = 2000
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


def made_key(name: str) -> str:
    return MADE + name


def parse_made_key(data: Any) -> str | None:
    """The made model's name a picker key names, else None."""
    return data[len(MADE) :] if isinstance(data, str) and data.startswith(MADE) else None


def read_made(state: Any) -> dict[str, Any]:
    """The made models whose file is there, by name (off the UI thread: it reads the file)."""
    return {p.name: p for p in state.presets.all() if Path(p.base).is_file()}


def made_picker_items(state: Any) -> list[tuple[str, str, str]]:
    """(label, key, tooltip) of each made model, as last read."""
    return [
        (
            f"{p.name} · made",
            made_key(p.name),
            f"Made over the API from {Path(p.base).name}: what it sets (system prompt, "
            "parameters, template) applies over your settings",
        )
        for p in state.made_presets.values()
    ]


def made_base(state: Any, name: str) -> str | None:
    """The file of the made model ``name``, None when it was deleted or its file is gone."""
    preset = state.made_presets.get(name)
    return str(preset.base) if preset is not None else None


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
