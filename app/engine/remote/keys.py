"""API keys of remote providers, kept in the operating system's keychain (``keyring``), and the
keys that name a remote model in the window's model picker (:func:`remote_key`).

A key is stored under the service ``callisto`` and the provider's name; it is never written to
settings.json or the history. ``keyring`` is imported only when a key is read or written.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

__all__ = [
    "KEYRING_SERVICE",
    "REMOTE_PREFIX",
    "KeyStoreError",
    "delete_api_key",
    "load_api_key",
    "parse_remote_key",
    "parser_words",
    "provider_from_settings",
    "remote_key",
    "store_api_key",
]

KEYRING_SERVICE = "callisto"
REMOTE_PREFIX = "remote://"


class KeyStoreError(RuntimeError):
    """The keychain could not be used (none installed, locked...): one plain sentence."""


def _username(provider_name: str) -> str:
    if not isinstance(provider_name, str) or not provider_name.strip():
        raise ValueError("a provider needs a name to keep its API key under")
    return f"remote:{provider_name.strip()}"


def store_api_key(provider_name: str, key: str) -> None:
    import keyring
    from keyring.errors import KeyringError

    if not isinstance(key, str) or not key:
        raise ValueError("the API key is empty")
    try:
        keyring.set_password(KEYRING_SERVICE, _username(provider_name), key)
    except KeyringError as exc:
        raise KeyStoreError(f"The system keychain did not store the API key: {exc}") from exc


def load_api_key(provider_name: str) -> str | None:
    """The stored key, or None when there is none (also where no keychain is installed: no key can
    have been stored there, and a provider without a key must still work)."""
    import keyring
    from keyring.errors import KeyringError, NoKeyringError

    try:
        return keyring.get_password(KEYRING_SERVICE, _username(provider_name))
    except NoKeyringError:
        return None
    except KeyringError as exc:
        raise KeyStoreError(f"The system keychain did not give the API key: {exc}") from exc


def delete_api_key(provider_name: str) -> bool:
    """Forget the key; False when there was none."""
    import keyring
    from keyring.errors import KeyringError, PasswordDeleteError

    try:
        keyring.delete_password(KEYRING_SERVICE, _username(provider_name))
    except PasswordDeleteError:
        return False
    except KeyringError as exc:
        raise KeyStoreError(f"The system keychain did not delete the API key: {exc}") from exc
    return True


def provider_from_settings(entry: Any, **options: Any) -> Any:
    """The :class:`~app.engine.remote.Provider` of a saved ``settings.remote`` entry, its key read
    from the keychain (``options`` go to the Provider: timeouts, retries)."""
    from app.engine.remote._client import Provider

    return Provider(
        entry.url,
        kind=entry.kind,
        mode=entry.mode,
        name=entry.name,
        api_key=load_api_key(entry.name),
        **options,
    )


# -- the picker's keys of remote models ------------------------------------------------------


def remote_key(provider: str, model: str) -> str:
    """The picker's key of ``model`` on ``provider`` (and the ModelInfo path of a remote model)."""
    return f"{REMOTE_PREFIX}{quote(provider, safe='')}/{model}"


def parse_remote_key(key: Any) -> tuple[str, str] | None:
    """(provider, model) of a :func:`remote_key`; None for a local path or anything else."""
    if not isinstance(key, str) or not key.startswith(REMOTE_PREFIX):
        return None
    provider, sep, model = key[len(REMOTE_PREFIX) :].partition("/")
    return (unquote(provider), model) if sep and provider and model else None


_KIND_WORDS = {"openai": "OpenAI API", "anthropic": "Anthropic API", "ollama": "Ollama API"}


def parser_words(label: str | None) -> str | None:
    """``DoneEvent.call_parsers`` values in plain words: ``api:openai`` -> "the engine's
    function calling (OpenAI API)", ``callisto:hermes`` -> "Callisto's parser (Hermes JSON)"."""
    if not label:
        return None
    how, _, what = label.partition(":")
    if how == "api":
        return f"the engine's function calling ({_KIND_WORDS.get(what, what or 'API')})"
    if how == "callisto":
        from app.engine.formats import FORMATS

        fmt = FORMATS.get(what)
        label = (fmt.label if fmt is not None else "") or what
        family = label.split(" (", 1)[0]
        return f"Callisto's parser ({family})" if family else "Callisto's parser"
    return label
