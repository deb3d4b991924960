"""An in-memory keyring backend for tests: keys are stored and read through ``keyring`` as in the
app, and never reach the machine's real keychain."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

__all__ = ["memory_keyring"]


@pytest.fixture
def memory_keyring() -> Iterator[object]:
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
