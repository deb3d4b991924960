"""The one source of the settings while the app runs: :class:`SettingsStore` (no Qt).

Every part of the window (its pages, its dialogs, the worker's config) reads the settings through
one store and hears about changes from it (:meth:`SettingsStore.subscribe`); no part keeps a copy
that it saves later. A change is made in one of three ways, each saved at once and then told to
every subscriber with the names of the sections that changed:

* :meth:`SettingsStore.edit`: ``with store.edit() as s: s.server.port = 9000`` (a page's own field);
* :meth:`SettingsStore.apply`: a dialog's result, merged as the edits made in the dialog
  (``base``: the settings the dialog opened with), so that what another part changed while the
  dialog was open is kept;
* :meth:`SettingsStore.replace`: a whole new settings object (its differences are the change);
* :meth:`SettingsStore.commit`: the settings object was changed in place: what differs from the
  last commit is the change.

The :class:`~app.storage.settings.Settings` object is never replaced: its sections are, so the
object a part was handed always shows the current values.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from app.storage.settings import Settings, save_settings

__all__ = ["SettingsStore", "edits_between"]

log = logging.getLogger(__name__)

_MISSING = object()

Listener = Callable[[frozenset[str]], None]


def edits_between(base: Any, new: Any) -> dict[tuple[str, ...], Any]:
    """The leaves that differ between two dumps: path -> new value (``_MISSING``: removed).

    Dicts are compared key by key (a removed key is an edit); lists and scalars as whole values.
    """
    out: dict[tuple[str, ...], Any] = {}

    def walk(path: tuple[str, ...], a: Any, b: Any) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for k in dict.fromkeys([*a, *b]):
                walk((*path, k), a.get(k, _MISSING), b.get(k, _MISSING))
        elif a != b or type(a) is not type(b):
            out[path] = b

    walk((), base, new)
    return out


def _put(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for part in path[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    if value is _MISSING:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value


class SettingsStore:
    """Holds the app's one :class:`Settings`; saves every change and tells the subscribers.

    ``save``: how the settings are written (``save_settings`` to the settings file); a failure is
    given to ``on_save_error`` (a sentence) and never raised: the change is kept in memory.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        save: Callable[[Settings], object] | None = save_settings,
        on_save_error: Callable[[str], None] | None = None,
    ) -> None:
        self._settings = settings if settings is not None else Settings()
        self._save = save
        self._listeners: list[Listener] = []
        self.on_save_error = on_save_error
        self.saves = 0  # how many times the settings were written (tests count them)
        self._snapshot = self._settings.model_dump(mode="python")  # as last told

    @property
    def settings(self) -> Settings:
        """The current settings (always the same object; read it, change it through the store)."""
        return self._settings

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(sections)`` after each change; returns the function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    # -- changing ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def edit(self) -> Iterator[Settings]:
        """Change the settings in place; saved and told when the block ends (also with no change:
        a part that asks to save is saved)."""
        yield self._settings
        self.commit()

    def apply(self, new: Settings, *, base: Settings | None = None) -> frozenset[str]:
        """Take the edits ``base`` -> ``new`` (a dialog's) onto the current settings; with no
        ``base``, ``new`` as a whole. Returns the sections that changed."""
        if new is self._settings:  # changed in place by its holder
            return self.commit()
        current = self._settings.model_dump(mode="python")
        if base is None:
            merged = new.model_dump(mode="python")
        else:
            merged = self._settings.model_dump(mode="python")
            for path, value in edits_between(
                base.model_dump(mode="python"), new.model_dump(mode="python")
            ).items():
                _put(merged, path, value)
        extra = {k: v for k, v in (new.model_extra or {}).items() if k not in merged}
        result = Settings.model_validate({**extra, **merged})  # raises ValueError for a bad value
        for name in {path[0] for path in edits_between(current, result.model_dump(mode="python"))}:
            if name in type(result).model_fields:
                self._set_section(name, getattr(result, name))
        return self.commit()

    replace = apply

    def _set_section(self, name: str, value: Any) -> None:
        """Set one section; a section object a part holds (``settings.server``) stays current."""
        old = getattr(self._settings, name)
        if isinstance(old, BaseModel) and type(old) is type(value):
            for field_name in type(value).model_fields:
                if getattr(old, field_name) != getattr(value, field_name):
                    setattr(old, field_name, getattr(value, field_name))
            return
        setattr(self._settings, name, value)

    def save(self) -> bool:
        """Write the settings now; False (and ``on_save_error``) when they could not be written."""
        if self._save is None:
            return True
        try:
            self._save(self._settings)
        except OSError as exc:  # SettingsSaveError says what failed
            log.warning("settings not saved: %s", exc)
            if self.on_save_error is not None:
                self.on_save_error(str(exc))
            return False
        self.saves += 1
        return True

    def commit(self) -> frozenset[str]:
        """Save the settings, and tell the subscribers which sections changed since the last commit
        (a part that changed its section in place, then asked to save). Returns those sections."""
        now = self._settings.model_dump(mode="python")
        changed = frozenset(path[0] for path in edits_between(self._snapshot, now))
        self._snapshot = now
        self.save()
        if changed:
            for listener in list(self._listeners):
                listener(changed)
        return changed
