"""``python -m app inspect`` names the tool-call family of a GGUF built with each long-tail template
(Apertus, Apriel, Nemotron v2, GigaChat, MiniCPM5, Hunyuan, Solar): a real tiny model from the
GGUF factory, its template embedded, the family's markers as special tokens where the model's
vocabulary has them, its own BOS/EOS. Each family is also a ``--tool-format`` choice."""

from __future__ import annotations

import pytest

from app.engine.formats import FORMATS, tool_format_choices
from tests.test_cli import REPO, run_app

TEMPLATES = REPO / "tests" / "fixtures" / "chat_templates"
_HY = ":opensource"

# template, family, control tokens, user-defined tokens, bos, eos
MODELS = [
    (
        "Apertus-8B-Instruct.jinja",
        "apertus",
        [
            "<s>",
            "</s>",
            "<|system_start|>",
            "<|system_end|>",
            "<|developer_start|>",
            "<|developer_end|>",
            "<|user_start|>",
            "<|user_end|>",
            "<|assistant_start|>",
            "<|assistant_end|>",
            "<|inner_prefix|>",
            "<|inner_suffix|>",
            "<|tools_prefix|>",
            "<|tools_suffix|>",
        ],
        [],
        "<s>",
        "<|assistant_end|>",
    ),
    (
        "Apriel-1.6-15b-Thinker-fixed.jinja",
        "apriel",
        [
            "<s>",
            "<|begin_system|>",
            "<|begin_user|>",
            "<|begin_assistant|>",
            "<|begin_tool_result|>",
            "<|end|>",
        ],
        ["<tool_calls>", "</tool_calls>", "[BEGIN FINAL RESPONSE]"],
        "<s>",
        "<|end|>",
    ),
    (
        "unsloth-Apriel-1.5.jinja",
        "apriel",
        ["<s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"],
        ["<tool_calls>", "</tool_calls>"],
        "<s>",
        "<|end|>",
    ),
    (
        "NVIDIA-Nemotron-Nano-v2.jinja",
        "nemotron-v2",
        ["<s>", "<SPECIAL_10>", "<SPECIAL_11>", "<SPECIAL_12>"],
        ["<TOOLCALL>", "</TOOLCALL>", "<think>", "</think>"],
        "<s>",
        "<SPECIAL_12>",
    ),
    (
        "GigaChat3-10B-A1.8B.jinja",
        "gigachat",
        ["<s>", "</s>", "<|role_sep|>", "<|message_sep|>"],
        [],
        "<s>",
        "</s>",
    ),
    (
        "GigaChat3.1-10B-A1.8B.jinja",
        "gigachat",
        ["<s>", "</s>", "<|role_sep|>", "<|message_sep|>", "<|function_call|>"],
        [],
        "<s>",
        "</s>",
    ),
    (
        "openbmb-MiniCPM5-1B.jinja",
        "minicpm5",
        ["<s>", "<|im_start|>", "<|im_end|>"],
        ["<think>", "</think>", "<tool_sep>"],
        "<s>",
        "<|im_end|>",
    ),
    (
        "tencent-Hy3.jinja",
        "hunyuan",
        [
            f"<｜hy_begin_of_sentence{_HY}｜>",
            f"<｜hy_eos{_HY}｜>",
            f"<｜hy_User{_HY}｜>",
            f"<｜hy_Assistant{_HY}｜>",
        ],
        [
            f"<think{_HY}>",
            f"</think{_HY}>",
            f"<tool_calls{_HY}>",
            f"</tool_calls{_HY}>",
            f"<tool_call{_HY}>",
            f"</tool_call{_HY}>",
            f"<tool_sep{_HY}>",
            f"<arg_key{_HY}>",
            f"</arg_key{_HY}>",
            f"<arg_value{_HY}>",
            f"</arg_value{_HY}>",
        ],
        f"<｜hy_begin_of_sentence{_HY}｜>",
        f"<｜hy_eos{_HY}｜>",
    ),
    (
        "upstage-Solar-Open-100B.jinja",
        "solar",
        [
            "<s>",
            "<|begin|>",
            "<|end|>",
            "<|content|>",
            "<|think|>",
            "<|tool_calls|>",
            "<|calls|>",
            "<|tool_call:begin|>",
            "<|tool_call:name|>",
            "<|tool_call:args|>",
            "<|tool_call:end|>",
        ],
        [],
        "<s>",
        "<|end|>",
    ),
]


@pytest.mark.parametrize(
    ("template", "family", "control", "user", "bos", "eos"), MODELS, ids=[m[0] for m in MODELS]
)
def test_inspect_shows_the_family(tiny_gguf, template, family, control, user, bos, eos):
    path = tiny_gguf(
        chat_template=(TEMPLATES / template).read_text(),
        control_tokens=control,
        user_tokens=user,
        bos=bos,
        eos=eos,
    )
    proc = run_app("inspect", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(None, 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines["tool_format"] == family
    assert lines["eos_token"] == eos


def test_each_family_is_a_setting_choice_that_names_its_models():
    labels = dict(tool_format_choices())
    names = {
        "apertus": "Apertus",
        "apriel": "Apriel",
        "nemotron-v2": "Nemotron Nano v2",
        "gigachat": "GigaChat 3",
        "minicpm5": "MiniCPM5",
        "hunyuan": "Hy3",
        "solar": "Solar Open",
    }
    for family, model in names.items():
        assert family in FORMATS
        assert model in labels[family], (family, labels[family])


def test_each_family_is_a_tool_format_option():
    proc = run_app("chat", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for family in ("apertus", "apriel", "nemotron-v2", "gigachat", "minicpm5", "hunyuan", "solar"):
        assert family in text, family
