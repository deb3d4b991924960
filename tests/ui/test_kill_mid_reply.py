"""Killing the real app (a subprocess, SIGKILL) in the middle of a reply loses nothing already
saved: the partial reply is in the history, marked interrupted, and a new window shows it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from app.storage.history import History
from app.storage.paths import history_path
from app.storage.settings import Settings, save_settings
from tests.ui.scripted_gguf import CYCLE

REPO = Path(__file__).resolve().parents[2]
PROMPT = "Tell me the alphabet forever"


def _partial(cid_holder: list[int]) -> str | None:
    """The content of a streaming assistant reply saved by the app, if there is one yet."""
    if not history_path().exists():
        return None
    h = History()  # a second reader: the app is alive, so its streaming reply stays streaming
    try:
        for conv in h.list_conversations():
            msgs = h.load_conversation(conv.id).messages
            if len(msgs) == 2 and msgs[1].status == "streaming" and len(msgs[1].content) >= 30:
                cid_holder[:] = [conv.id]
                return msgs[1].content
    finally:
        h.close()
    return None


def test_sigkill_mid_reply_keeps_the_partial_reply_as_interrupted(
    qtbot, make_window, streaming_model, tmp_path
):
    s = Settings()
    s.sampling.max_tokens = 30_000  # the scripted model never ends a reply: only the kill does
    s.model.context_length = 32_768
    s.model.threads = 1
    save_settings(s)  # into this test's CALLISTO_HOME, which the app uses too
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(REPO))
    log = (tmp_path / "app.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--model", str(streaming_model), "--prompt", PROMPT],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    cid: list[int] = []
    try:
        qtbot.waitUntil(lambda: proc.poll() is not None or _partial(cid) is not None, timeout=60_000)
        assert proc.poll() is None, f"the app exited early: {(tmp_path / 'app.log').read_text()[-2000:]}"
        seen = _partial(cid)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        log.close()

    with History() as h:  # reopened after the crash: the reply is recovered as interrupted
        assert h.recovered_messages == 1
        conv = h.load_conversation(cid[0])
        user, reply = conv.messages
        assert (user.role, user.content, user.status) == ("user", PROMPT, "complete")
        assert (reply.role, reply.status) == ("assistant", "interrupted")
        assert reply.content.startswith(seen)  # nothing saved before the kill is lost
        assert reply.content == (CYCLE * (len(reply.content) // len(CYCLE) + 1))[: len(reply.content)]
        assert conv.model_path == str(streaming_model)
        saved = reply.content

    w = make_window(None, history=History())
    assert cid[0] in w.conversations.ids()
    w.open_conversation(cid[0])
    shown = w.chat.assistant_messages()
    assert len(shown) == 1 and shown[0].text() == saved and shown[0].status == "interrupted"
    assert [u.text for u in w.chat.user_messages()] == [PROMPT]
    assert [b.code for b in w.chat.banners()] == ["no_tool_format"]  # its banner came back too
