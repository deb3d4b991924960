"""``chat --file FILE``: text files attached to the prompt, run as a real subprocess on a tiny GGUF
(random weights): the message the model reads holds each file labelled and fenced after the
prompt (``--json``'s first event says so, with the files named), ``--save`` keeps that message, and
a binary or missing file is an error (exit status 2) before anything loads."""

from __future__ import annotations

import json

from app.storage.history import History
from tests.test_cli import run_app

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _chat(model, *flags: str):
    return run_app(
        "chat", "--model", str(model), "--tools", "none", "--threads", "1", "--n-ctx", "512",
        "--max-tokens", "2", "--temperature", "0", *flags, "What do these say?",
    )  # fmt: skip


def test_files_go_in_the_message_and_are_saved_with_it(tiny_gguf, tmp_path):
    model = tiny_gguf(chat_template=CHATML, control_tokens=["<|im_start|>", "<|im_end|>"], eos="<|im_end|>")
    code = tmp_path / "hello.py"
    code.write_text("print('hello')\n", encoding="utf-8")
    notes = tmp_path / "notes.txt"
    notes.write_text("one\r\ntwo\r\n", encoding="utf-8")
    proc = _chat(model, "--json", "--save", "--file", str(code), "--file", str(notes))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = (
        "What do these say?\n\n"
        "File `hello.py`:\n\n```python\nprint('hello')\n```\n\n"
        "File `notes.txt`:\n\n```\none\ntwo\n```"
    )
    assert events[0] == {
        "type": "user",
        "content": expected,
        "images": [],
        "files": [{"name": "hello.py", "bytes": 15}, {"name": "notes.txt", "bytes": 10}],
    }
    assert events[-1]["type"] == "done"
    with History() as h:
        (conv,) = h.list_conversations()
        stored = h.load_conversation(conv.id)
    assert [m.content for m in stored.messages if m.role == "user"] == [expected]
    assert conv.title == "What do these say?"


def test_a_binary_or_missing_file_is_refused_before_anything_loads(tmp_path):
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02binary")
    not_a_model = tmp_path / "none.gguf"  # never read: the file is refused first
    proc = _chat(not_a_model, "--file", str(binary))
    assert proc.returncode == 2 and f"error: --file {binary}: blob.bin is not a text file" in proc.stderr
    proc = _chat(not_a_model, "--file", str(tmp_path / "gone.txt"))
    assert proc.returncode == 2 and "cannot read the file" in proc.stderr
