"""The one source of the settings (issue 28, Must show 1): a dialog's edits merge onto what other
parts changed meanwhile, every change is saved and told, nobody's section object goes stale."""

from __future__ import annotations

import pytest

from app.storage.settings import Settings, load_settings
from app.storage.settings_store import SettingsStore


def test_must_show_1_a_dialog_opened_earlier_keeps_what_another_part_changed():
    store = SettingsStore(Settings())
    told: list[frozenset[str]] = []
    store.subscribe(told.append)
    opened_with = store.settings.model_copy(deep=True)  # the dialog's copy
    edited = opened_with.model_copy(deep=True)
    edited.chat.tool_format = "hermes"  # the dialog's one edit
    with store.edit() as s:  # meanwhile the Server page sets its key and starts
        s.server.require_key = True
        s.server.enabled = True
    assert told == [frozenset({"server"})]
    store.apply(edited, base=opened_with)
    assert told[-1] == frozenset({"chat"})
    on_disk = load_settings()[0]
    assert on_disk.chat.tool_format == "hermes"
    assert on_disk.server.enabled is True and on_disk.server.require_key is True


def test_must_show_1_section_objects_stay_current_and_nothing_new_is_no_news():
    store = SettingsStore(Settings())
    server = store.settings.server  # a part that held the section
    whole = store.settings
    new = Settings()
    new.server.port = 9123
    store.replace(new)
    assert server.port == 9123 and store.settings is whole
    told: list[frozenset[str]] = []
    store.subscribe(told.append)
    assert store.commit() == frozenset() and told == []  # saved, but no change to tell
    store.settings.window.theme = "dark"  # changed in place, then committed
    assert store.commit() == frozenset({"window"}) and told == [frozenset({"window"})]


def test_must_show_1_a_removed_key_in_the_dialog_is_removed():
    s = Settings()
    s.tools.approvals = {"write_file": "allow", "calculator": "allow"}
    store = SettingsStore(s)
    base = store.settings.model_copy(deep=True)
    edited = base.model_copy(deep=True)
    edited.tools.approvals = {"calculator": "allow"}
    store.apply(edited, base=base)
    assert store.settings.tools.approvals == {"calculator": "allow"}


def test_a_save_that_fails_is_said_and_the_change_is_kept(tmp_path):
    problems: list[str] = []

    def fail(_settings):
        raise OSError(28, "No space left on device")

    store = SettingsStore(Settings(), save=fail, on_save_error=problems.append)
    with store.edit() as s:
        s.server.port = 9000
    assert store.settings.server.port == 9000 and problems and "No space" in problems[0]


def test_a_bad_value_from_a_dialog_raises_and_changes_nothing():
    store = SettingsStore(Settings())
    base = store.settings.model_copy(deep=True)
    bad = base.model_copy(deep=True)
    bad.__dict__["chat"].__dict__["max_tool_rounds"] = 0  # past the validator, as a broken editor might
    with pytest.raises(ValueError):
        store.apply(bad, base=base)
    assert store.settings.chat.max_tool_rounds == 8
