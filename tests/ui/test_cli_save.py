"""A chat saved by the headless CLI (``python -m app chat --save``) is a conversation of the window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QWEN3 = (REPO / "tests" / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja").read_text()


def test_cli_chat_with_save_shows_up_in_the_window(qtbot, tmp_path, tiny_gguf, make_window):
    model = tiny_gguf(
        chat_template=QWEN3,
        control_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        user_tokens=["<tool_call>", "</tool_call>", "<think>", "</think>"],
        bos=None,
        eos="<|im_end|>",
    )
    grammar = tmp_path / "reply.gbnf"
    grammar.write_text('root ::= "Saved by the command line."\n')
    env = dict(os.environ, PYTHONPATH=str(REPO))  # CALLISTO_HOME is this test's own folder
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "chat",
            "--model",
            str(model),
            "--grammar-file",
            str(grammar),
            "--threads",
            "1",
            "--save",
            "--json",
            "Remember this chat",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["type"] == "done"

    w = make_window(None)
    assert "Remember this chat" in w.conversations.titles()
    (cid,) = [
        c
        for c, t in zip(w.conversations.ids(), w.conversations.titles(), strict=True)
        if t == "Remember this chat"
    ]
    conv = w.history.load_conversation(cid)
    assert [(m.role, m.content, m.status) for m in conv.messages] == [
        ("user", "Remember this chat", "complete"),
        ("assistant", "Saved by the command line.", "complete"),
    ]
    reply = conv.messages[1]
    assert reply.extra["stats"]["finish_reason"] == "stop" and reply.extra["model"] == str(model)
    assert reply.extra["settings"]["tool_format"] == "auto"
