"""Where Callisto keeps things: config, data (history, models), cache and logs.

platformdirs picks the OS's folders. ``CALLISTO_HOME`` overrides all of them with
sub-folders of one directory (tests and portable installs use it).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "config_dir", "data_dir", "log_dir", "models_dir", "settings_path", "history_path"]

APP_NAME = "Callisto"
APP_AUTHOR = "Callisto"


def _home() -> Path | None:
    home = os.environ.get("CALLISTO_HOME")
    return Path(home) if home else None


def _ensure(p: Path) -> Path:
    """``p``, created when missing. Best effort: a folder that cannot be created (read-only home, a
    file in the way) is returned anyway, and whoever reads or writes in it reports that in words,
    instead of the start failing here, before logging and the error hooks exist."""
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    return p


def _user_dir(sub: str, platform_dir: str) -> Path:
    """``CALLISTO_HOME``/``sub`` when it is set, else the OS's folder (``platformdirs.<platform_dir>``)."""
    if (h := _home()) is not None:
        return _ensure(h / sub)
    import platformdirs

    return _ensure(Path(getattr(platformdirs, platform_dir)(APP_NAME, APP_AUTHOR)))


def config_dir() -> Path:
    return _user_dir("config", "user_config_dir")


def data_dir() -> Path:
    return _user_dir("data", "user_data_dir")


def cache_dir() -> Path:
    return _user_dir("cache", "user_cache_dir")


def log_dir() -> Path:
    return _user_dir("logs", "user_log_dir")


def models_dir() -> Path:
    return _ensure(data_dir() / "models")


def settings_path() -> Path:
    return config_dir() / "settings.json"


def history_path() -> Path:
    return data_dir() / "history.sqlite3"
