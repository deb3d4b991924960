"""Saved remote engines are edited and deleted from the window, against real HTTP servers on
loopback: editing changes URL, API, tool mode and keeps the stored key unless a new one is typed;
deleting removes the key from the keychain and the engine's models from the picker; a keychain that
refuses leaves everything as it was; no key ever lands in a file under the data folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.engine.remote.misbehaving import MisbehavingServer, openai_chunk, sse

FIRST_KEY = "sk-edit-first-0c1d2e3f"
SECOND_KEY = "sk-edit-second-9a8b7c6d"


def _models_endpoint(*names: str):
    """An OpenAI endpoint that lists ``names`` and nothing else."""

    def handler(req):
        if req.path == "/v1/models":
            req.status(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})
        else:
            req.status(404, {"error": {"message": "not found"}})

    return handler


def _files_hold(folder: Path, *secrets: str) -> list[str]:
    hits = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            data = (Path(root) / name).read_bytes()
            hits += [f"{Path(root) / name}: {s}" for s in secrets if s.encode() in data]
    return hits


def _picker_texts(w) -> list[str]:
    return [w.model_picker.itemText(i) for i in range(w.model_picker.count())]


def _add(qtbot, w, name, url, key=""):
    dlg = w.remote_engines.open_provider_dialog()
    dlg.set_values(name=name, url=url, kind="openai", mode="api", key=key)
    dlg.accept()
    assert dlg.result() == 1, dlg.error_label.text()
    qtbot.waitUntil(lambda: name in w.remote_engines.models, timeout=30_000)


def _auth_of_listings(server) -> list[str | None]:
    return [r.headers.get("Authorization") for r in server.requests if r.path == "/v1/models"]


def test_editing_changes_the_endpoint_and_keeps_the_key_until_a_new_one_is_typed(
    qtbot, make_window, memory_keyring
):
    from app.storage.paths import settings_path

    with (
        MisbehavingServer(_models_endpoint("alpha")) as first,
        MisbehavingServer(_models_endpoint("beta", "gamma")) as second,
    ):
        w = make_window(None)
        _add(qtbot, w, "Lab", first.url, key=FIRST_KEY)
        assert "alpha · Lab (remote)" in _picker_texts(w)
        assert "Edit remote engines…" in _picker_texts(w)

        # editing: the saved values, the key never read back
        dlg = w.remote_engines.open_provider_dialog("Lab")
        assert dlg.windowTitle() == "Edit Lab" and dlg.name_edit.isReadOnly()
        assert dlg.url_edit.text() == first.url and dlg.key_edit.text() == ""
        dlg.url_edit.setText(second.url)
        dlg.mode_box.setCurrentIndex(dlg.mode_box.findData("auto"))
        dlg.accept()
        assert dlg.result() == 1, dlg.error_label.text()
        qtbot.waitUntil(lambda: w.remote_engines.models.get("Lab") == ["beta", "gamma"], timeout=30_000)
        assert [(e.name, e.url, e.mode) for e in w.settings.remote] == [("Lab", second.url, "auto")]
        assert memory_keyring.store == {("callisto", "remote:Lab"): FIRST_KEY}  # kept: none was typed
        assert _auth_of_listings(second) == [f"Bearer {FIRST_KEY}"]  # and sent to the new endpoint
        texts = _picker_texts(w)
        assert "beta · Lab (remote)" in texts and "gamma · Lab (remote)" in texts
        assert not any(t.startswith("alpha") for t in texts)  # the old endpoint's model left

        dlg = w.remote_engines.open_provider_dialog("Lab")
        dlg.key_edit.setText(SECOND_KEY)
        dlg.accept()
        assert dlg.result() == 1
        qtbot.waitUntil(lambda: len(_auth_of_listings(second)) == 2, timeout=30_000)
        assert memory_keyring.store == {("callisto", "remote:Lab"): SECOND_KEY}
        assert _auth_of_listings(second)[-1] == f"Bearer {SECOND_KEY}"

        dlg = w.remote_engines.open_provider_dialog("Lab")
        dlg.forget_key_box.setChecked(True)
        assert not dlg.key_edit.isEnabled()
        dlg.accept()
        qtbot.waitUntil(lambda: len(_auth_of_listings(second)) == 3, timeout=30_000)
        assert memory_keyring.store == {} and _auth_of_listings(second)[-1] is None

        w.shutdown()
    assert json.loads(settings_path().read_text())["remote"] == [
        {"name": "Lab", "url": second.url, "kind": "openai", "mode": "auto", "template": None}
    ]
    assert _files_hold(Path(os.environ["CALLISTO_HOME"]), FIRST_KEY, SECOND_KEY) == []


def _chatty_endpoint(words: str):
    """An OpenAI endpoint that lists the model ``same`` and answers every chat with ``words``."""

    def handler(req):
        if req.path == "/v1/models":
            req.status(200, {"object": "list", "data": [{"id": "same", "object": "model"}]})
            return
        req.start_stream()
        req.send(openai_chunk(words) + openai_chunk(finish="stop") + sse("[DONE]"))

    return handler


def test_the_model_in_use_goes_on_with_the_edited_endpoint(qtbot, make_window, memory_keyring):
    from app.engine.remote.keys import remote_key

    with (
        MisbehavingServer(_chatty_endpoint("Hello from the first box.")) as first,
        MisbehavingServer(_chatty_endpoint("Hello from the second box.")) as second,
    ):
        w = make_window(None)
        _add(qtbot, w, "Box", first.url)
        key = remote_key("Box", "same")
        assert w.remote_engines.load_remote(key)
        qtbot.waitUntil(lambda: w.model_info is not None and w.model_info.path == key, timeout=30_000)
        w.chat_ctl.last_done = None
        assert w.send("Who are you?")
        qtbot.waitUntil(lambda: w.last_done is not None, timeout=30_000)
        assert "first box" in w.chat.current_assistant().text()

        dlg = w.remote_engines.open_provider_dialog("Box")
        dlg.url_edit.setText(second.url)
        dlg.accept()
        qtbot.waitUntil(
            lambda: w.loading_path is None and any(r.path == "/v1/models" for r in second.requests)
        )
        w.chat_ctl.last_done = None
        assert w.send("And now?")
        qtbot.waitUntil(lambda: w.last_done is not None, timeout=30_000)
        assert "second box" in w.chat.current_assistant().text()
        assert [r.path for r in first.requests if r.body is not None] == ["/v1/chat/completions"]
        conv = w.history.load_conversation(w.conversation_id)
        assert [m.role for m in conv.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
        ]  # one conversation


@pytest.mark.parametrize(
    ("url", "kind", "mode", "problem"),
    [
        ("127.0.0.1:8080", "openai", "api", "starts with http:// or https://"),
        ("http://127.0.0.1:9", "anthropic", "callisto", "Anthropic API does not"),
    ],
)
def test_an_edit_with_bad_values_is_refused_and_changes_nothing(
    qtbot, make_window, memory_keyring, url, kind, mode, problem
):
    from app.storage.settings import RemoteProviderSettings

    w = make_window(None)
    saved = RemoteProviderSettings(name="Box", url="http://127.0.0.1:9", kind="ollama", mode="api")
    w.settings.remote = [saved, RemoteProviderSettings(name="Other", url="http://127.0.0.1:9")]
    dlg = w.remote_engines.open_provider_dialog("Box")
    dlg.set_values(name="Other", url=url, kind=kind, mode=mode, key="sk-never-stored")
    dlg.accept()
    assert dlg.isVisible() and dlg.result() != 1 and problem in dlg.error_label.text()
    assert w.settings.remote[0] == saved and memory_keyring.store == {}
    dlg.reject()
    with pytest.raises(KeyError):
        w.remote_engines.open_provider_dialog("Nobody")


def test_deleting_removes_the_key_and_the_models_and_the_chosen_model_can_no_longer_send(
    qtbot, make_window, memory_keyring
):
    from PySide6.QtWidgets import QMessageBox

    from app.engine.remote.keys import remote_key
    from app.storage.paths import settings_path

    with (
        MisbehavingServer(_models_endpoint("alpha")) as gone,
        MisbehavingServer(_models_endpoint("omega")) as kept,
    ):
        w = make_window(None)
        _add(qtbot, w, "Gone box", gone.url, key=FIRST_KEY)
        _add(qtbot, w, "Kept box", kept.url, key=SECOND_KEY)
        key = remote_key("Gone box", "alpha")
        assert w.remote_engines.load_remote(key)
        qtbot.waitUntil(lambda: w.model_info is not None and w.model_info.path == key, timeout=30_000)
        assert w.send_button.isEnabled()

        manager = w.remote_engines.open_providers_dialog()
        assert manager.names() == ["Gone box", "Kept box"]
        assert manager.select("Gone box")
        manager.edit_button.click()  # the edit dialog opens on top of the list, filled in
        assert (
            w.remote_engines.provider_dialog.parent() is manager
            and w.remote_engines.provider_dialog.editing.name == "Gone box"
        )
        w.remote_engines.provider_dialog.reject()
        manager.delete_button.click()
        box = w.remote_engines.delete_box
        assert box is not None and box.parent() is manager and "the one you chat with now" in box.text()
        box.button(QMessageBox.StandardButton.Cancel).click()  # no: nothing changes
        assert [e.name for e in w.settings.remote] == ["Gone box", "Kept box"]
        assert ("callisto", "remote:Gone box") in memory_keyring.store

        manager.delete_button.click()
        w.remote_engines.delete_box.button(QMessageBox.StandardButton.Yes).click()
        qtbot.waitUntil(lambda: manager.names() == ["Kept box"], timeout=30_000)
        assert memory_keyring.store == {("callisto", "remote:Kept box"): SECOND_KEY}
        assert [e.name for e in w.settings.remote] == [
            "Kept box"
        ] and "Gone box" not in w.remote_engines.models
        texts = _picker_texts(w)
        assert "omega · Kept box (remote)" in texts and "alpha · Gone box (remote)" not in texts
        # the model in use stays shown, marked as removed, and cannot send until another is picked
        assert w.model_picker.currentText() == "alpha · Gone box (removed)"
        assert not w.send_button.isEnabled() and "deleted" in w.send_button.toolTip()
        assert not w.send("Hello?") and w.conversation_id is None

        assert w.remote_engines.load_remote(remote_key("Kept box", "omega"))
        qtbot.waitUntil(lambda: w.model_info.remote == "Kept box", timeout=30_000)
        assert w.send_button.isEnabled()
        assert not any("Gone box" in t for t in _picker_texts(w))
        w.shutdown()
    assert [e["name"] for e in json.loads(settings_path().read_text())["remote"]] == ["Kept box"]
    assert _files_hold(Path(os.environ["CALLISTO_HOME"]), FIRST_KEY, SECOND_KEY) == []


@pytest.fixture
def locked_keyring():
    """A keychain that gives its keys but refuses to delete them (a locked login keychain)."""
    import keyring
    from keyring.backend import KeyringBackend
    from keyring.errors import KeyringError

    class LockedKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def __init__(self):
            super().__init__()
            self.store = {("callisto", "remote:Locked"): FIRST_KEY}

        def get_password(self, service, username):
            return self.store.get((service, username))

        def set_password(self, service, username, password):
            raise KeyringError("the keychain is locked")

        def delete_password(self, service, username):
            raise KeyringError("the keychain is locked")

    previous = keyring.get_keyring()
    backend = LockedKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def test_a_keychain_that_refuses_leaves_the_engine_as_it_was(qtbot, make_window, locked_keyring):
    from app.storage.settings import RemoteProviderSettings

    w = make_window(None)
    entry = RemoteProviderSettings(name="Locked", url="http://127.0.0.1:9")
    w.settings.remote = [entry]
    assert not w.remote_engines.delete_remote_provider("Locked")
    banner = next(t for t in w.window_notice_texts() if t.startswith("Locked was not deleted"))
    assert "keychain did not delete the API key" in banner and FIRST_KEY not in banner
    assert w.settings.remote == [entry] and locked_keyring.store == {("callisto", "remote:Locked"): FIRST_KEY}

    changed = entry.model_copy(update={"url": "http://127.0.0.1:10"})
    assert not w.remote_engines.edit_remote_provider(changed, SECOND_KEY)
    assert any(t.startswith("Locked was not changed") for t in w.window_notice_texts())
    assert w.settings.remote == [entry]


def test_without_a_keychain_a_keyless_engine_is_deleted(qtbot, make_window):
    import keyring
    from keyring.backends.fail import Keyring

    from app.storage.settings import RemoteProviderSettings

    previous = keyring.get_keyring()
    keyring.set_keyring(Keyring())
    try:
        w = make_window(None)
        w.settings.remote = [RemoteProviderSettings(name="Open", url="http://127.0.0.1:9")]
        assert w.remote_engines.delete_remote_provider("Open")
        assert w.settings.remote == [] and "Edit remote engines…" not in _picker_texts(w)
    finally:
        keyring.set_keyring(previous)
