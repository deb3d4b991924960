"""The name at a reply's head: the model that wrote it, read from what the turn recorder keeps
(``app.ui.chat.records.reply_author``), and the same words for a reply being written
(``app.ui.window_chat_turns.live_author``)."""

from __future__ import annotations

import pytest

from app.ui.chat.records import reply_author
from app.ui.engine_types import ModelInfo, written_by
from app.ui.window_chat_turns import live_author


def _info(**kw) -> ModelInfo:
    base = dict(
        path="/m/alpha-q4.gguf",
        name="Alpha 1B",
        n_ctx=2048,
        detected_format=None,
        detected_label=None,
        effective_format=None,
    )
    return ModelInfo(**{**base, **kw})


@pytest.mark.parametrize(
    ("extra", "head", "in_tip"),
    [
        (
            {"model": "/m/alpha-q4.gguf", "model_name": "Alpha 1B"},
            "Alpha 1B",
            ["Written by Alpha 1B", "/m/alpha-q4.gguf"],
        ),
        (
            {"model": "/m/alpha-q4.gguf", "model_name": "Alpha 1B", "made_model": "helper"},
            "helper",
            ["made model helper", "over Alpha 1B", "/m/alpha-q4.gguf"],
        ),
        # a reply kept before the name was: its file's name, from a POSIX or a Windows path
        ({"model": "/m/alpha-q4.gguf"}, "alpha-q4", ["/m/alpha-q4.gguf"]),
        ({"model": "C:\\Models\\Beta.GGUF"}, "Beta", ["C:\\Models\\Beta.GGUF"]),
        ({"model": "relative.bin"}, "relative.bin", ["Written by relative.bin"]),
        # a remote engine's model is kept as "provider: model" and reads so
        (
            {"model": "Lab: gpt-x", "model_name": "gpt-x · Lab"},
            "gpt-x · Lab",
            ["Written by gpt-x · Lab", "Lab: gpt-x"],
        ),
        ({"made_model": "helper"}, "helper", ["over its file"]),
    ],
)
def test_the_head_names_the_writer(extra, head, in_tip):
    got, tip = reply_author(extra)
    assert got == head
    for words in in_tip:
        assert words in tip


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"model": ""},
        {"model": "   "},
        {"model": 3, "model_name": None, "made_model": ["x"]},
        {"model_name": "\n"},
    ],
)
def test_a_record_that_names_no_model_reads_assistant(extra):
    assert reply_author(extra) == ("Assistant", "")


def test_a_name_with_line_breaks_reads_on_one_line():
    assert reply_author({"model_name": "Alpha\n\n1B  x"})[0] == "Alpha 1B x"


def test_a_reply_being_written_reads_as_its_record_will():
    """``live_author`` gives what ``reply_author`` gives for the record ``TurnRecorder`` keeps
    (``model``: the file, or a remote engine's "provider: model"; ``written_by``'s keys)."""
    local = _info()
    assert live_author(local, None) == reply_author({"model": local.path, **written_by(local)})
    assert live_author(local, "helper")[0] == "helper"
    # the picker's name of the file (not the name inside it)
    assert written_by(local, "helper") == {"model_name": "alpha-q4", "made_model": "helper"}
    assert live_author(local, None) == ("alpha-q4", "Written by alpha-q4\n/m/alpha-q4.gguf")
    remote = _info(path="remote:Lab/gpt-x", name="gpt-x", remote="Lab")
    assert written_by(remote, "helper") == {"model_name": "gpt-x · Lab"}  # no made model over a remote one
    assert live_author(remote, None) == reply_author({"model": "Lab: gpt-x", "model_name": "gpt-x · Lab"})
    assert live_author(None, None) == ("Assistant", "")
    assert written_by(None) == {}
