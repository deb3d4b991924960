"""The library's offers of the models other apps keep on this machine (a part of the Models page's
library): *Use LM Studio's models (N)* while LM Studio's models folder holds models the library
does not list (the folder is added, ``app.storage.lmstudio``), *Use Ollama's models (N)* while
Ollama keeps models it does not (each linked under its name, ``app.engine.models.ollama_store``).
Nothing is copied or downloaded again; each button shows only while it has something to add."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QPushButton

if TYPE_CHECKING:
    from app.ui.models_page.library import LibraryPane

__all__ = ["OtherAppsModels", "lmstudio_models", "ollama_models_new", "other_apps_offer"]


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


def ollama_models_new(library: Any) -> list[Any]:
    """Ollama's models ``library`` does not list yet (not linked in its ``ollama`` folder)."""
    from app.engine.models.ollama_store import linked, ollama_models, ollama_models_dir

    root = ollama_models_dir()
    if root is None:
        return []
    return [m for m in ollama_models(root) if not linked(m, library.ollama_links)]


def other_apps_offer(library: Any) -> str | None:
    """What the first-contact hint offers when other apps keep models ``library`` does not list
    ("Use your LM Studio and Ollama models"), or None."""
    apps = [
        a
        for a, found in (("LM Studio", lmstudio_models(library)), ("Ollama", ollama_models_new(library)))
        if found
    ]
    return f"Use your {' and '.join(apps)} models" if apps else None


class OtherAppsModels:
    """The two buttons and what they do; :meth:`offer` after each scan shows or hides them."""

    def __init__(self, pane: LibraryPane) -> None:
        self.pane = pane
        self.lmstudio_button = QPushButton("Use LM Studio's models")
        self.lmstudio_button.setObjectName("useLmstudioModels")
        self.lmstudio_button.clicked.connect(self.use_lmstudio_models)
        self.ollama_button = QPushButton("Use Ollama's models")
        self.ollama_button.setObjectName("useOllamaModels")
        self.ollama_button.clicked.connect(self.use_ollama_models)
        self.buttons = [self.lmstudio_button, self.ollama_button]
        for b in self.buttons:
            b.hide()

    def offer(self) -> None:
        self._offer_lmstudio()
        self._offer_ollama()

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

    def _ollama_models(self) -> list[Any]:
        return ollama_models_new(self.pane.page.manager.library)

    def _offer_ollama(self) -> None:
        new = self._ollama_models()
        self.ollama_button.setVisible(bool(new))
        if new:
            self.ollama_button.setText(f"Use Ollama's models ({len(new)})")
            names = ", ".join(m.name for m in new[:6]) + (" …" if len(new) > 6 else "")
            self.ollama_button.setToolTip(
                f"List the models Ollama keeps ({names}) where they are: linked, nothing copied or downloaded"
            )

    def use_ollama_models(self) -> bool:
        """*Use Ollama's models*: each linked into the library's ``ollama`` folder under its name."""
        from app.engine.models.ollama_store import link_ollama_models

        new = self._ollama_models()
        if not new:
            return False
        done, failed = link_ollama_models(new, self.pane.page.manager.library.ollama_links)
        said = f"Ollama's models are listed where they are ({len(done)}); nothing was copied."
        if failed:
            said += f" Could not link {failed[0][0]}: {failed[0][1]}"
        self.pane.page.show_status(said, error=bool(failed) and not done)
        self.pane.page.refresh_library()
        return bool(done)

    def use_all(self) -> bool:
        """The first-contact hint's offer: LM Studio's models and Ollama's, both listed in place."""
        lmstudio = self.use_lmstudio_models()
        said = self.pane.page.status_label.text() if lmstudio else ""
        ollama = self.use_ollama_models()
        if lmstudio and ollama:
            self.pane.page.show_status(f"{said} {self.pane.page.status_label.text()}")
        return lmstudio or ollama
