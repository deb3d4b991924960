"""Workspace edges from the second hostile-input review: sizes in listings, skipped files named,
odd file names escaped or refused, over-long names, and a write limit counted in bytes."""

from __future__ import annotations

import os

import pytest

from app.tools import Dispatcher, ToolCall, ToolRegistry, Workspace, register_builtin_tools
from app.tools.types import ToolError
from app.tools.workspace import MAX_WRITE_BYTES


def _dispatcher(ws) -> Dispatcher:
    reg = ToolRegistry()
    register_builtin_tools(reg, Workspace(ws))
    return Dispatcher(reg, approval=lambda request: "allow_once")


def test_n11_list_files_shows_each_regular_file_with_its_size(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.bin").write_bytes(b"x" * 2048)
    listing = Workspace(tmp_path).list_files(".")
    assert "a.txt (6 B)" in listing, listing
    assert "sub/" in listing
    assert "unreadable" not in listing
    assert "b.bin (2.0 KB)" in Workspace(tmp_path).list_files("sub")
    # through the dispatcher too (the path a model takes)
    assert "a.txt (6 B)" in _dispatcher(tmp_path).dispatch(ToolCall("c", "list_files", {})).content


def test_n11_sizes_come_from_the_listed_folder_even_when_descriptors_are_reused(tmp_path):
    # Sizes were read through a closed folder descriptor: with the number reused by another open
    # folder, they came from that folder. Each file here has a size no other file has.
    for i in range(5):
        d = tmp_path / f"d{i}"
        d.mkdir()
        (d / "same.txt").write_bytes(b"x" * (i + 1))
    ws = Workspace(tmp_path)
    for i in range(5):
        assert f"same.txt ({i + 1} B)" in ws.list_files(f"d{i}")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_n21_a_search_that_skipped_files_says_which_and_why(tmp_path):
    (tmp_path / "small.txt").write_text("nothing here\n")
    with open(tmp_path / "huge.txt", "wb") as fh:  # sparse: holds the text, over the read limit
        fh.write(b"needle\n")
        fh.truncate(10 * 1024 * 1024)
    (tmp_path / "image.bin").write_bytes(b"\x00\x01needle")
    os.mkfifo(tmp_path / "pipe.txt")
    out = Workspace(tmp_path).search_files("needle")
    assert out.startswith("No matches for 'needle' in 1 files."), out
    assert "huge.txt" in out and "over the" in out, out
    assert "skipped 3 files" in out.lower(), out
    assert "binary" in out and "not a regular file" in out, out


def test_n21_a_search_with_matches_still_names_what_it_skipped(tmp_path):
    (tmp_path / "a.txt").write_text("needle\n")
    with open(tmp_path / "b.txt", "wb") as fh:
        fh.truncate(5 * 1024 * 1024)
    out = Workspace(tmp_path).search_files("needle")
    assert "a.txt:1: needle" in out
    assert "b.txt" in out and "skipped 1 file" in out.lower(), out


@pytest.mark.parametrize(
    "name",
    ["w\nx.txt", "e\x1b]0;T\x07.txt", "\u202etxt.exe", "zero\u200bwidth.txt", "c1\x9b.txt", "del\x7f.txt"],
)
def test_n21_names_with_control_or_invisible_characters_are_not_written(tmp_path, name):
    ws = Workspace(tmp_path)
    with pytest.raises(ToolError) as info:
        ws.write_file(name, "x")
    message = str(info.value)
    assert "control or invisible character" in message, message
    # the refusal shows the name escaped: nothing in it can act on a terminal
    assert all(ch.isprintable() for ch in message), repr(message)
    assert os.listdir(tmp_path) == []


def test_n21_odd_names_already_there_are_listed_and_searched_escaped(tmp_path):
    odd = ["new\nline.txt", "ctrl\x1b[31mred.txt", "\u202etxt.exe"]
    for name in odd:
        (tmp_path / name).write_text("needle\n")
    ws = Workspace(tmp_path)
    for out in (ws.list_files("."), ws.search_files("needle")):
        assert "\x1b" not in out and "\u202e" not in out, repr(out)
        assert "ctrl\\x1b[31mred.txt" in out and "\\u202etxt.exe" in out and "new\\nline.txt" in out, out
        assert out.count("\n") == 3, repr(out)  # one line per name: a newline in a name splits nothing
    # a refusal naming such a file is escaped too
    with pytest.raises(ToolError) as info:
        ws.read_file("ctrl\x1b[31mred.txt", start_line=5)
    assert "\x1b" not in str(info.value) and "ctrl\\x1b[31mred.txt" in str(info.value)


def test_n21_a_300_character_name_is_a_tool_error_everywhere(tmp_path):
    ws = Workspace(tmp_path)
    name = "a" * 300
    for call in (
        lambda: ws.write_file(name, "x"),
        lambda: ws.write_file(f"sub/{name}/x.txt", "x"),
        lambda: ws.read_file(name),
        lambda: ws.list_files(name),
        lambda: ws.search_files("x", path=name),
    ):
        with pytest.raises(ToolError, match="longer than 255 bytes"):
            call()
    d = _dispatcher(tmp_path)
    result = d.dispatch(ToolCall("c", "write_file", {"path": name, "content": "x"}))
    assert result.error is not None and "longer than 255 bytes" in result.error
    assert "Tool failed" not in result.error and str(tmp_path) not in result.error
    assert os.listdir(tmp_path) == []


def test_n21_the_write_limit_counts_bytes_not_characters(tmp_path):
    ws = Workspace(tmp_path)
    four_byte = "\U0001f600" * (MAX_WRITE_BYTES // 4 + 1)  # fewer characters than the limit in bytes
    assert len(four_byte) < MAX_WRITE_BYTES
    with pytest.raises(ToolError, match="bytes"):
        ws.write_file("w4.txt", four_byte)
    assert not (tmp_path / "w4.txt").exists()
    exact = "\U0001f600" * (MAX_WRITE_BYTES // 4)
    assert ws.write_file("ok.txt", exact) == f"Wrote {MAX_WRITE_BYTES} bytes to ok.txt."
    assert (tmp_path / "ok.txt").stat().st_size == MAX_WRITE_BYTES
