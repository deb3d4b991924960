"""The local API server's key in the system keychain (``keyring``, service ``callisto``, user
``server:api_key``), beside the remote engines' keys (:mod:`app.engine.remote.keys`).

Where no keychain is installed the key stays in ``settings.json`` (``server.api_key``), as
before: a key the person chose is never dropped, and a server never runs without it.
"""

from __future__ import annotations

__all__ = ["KEY_USER", "KeychainUnavailable", "delete_server_key", "load_server_key", "store_server_key"]

KEY_USER = "server:api_key"


class KeychainUnavailable(RuntimeError):
    """No keychain (or a locked one): one plain sentence."""


def _service() -> str:
    from app.engine.remote.keys import KEYRING_SERVICE

    return KEYRING_SERVICE


def store_server_key(key: str) -> None:
    """Keep ``key`` in the keychain; KeychainUnavailable when it cannot."""
    import keyring
    from keyring.errors import KeyringError

    try:
        keyring.set_password(_service(), KEY_USER, key)
    except KeyringError as exc:  # NoKeyringError is one
        raise KeychainUnavailable(f"the system keychain did not store the key ({exc})") from exc


def load_server_key() -> str | None:
    """The stored key (None: none stored); KeychainUnavailable when the keychain cannot be read."""
    import keyring
    from keyring.errors import KeyringError

    try:
        return keyring.get_password(_service(), KEY_USER)
    except KeyringError as exc:
        raise KeychainUnavailable(f"the system keychain did not give the key ({exc})") from exc


def delete_server_key() -> None:
    """Forget the stored key (nothing stored, or no keychain: nothing to do)."""
    import keyring
    from keyring.errors import KeyringError, PasswordDeleteError

    try:
        keyring.delete_password(_service(), KEY_USER)
    except PasswordDeleteError:
        return
    except KeyringError as exc:
        raise KeychainUnavailable(f"the system keychain did not delete the key ({exc})") from exc
