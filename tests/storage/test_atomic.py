"""Atomic replacement of a file: the new contents or the old, never half, never a stray temp file."""

from __future__ import annotations

import os
import stat

import pytest

from app.storage.atomic import AtomicWriteError, atomic_write_bytes, atomic_write_text
from app.storage.paths import settings_path
from app.storage.settings import Settings, load_settings


def test_replaces_contents_and_keeps_permissions(tmp_path):
    p = tmp_path / "f.json"
    atomic_write_text(p, "one")
    os.chmod(p, 0o600)
    atomic_write_bytes(p, b"two \xe2\x9c\x93")
    assert p.read_bytes() == b"two \xe2\x9c\x93"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert [x.name for x in tmp_path.iterdir()] == ["f.json"]


def test_target_is_a_directory_fails_cleanly(tmp_path):
    d = tmp_path / "dir"
    (d / "inside").mkdir(parents=True)
    with pytest.raises(AtomicWriteError, match="could not write"):
        atomic_write_text(d, "x")
    assert (d / "inside").is_dir()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["dir"]


def test_unreadable_settings_path_gives_defaults_and_notice():
    settings_path().mkdir()  # a folder where the file should be: cannot be read
    s, notice = load_settings()
    assert s == Settings()
    assert notice is not None and notice.code == "unreadable" and str(settings_path()) in notice.message
    assert settings_path().is_dir()  # nothing was moved or deleted
