"""Issue 29, N15 on the check's surfaces: what ``python -m app check`` and ``inspect --lint`` print
(a model's words, a template's lines, a file's name) is escaped for the terminal as the CLI does
(:func:`app.terminal.terminal_text`): no raw ESC sequence, C1 control or bidirectional override."""

from __future__ import annotations

import subprocess
import sys

from app.check.console import progress_printer
from app.check.corpus import load_corpus
from app.check.reference import ReferenceServer
from app.check.remote_target import RemoteTarget
from app.check.runner import run_check
from app.engine.remote import Provider

CORPUS = load_corpus()
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202eevil"
# an endpoint that fails: the error row quotes the server's own words
REPLY = {"status": 500, "error": HOSTILE}
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def test_n15_a_servers_words_in_the_checks_progress_lines_are_escaped(capsys):
    scenario = CORPUS.by_id("single-string-opaque-id")
    with ReferenceServer(CORPUS, reply_for=lambda s, t, body: REPLY) as srv:
        target = RemoteTarget(Provider(srv.url, retry_backoff_s=0.01), "model\x1b[31m")
        run_check(target, [scenario], progress=progress_printer(False))
        target.close()
    out = capsys.readouterr().out
    assert scenario.id in out and "ERROR" in out and "HTTP 500" in out
    assert "\\x1b" in out  # shown, as an escape
    assert not any(c in out for c in RAW), repr(out)


def test_n15_inspect_lint_escapes_the_file_name_and_template_lines(tmp_path):
    path = tmp_path / f"tpl{HOSTILE}.jinja"
    path.write_text("{{ messages }}" + HOSTILE + "\n{% for m in messages %}{{ m.content }}{% endfor %}\n")
    out = subprocess.run(
        [sys.executable, "-m", "app", "inspect", str(path), "--lint"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "finding(s)" in out and "\\x1b" in out
    assert not any(c in out for c in RAW), repr(out)
