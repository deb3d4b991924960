"""Keychains for tests: an in-memory ``keyring`` backend (fixture ``memory_keyring``) and keyring's
own "fail" backend everywhere else, so that no test, nor any process a test starts, reaches the
machine's real keychain (SecretService over D-Bus, macOS Keychain, Windows Credential Locker).

Loaded by the root ``tests/conftest.py`` through ``pytest_plugins``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

__all__ = ["NO_KEYCHAIN_BACKEND", "memory_keyring"]

#: The backend keyring picks when a test does not choose one (keyring reads the variable when it
#: first needs a backend; processes that tests start inherit it).
NO_KEYCHAIN_BACKEND = "keyring.backends.fail.Keyring"
os.environ["PYTHON_KEYRING_BACKEND"] = NO_KEYCHAIN_BACKEND


@pytest.fixture
def memory_keyring() -> Iterator[object]:
    """An empty in-memory keychain for one test: keys are stored and read through ``keyring`` as in
    the app; ``.store`` maps ``(service, username)`` to the key."""
    import keyring
    from keyring.backend import KeyringBackend
    from keyring.errors import PasswordDeleteError

    class MemoryKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def __init__(self):
            super().__init__()
            self.store: dict[tuple[str, str], str] = {}

        def get_password(self, service, username):
            return self.store.get((service, username))

        def set_password(self, service, username, password):
            self.store[(service, username)] = password

        def delete_password(self, service, username):
            if self.store.pop((service, username), None) is None:
                raise PasswordDeleteError("no such password")

    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
