"""N18: the check's and the forensics' file readers refuse FIFOs, devices, endless and deeply
nested files with a sentence, and never hang; transcripts are read only inside their folder."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from app.check.corpus import CorpusError, default_scenarios_dir, load_corpus
from app.check.reference import ReferenceServer
from app.check.runner import load_result, read_transcript
from app.cli import main

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")

CORPUS = load_corpus()


def bounded(call, fifo: Path | None = None):
    """``call()``'s result or exception, run in a thread that must end within a generous bound.
    Before the fix a FIFO blocked ``open`` for ever: then a writer is opened so the thread ends
    and the test fails instead of hanging."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - the test looks at what was raised
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(60)
        pytest.fail("the reader blocked on a FIFO")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


def _folder(tmp_path: Path, name: str = "sc") -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(default_scenarios_dir() / "tools.json", d / "tools.json")
    return d


def test_n18_a_fifo_scenario_file_is_refused_at_once(tmp_path):
    d = _folder(tmp_path)
    os.mkfifo(d / "a.toml")
    with pytest.raises(CorpusError, match="a.toml.*not a regular file"):
        bounded(lambda: load_corpus(d), d / "a.toml")


@pytest.mark.parametrize("name", ["a.toml", "tools.json"])
def test_n18_a_scenario_folder_file_linked_to_dev_zero_is_refused(tmp_path, name):
    d = _folder(tmp_path)
    if name == "a.toml":
        shutil.copy(default_scenarios_dir() / "single.toml", d / "single.toml")
    (d / name).unlink(missing_ok=True)
    os.symlink("/dev/zero", d / name)
    with pytest.raises(CorpusError, match="not a regular file but a device"):
        load_corpus(d)


@pytest.mark.parametrize(
    "name, text",
    [
        ("tools.json", '{"a": ' + "[" * 200_000 + "]" * 200_000 + "}"),
        ("deep.toml", 'category = "single"\nx = ' + "[" * 100_000 + "]" * 100_000 + "\n"),
    ],
)
def test_n18_deeply_nested_scenario_files_are_a_clear_error(tmp_path, name, text):
    d = _folder(tmp_path)
    if name.endswith(".toml"):
        shutil.copy(default_scenarios_dir() / "single.toml", d / "single.toml")
    (d / name).write_text(text)
    with pytest.raises(CorpusError, match="nested too deeply"):
        load_corpus(d)


def test_n18_the_check_command_refuses_a_fifo_grammar_file(tmp_path, capsys):
    fifo = tmp_path / "g.gbnf"
    os.mkfifo(fifo)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    rc = bounded(
        lambda: main(
            ["check", "--model", str(model), "--scenario", "single-integer", "--grammar-file", str(fifo)]
        ),
        fifo,
    )
    assert rc == 2
    assert "not a regular file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def good_result(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("res") / "r.json"
    with ReferenceServer(CORPUS) as srv:
        rc = main(
            [
                "check",
                "--endpoint",
                srv.url,
                "--model",
                "ref",
                "--scenario",
                "single-integer",
                "--out",
                str(out),
            ]
        )
    assert rc == 0
    return out


def test_n18_result_files_that_are_fifos_devices_or_deeply_nested_are_refused(tmp_path, good_result):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        bounded(lambda: load_result(fifo), fifo)
    zero = tmp_path / "zero.json"
    os.symlink("/dev/zero", zero)
    with pytest.raises(ValueError, match="not a regular file but a device"):
        load_result(zero)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        load_result(deep)
    deep_obj = tmp_path / "deep_obj.json"
    deep_obj.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        load_result(deep_obj)
    assert load_result(good_result)["results"]  # a real one still loads


def test_n18_transcripts_are_read_only_from_their_own_folder(tmp_path, good_result):
    result = load_result(good_result)
    row = result["results"][0]
    transcript, intact = read_transcript(result, row)
    assert transcript is not None and intact
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"secret": True}))
    # a result file pointing its transcripts elsewhere: nothing outside the result's folder is read
    for folder, name in (
        (os.path.relpath(tmp_path, good_result.parent), "outside.json"),
        (result["transcripts_dir"], str(outside)),
        (result["transcripts_dir"], f"../../{tmp_path.name}/outside.json"),
        (str(tmp_path), "outside.json"),
    ):
        moved = dict(result, transcripts_dir=folder)
        assert read_transcript(moved, dict(row, transcript_file=name)) == (None, False), (folder, name)


def test_n18_a_transcript_linked_to_a_fifo_or_dev_zero_is_not_read(tmp_path, good_result):
    result = load_result(good_result)
    row = result["results"][0]
    folder = good_result.parent / result["transcripts_dir"]
    os.symlink("/dev/zero", folder / "zero.json")
    os.mkfifo(folder / "fifo.json")
    assert read_transcript(result, dict(row, transcript_file="zero.json")) == (None, False)
    assert bounded(
        lambda: read_transcript(result, dict(row, transcript_file="fifo.json")), folder / "fifo.json"
    ) == (
        None,
        False,
    )


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder"])
def test_n18_lint_refuses_a_template_path_that_is_not_a_regular_file(tmp_path, capsys, kind):
    path = tmp_path / "t.jinja"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()
    rc = bounded(lambda: main(["inspect", str(path), "--lint"]), path if kind == "fifo" else None)
    assert rc == 1
    err = capsys.readouterr().err
    assert "not a regular file" in err and "t.jinja" in err, err


def test_n18_lint_refuses_an_oversized_template_file_before_reading_it(tmp_path, capsys):
    path = tmp_path / "big.jinja"
    with open(path, "wb") as fh:
        fh.truncate(64 * 1024 * 1024)
    assert main(["inspect", str(path), "--lint"]) == 1
    assert "over the" in capsys.readouterr().err
