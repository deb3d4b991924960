"""The library's offers of the models other apps keep on this machine (a part of the Models page's
library): *Use LM Studio's models (N)* while LM Studio's models folder holds models the library
does not list (the folder is added, ``app.storage.lmstudio``), *Use Ollama's models (N)* and *Use
Jan's models (N)* while those apps keep models it does not (each linked under its name,
``app.engine.models.ollama_store``, ``jan_store``).
Nothing is copied or downloaded again; each button shows only while it has something to add."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QPushButton

from app.engine.models.library import LINKED_APPS

if TYPE_CHECKING:
    from app.ui.models_page.library import LibraryPane

__all__ = [
    "OtherAppsModels",
    "linked_models_new",
    "lmstudio_models",
    "other_apps_offer",
]


def lmstudio_models(library: Any) -> tuple[Path, int] | None:
    """LM Studio's models folder and how many models it holds, when ``library`` lists none of
    them yet (its folder not added, not inside one that is)."""
    from app.storage.lmstudio import lmstudio_models_folder

    folder = lmstudio_models_folder()
    if folder is None:
        return None
    folder = folder.resolve()
    listed = [Path(f).resolve() for f in (library.models_dir, *library.folders())]
    if any(folder == f or f in folder.parents for f in listed):
        return None
    try:
        n = sum(1 for p in folder.rglob("*.gguf") if "mmproj" not in p.name.lower())
    except OSError:
        return None
    return (folder, n) if n else None


def linked_models_new(library: Any, app: str) -> list[Any]:
    """The models ``app`` ("ollama", "jan") keeps that ``library`` does not list yet (not linked
    in its folder for them)."""
    from app.engine.models.ollama_store import linked

    if app == "ollama":
        from app.engine.models.ollama_store import ollama_models, ollama_models_dir

        root = ollama_models_dir()
        models = ollama_models(root) if root is not None else []
    else:
        from app.engine.models.jan_store import jan_models
        from app.storage.jan import jan_data_folder

        data = jan_data_folder(holding="llamacpp/models")
        models = jan_models(data) if data is not None else []
    return [m for m in models if not linked(m, library.links(app))]


def _made_from_ollama(models: list[Any], files: list[Any], file_ids: list[str]) -> str:
    """The made models Ollama's models' Modelfiles ask for (a system prompt, parameters,
    messages: ``app.server.made_from_ollama``), kept where the window's server keeps its made
    models (the picker reads them from there); what the status line adds about them."""
    from app.server import PresetStore, ServerConfig, default_presets_path, made_from_ollama

    try:
        done = made_from_ollama(
            PresetStore(default_presets_path()),
            list(zip(models, files, strict=True)),
            max_tokens_limit=ServerConfig().max_tokens_limit,
            file_ids=file_ids,
        )
    except OSError as exc:  # (the made models' file cannot be written: a full disk)
        return f" Their Modelfile settings could not be kept: {exc.strerror or exc}."
    said = ""
    if done.made:
        listed = ", ".join(done.made[:4]) + (" …" if len(done.made) > 4 else "")
        said += f" With their Modelfile settings (system prompt, parameters) as made models: {listed}."
    if done.left:
        said += f" Not taken: {done.left[0]}."
    return said


def other_apps_offer(library: Any) -> str | None:
    """What the first-contact hint offers when other apps keep models ``library`` does not list
    ("Use your LM Studio and Ollama models"), or None."""
    found = [("LM Studio", lmstudio_models(library))] + [
        (name, linked_models_new(library, app)) for app, name in LINKED_APPS.items()
    ]
    apps = [a for a, models in found if models]
    if not apps:
        return None
    listed = apps[0] if len(apps) == 1 else f"{', '.join(apps[:-1])} and {apps[-1]}"
    return f"Use your {listed} models"


class OtherAppsModels:
    """The buttons and what they do; :meth:`offer` after each scan shows or hides them."""

    def __init__(self, pane: LibraryPane) -> None:
        self.pane = pane
        self.lmstudio_button = QPushButton("Use LM Studio's models")
        self.lmstudio_button.setObjectName("useLmstudioModels")
        self.lmstudio_button.clicked.connect(self.use_lmstudio_models)
        self.linked_buttons: dict[str, QPushButton] = {}
        for app, name in LINKED_APPS.items():
            button = QPushButton(f"Use {name}'s models")
            button.setObjectName(f"use{name}Models")
            button.clicked.connect(lambda _=False, a=app: self.use_linked(a))
            self.linked_buttons[app] = button
        self.ollama_button, self.jan_button = self.linked_buttons["ollama"], self.linked_buttons["jan"]
        self.buttons = [self.lmstudio_button, *self.linked_buttons.values()]
        for b in self.buttons:
            b.hide()

    def offer(self) -> None:
        self._offer_lmstudio()
        for app in LINKED_APPS:
            self._offer_linked(app)

    def _lmstudio_models(self) -> tuple[Path, int] | None:
        return lmstudio_models(self.pane.page.manager.library)

    def _offer_lmstudio(self) -> None:
        found = self._lmstudio_models()
        self.lmstudio_button.setVisible(found is not None)
        if found is not None:
            folder, n = found
            self.lmstudio_button.setText(f"Use LM Studio's models ({n})")
            self.lmstudio_button.setToolTip(
                f"List the models LM Studio downloaded ({folder}) where they are: nothing is copied or moved"
            )

    def use_lmstudio_models(self) -> bool:
        """*Use LM Studio's models*: its folder added to the library (listed in place)."""
        found = self._lmstudio_models()
        if found is None:
            return False
        try:
            self.pane.page.manager.library.add_folder(found[0])
        except Exception as exc:  # noqa: BLE001 - LibraryError, OSError: said
            self.pane.page.show_status(str(exc), error=True)
            return False
        self.pane.page.show_status(
            f"LM Studio's models are listed where they are ({found[0]}); nothing was copied."
        )
        self.pane.page.refresh_library()
        return True

    def _offer_linked(self, app: str) -> None:
        new = linked_models_new(self.pane.page.manager.library, app)
        button = self.linked_buttons[app]
        button.setVisible(bool(new))
        if new:
            button.setText(f"Use {LINKED_APPS[app]}'s models ({len(new)})")
            names = ", ".join(m.name for m in new[:6]) + (" …" if len(new) > 6 else "")
            button.setToolTip(
                f"List the models {LINKED_APPS[app]} keeps ({names}) where they are: linked, nothing copied or downloaded"
            )

    def use_linked(self, app: str) -> bool:
        """*Use Ollama's models* / *Use Jan's models*: each linked into the library's folder for
        the app under its name."""
        from app.engine.models.ollama_store import link_ollama_models

        library = self.pane.page.manager.library
        new = linked_models_new(library, app)
        if not new:
            return False
        done, failed = link_ollama_models(new, library.links(app))
        said = f"{LINKED_APPS[app]}'s models are listed where they are ({len(done)}); nothing was copied."
        if app == "ollama":
            ids = [m.name for m in self.pane.models] + [p.stem for p in done]
            said += _made_from_ollama([m for m in new if m.name not in dict(failed)], done, ids)
        if failed:
            said += f" Could not link {failed[0][0]}: {failed[0][1]}"
        self.pane.page.show_status(said, error=bool(failed) and not done)
        self.pane.page.refresh_library()
        return bool(done)

    def use_all(self) -> bool:
        """The first-contact hint's offer: the models of LM Studio, Ollama and Jan, listed in place."""
        said: list[str] = []
        if self.use_lmstudio_models():
            said.append(self.pane.page.status_label.text())
        for app in LINKED_APPS:
            if self.use_linked(app):
                said.append(self.pane.page.status_label.text())
        if len(said) > 1:
            self.pane.page.show_status(" ".join(said))
        return bool(said)
