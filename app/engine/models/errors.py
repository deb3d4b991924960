"""Errors raised by model management. Every one carries a message fit to show a user.

They are engine errors (:class:`app.engine.errors.EngineError` is their root), kept beside the
model library they belong to."""

from __future__ import annotations

from app.engine.errors import EngineError

__all__ = [
    "ModelsError",
    "HubOfflineError",
    "HubUnavailableError",
    "HubNotFoundError",
    "DownloadError",
    "DiskSpaceError",
    "DiskFullError",
    "HashMismatchError",
    "DownloadCancelled",
    "LibraryError",
    "NotDeletableError",
]


class ModelsError(EngineError):
    """Base class: ``str(err)`` is a complete sentence for the user."""


class HubOfflineError(ModelsError):
    """Offline mode (``HF_HUB_OFFLINE``) is on: the hub is not contacted at all."""


class HubUnavailableError(ModelsError):
    """The hub could not be reached or answered with an error."""


class HubNotFoundError(HubUnavailableError):
    """The hub answered that the repository (or its revision) is not there for this user: it does
    not exist, or it is private or gated and the token does not open it."""


class DownloadError(ModelsError):
    """A download failed; the partial file (if any) is never a usable model."""


class DiskSpaceError(DownloadError):
    """Not enough free disk space to start a download."""


class DiskFullError(DownloadError):
    """The disk filled up (or a file-size limit was hit) while writing."""


class HashMismatchError(DownloadError):
    """The downloaded bytes do not match the hub's LFS sha256."""


class DownloadCancelled(DownloadError):
    """The download was cancelled by the user."""


class LibraryError(ModelsError):
    """A local library operation failed (import, delete, bad folder)."""


class NotDeletableError(LibraryError):
    """Callisto did not download this file and the user has not confirmed deleting it."""
