"""``--ngram-draft on|off`` and ``--draft-model PATH`` (issue 31, speculative decoding) on ``chat``
and ``serve``: the load settings a real tiny GGUF is loaded with, the drafted counts of the
``--json`` done event, and a draft model that cannot be one refused in one line before anything
loads."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from app.cli import main
from tests.support.load_spy import spy_on_loads
from tests.test_cli import run_app


@pytest.fixture
def loads(monkeypatch) -> list:
    """The ``LoadSettings`` of every model ``chat`` loads."""
    return spy_on_loads(monkeypatch)


def _chat(model: Path) -> list[str]:
    return ["chat", "--model", str(model), "--tools", "none", "--max-tokens", "4", "--threads", "1"]


def _done(out: str) -> dict:
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert events and events[-1]["type"] == "done", out
    return events[-1]


def test_chat_loads_with_the_draft_options(tiny_gguf, loads, capsys, monkeypatch):
    model = tiny_gguf()
    draft = tiny_gguf()  # the same vocabulary: a draft model for it
    monkeypatch.chdir(draft.parent)  # a relative path is passed on as an absolute one
    code = main([*_chat(model), "--ngram-draft", "off", "--draft-model", draft.name, "--json", "hi"])
    out = capsys.readouterr().out
    assert code == 0, out
    (settings,) = loads
    assert settings.ngram_draft is False and settings.draft_model == str(draft.resolve())
    assert (settings.n_ctx, settings.n_threads) == (4096, 1)  # the other load options are kept
    done = _done(out)
    assert 0 <= done["draft_accepted"] <= done["draft_tokens"]

    # the defaults; a turn that drafted says so in its summary line
    from app.engine import loop

    real = loop._Tally.done

    def drafted(self, *args, **kwargs):
        return replace(real(self, *args, **kwargs), draft_tokens=60, draft_accepted=42)

    monkeypatch.setattr(loop._Tally, "done", drafted)
    code = main([*_chat(model), "hi"])
    assert code == 0
    assert (loads[-1].ngram_draft, loads[-1].draft_model) == (True, None)
    (summary,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[done]")]
    assert summary.endswith(", 42 of 60 drafted tokens accepted")


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda d: d / "missing.gguf", "does not exist"),
        (lambda d: d, "is not a .gguf file"),
        (lambda d: (d / "folder.gguf").mkdir() or d / "folder.gguf", "not a regular file"),
        (lambda d: (d / "text.gguf").write_text("hello") and d / "text.gguf", "not a GGUF file"),
        (lambda d: (d / "model.bin").write_bytes(b"GGUF") and d / "model.bin", "is not a .gguf file"),
        # begins as a GGUF and is not one: it would fail every load (serve: every request) otherwise
        (
            lambda d: (d / "bad.gguf").write_bytes(b"GGUF" + bytes(range(256)) * 8) and d / "bad.gguf",
            "cannot be read",
        ),
    ],
)
def test_a_bad_draft_model_is_one_line_before_anything_loads(tmp_path, loads, capsys, make, why):
    bad = make(tmp_path)
    code = main(["chat", "--model", str(tmp_path / "never-read.gguf"), "--draft-model", str(bad), "hi"])
    err = capsys.readouterr().err
    assert code == 2 and loads == []
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: --draft-model: the draft model {bad} ") and why in line, err


def test_serve_and_a_remote_chat_refuse_a_bad_or_pointless_draft_option(tmp_path):
    proc = run_app("serve", "--port", "0", "--draft-model", str(tmp_path / "none.gguf"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: --draft-model: the draft model {tmp_path / 'none.gguf'} does not exist"
    ]
    proc = run_app("chat", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--ngram-draft", "off", "hi")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: --ngram-draft is for local models; a remote endpoint decodes as its server is set up"
    ]
