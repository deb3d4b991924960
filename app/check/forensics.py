"""Template forensics: why a model's tool calls break, read from its chat template and vocabulary.

Each check renders small probe conversations through the sandboxed renderer
(:func:`app.engine.templates.render_template`) and looks at what came out, then names the template
line responsible. Findings (id, severity, one-line explanation, the line, what Callisto does):

========================  ============================================================================
``template_error``        the template does not compile, raises, tries an unsafe operation, builds too
                          much or takes too long on a plain conversation (no other check can run)
``no_tools_variable``     the template never renders ``tools`` (tools ignored), or reads them from the
                          system message's ``tools`` key instead (Phi-4-mini)
``tool_results_dropped``  calls are rendered but tool results are not (or a tool message raises)
``call_ids_dropped``      calls and results are rendered without their ids
``call_id_length_9``      the template raises unless a call id is exactly 9 characters (Mistral)
``strict_alternation``    ``raise_exception`` on two user turns in a row
``system_dropped_after_tool``  the system prompt is rendered, but not once the last message is a tool result
``content_null_on_call``  an assistant tool-call turn with ``content: null`` raises or renders ``None``
``doubled_braces``        JSON in the instructions written with doubled braces (``{{"name": ...}}``)
``marker_not_single_token``  the family's call marker is not one token of the vocabulary
``marker_is_control_token``  the call marker is a control token (invisible unless specials are decoded)
``eot_not_in_vocab``      the end-of-turn marker the template writes is not a token
``eot_not_eog``           the end-of-turn token is not in the end-of-generation set
``reasoning_not_stripped``  a reasoning template keeps an old turn's ``<think>`` block in the prompt
``differs_from_official``  the template is close to, but not, an official one (what changed is named)
========================  ============================================================================
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "FINDING_IDS",
    "Finding",
    "TemplateReport",
    "VocabInfo",
    "lint_gguf",
    "lint_template",
    "official_templates",
    "read_vocab",
]

FINDING_IDS = (
    "template_error",
    "no_tools_variable",
    "tool_results_dropped",
    "call_ids_dropped",
    "call_id_length_9",
    "strict_alternation",
    "system_dropped_after_tool",
    "content_null_on_call",
    "doubled_braces",
    "marker_not_single_token",
    "marker_is_control_token",
    "eot_not_in_vocab",
    "eot_not_eog",
    "reasoning_not_stripped",
    "differs_from_official",
)

MAX_TEMPLATE_FILE_BYTES = 4 * 131_072  # a template file: MAX_TEMPLATE_CHARS characters of up to 4 UTF-8 bytes

LINT_SECONDS = 10.0  # all the renders of one template's lint together (detection's 5 s among them)

CALL_CATEGORIES = ["single", "parallel", "streaming", "multi_turn", "tool_choice", "negative", "reasoning"]
# token texts llama.cpp adds to the end-of-generation set by itself (llama-vocab.cpp)
_AUTO_EOG = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "<｜end▁of▁sentence｜>",
    "<|end_of_text|>",
}
TOKEN_CONTROL = 3

_SYS, _USER, _USER2, _ANSWER = "SYSMARK4471", "USERMARK1093", "USERMARK2288", "ANSWERMARK6620"
_RESULT, _ARG, _REASON = "RESULTMARK5512", "ARGMARK3307", "REASONMARK9034"
_CALL_NAME = "probe_lookup_fn"
_GOOD_ID, _LONG_ID = "pRb7c2X9q", "call_probe_0123456789abcdef"
_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": _CALL_NAME,
            "description": "Look something up.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        },
    }
]


@dataclass
class Finding:
    id: str
    severity: str  # "error" | "warning" | "info"
    title: str
    explanation: str
    callisto: str  # what Callisto does about it
    line: int | None = None
    line_text: str | None = None
    categories: list[str] = field(default_factory=list)  # the check categories it explains
    template: str = "chat_template"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TemplateReport:
    template: str
    sha256: str
    detected_format: str | None
    tools_mode: str
    official_match: str | None  # the official template it is identical to
    closest_official: str | None
    findings: list[Finding]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["findings"] = [f.to_dict() for f in self.findings]
        return d


@dataclass
class VocabInfo:
    tokens: dict[str, int]  # text -> first id
    types: list[int]
    eog_ids: set[int]

    def token_type(self, text: str) -> int | None:
        i = self.tokens.get(text)
        return None if i is None or i >= len(self.types) else self.types[i]


# -- helpers ------------------------------------------------------------------------------------------


def _render(
    source: str,
    messages: list[dict[str, Any]],
    *,
    tools: Any = None,
    gen: bool = True,
    bos: str = "",
    eos: str = "",
) -> tuple[str | None, str | None]:
    """(output, error)."""
    from app.engine.errors import TemplateRenderError
    from app.engine.templates import render_template

    try:
        return render_template(
            source, messages, tools=tools, add_generation_prompt=gen, bos_token=bos, eos_token=eos
        ), None
    except TemplateRenderError as exc:
        return None, str(exc)


def _line(source: str, *patterns: str) -> tuple[int | None, str | None]:
    """(1-based line, its text) of the first line matching any pattern, tried in order."""
    lines = source.splitlines()
    for pat in patterns:
        rx = re.compile(pat)
        for i, text in enumerate(lines, start=1):
            if rx.search(text):
                return i, _clip(text)
    return None, None


def _clip(text: str, n: int = 200) -> str:
    text = text.strip()
    if len(text) <= n:
        return text
    return text[:n] + "…"


def _call_msg(call_id: str, content: Any = "") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": _CALL_NAME, "arguments": {"key": _ARG}}}
        ],
    }


def _tool_msg(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": _CALL_NAME, "content": _RESULT}


# -- the checks ------------------------------------------------------------------------------------------


def lint_template(
    source: str,
    *,
    name: str = "chat_template",
    bos: str = "",
    eos: str = "",
    vocab: VocabInfo | None = None,
    official_dir: str | Path | None = None,
) -> TemplateReport:
    """Every finding for one template (and, given ``vocab``, its tokenizer). Never raises on a bad
    template: one that cannot render a plain conversation (it does not compile, raises, tries an
    unsafe operation, is too slow) gets one ``template_error`` finding saying so, and one that runs
    out of :data:`LINT_SECONDS` during the checks gets that finding instead of the others."""
    from app.engine.templates import render_deadline

    # Every render of this lint shares one deadline; a template that runs out of it is reported as
    # too slow, not with findings read from renders that never ran.
    with render_deadline(LINT_SECONDS):
        report = _lint_template(source, name, bos, eos, vocab, official_dir)
    return report


def _template_error(source: str, name: str, bos: str, eos: str) -> Finding | None:
    """A finding when the template cannot render a plain conversation at all (with tools or
    without): it does not compile, raises, tries an unsafe operation, or is too slow or too big."""
    from app.engine.errors import TemplateRenderError
    from app.engine.templates import compile_template

    try:
        compile_template(source)
    except TemplateRenderError as exc:
        message = str(exc)
        m = re.search(r"at line (\d+)", message)
        line = int(m.group(1)) if m else None
        lines = source.splitlines()
        text = _clip(lines[line - 1]) if line is not None and 0 < line <= len(lines) else None
        return Finding(
            "template_error",
            "error",
            "The template does not compile",
            f"{message}.",
            "Callisto cannot render a prompt through it: chat and the server refuse the model with this "
            "error, and tools are off. No other check ran.",
            line,
            text,
            list(CALL_CATEGORIES),
            name,
        )
    from app.engine.templates import template_tools_mode

    plain, err = _render(source, [{"role": "user", "content": _USER}], bos=bos, eos=eos)
    if plain is not None:
        return None
    # tool_use templates (Command R+) and FireFunction v2 render only with tools (or their own
    # ``functions`` variable): a template that renders them in any of its ways is not broken.
    if template_tools_mode(source) != "none":
        return None
    message = err or "it failed"
    if "unsafe operation" in message:
        title = "The template tries an unsafe operation"
        where = _line(source, r"__\w+__", r"\._\w")
    elif "took too long" in message:
        title = "The template takes too long to render"
        where = _line(source, r"\bfor\b", r"\bmacro\b")
    elif "raised an exception" in message and "raise_exception" in source:
        title = "The template raises an error on a plain conversation"
        where = _line(source, r"raise_exception")
    else:
        title = "The template fails to render"
        where = (None, None)
    return Finding(
        "template_error",
        "error",
        title,
        f"Rendering one user message fails: {_clip(message, 300)}.",
        "Callisto renders templates in a sandbox with bounded time and memory and refuses this one with "
        "that error: chat and the server cannot use the model through it, and tools are off. No other "
        "check ran.",
        where[0],
        where[1],
        list(CALL_CATEGORIES),
        name,
    )


def _lint_template(
    source: str,
    name: str,
    bos: str,
    eos: str,
    vocab: VocabInfo | None,
    official_dir: str | Path | None,
) -> TemplateReport:
    from app.engine.detection import detect_tool_format
    from app.engine.templates import template_tools_mode

    broken = _template_error(source, name, bos, eos)
    if broken is not None:
        match, closest, _ = _compare_official(source, official_dir, name)
        return TemplateReport(
            template=name,
            sha256=hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
            detected_format=None,
            tools_mode="none",
            official_match=match,
            closest_official=closest,
            findings=[broken],
        )
    findings: list[Finding] = []
    errors: list[str] = []

    def render(
        messages: list[dict[str, Any]], *, tools: Any = None, gen: bool = True
    ) -> tuple[str | None, str | None]:
        out, err = _render(source, messages, tools=tools, gen=gen, bos=bos, eos=eos)
        if err is not None:
            errors.append(err)
        return out, err

    def add(
        fid: str,
        severity: str,
        title: str,
        explanation: str,
        callisto: str,
        line: tuple[int | None, str | None] = (None, None),
        categories: list[str] | None = None,
    ) -> None:
        findings.append(
            Finding(
                fid,
                severity,
                title,
                explanation,
                callisto,
                line[0],
                line[1],
                categories if categories is not None else list(CALL_CATEGORIES),
                name,
            )
        )

    try:
        mode = template_tools_mode(source)
    except Exception:  # noqa: BLE001 - a template that breaks the probe renders no tools
        mode = "none"
    family = detect_tool_format(source, None, bos_token=bos, eos_token=eos)
    on_system = mode in ("system_message", "system_list")  # the tools go on the system message
    tools = None if mode == "none" or on_system else _TOOLS
    base_sys: dict[str, Any] = {"role": "system", "content": _SYS}
    if on_system:
        import json

        base_sys = dict(base_sys, tools=json.dumps(_TOOLS) if mode == "system_message" else _TOOLS)

    # 1. tools variable
    if mode == "none":
        add(
            "no_tools_variable",
            "error",
            "No tools variable: tools are ignored",
            "The template never renders the tools it is given, so the model is never shown a tool.",
            "With chat.tool_format=auto tools are off (a notice says so); choose a format and Callisto writes the "
            "schemas and an example call into the system message.",
            _line(source, r"\btools?\b", r"system"),
        )
    elif on_system:
        what = "a JSON string" if mode == "system_message" else "the tool list"
        add(
            "no_tools_variable",
            "warning",
            "No tools variable: tools are read from the system message",
            f"The template ignores the standard `tools` variable and reads {what} from the system "
            "message's `tools` key; OpenAI-style clients that pass `tools` are silently ignored.",
            f"Callisto detects this and passes {what} in the system message's tools key.",
            _line(source, r"'tools' in message", r"message\[.tools.\]", r"\btools\b"),
        )

    # 2-3. results and ids in a rendered round trip (a valid 9-character id)
    convo = [base_sys, {"role": "user", "content": _USER}, _call_msg(_GOOD_ID), _tool_msg(_GOOD_ID)]
    out, err = render(convo, tools=tools)
    calls_rendered = out is not None and _ARG in out
    if out is not None and calls_rendered and _RESULT not in out:
        add(
            "tool_results_dropped",
            "error",
            "Tool results are dropped",
            "The template renders the assistant's calls but never the tool results, so a model cannot use a "
            "result in its next step.",
            "Multi-turn tool use cannot work through this template; Callisto reports it (red multi_turn cells).",
            _line(source, r"role\W+==\W+.tool", r"'tool'|\"tool\"", r"tool_calls"),
            ["multi_turn", "reasoning"],
        )
    elif out is None and mode != "none":
        head, _ = render(
            [base_sys, {"role": "user", "content": _USER}, _call_msg(_GOOD_ID)],
            tools=tools,
        )
        if head is not None:
            add(
                "tool_results_dropped",
                "error",
                "A tool result makes the template fail",
                f"Rendering a tool message raises ({_clip(err or '', 120)}), so no result can reach the model.",
                "Callisto's render fails on such a conversation and says so; multi-turn tool use is not possible.",
                _line(source, r"raise_exception", r"'tool'|\"tool\""),
                ["multi_turn", "reasoning"],
            )
    if out is not None and calls_rendered and _RESULT in out and _GOOD_ID not in out:
        add(
            "call_ids_dropped",
            "info",
            "Call ids are dropped",
            "Calls and results are rendered without their ids, so results pair with calls by order only.",
            "Callisto feeds results back in call order, which keeps the pairs right; parallel calls with results "
            "out of order would be ambiguous to the model.",
            _line(source, r"tool_call(\.function)?\.name", r"tool_call\[.function.\]", r"tool_calls"),
            ["parallel", "multi_turn"],
        )
    if out is not None:
        long_out, long_err = render(
            [base_sys, {"role": "user", "content": _USER}, _call_msg(_LONG_ID), _tool_msg(_LONG_ID)],
            tools=tools,
        )
        if long_out is None:
            add(
                "call_id_length_9",
                "warning",
                "Call ids must be 9 characters",
                f"The template raises on a call id that is not exactly 9 characters ({_clip(long_err or '', 100)}); "
                "clients that pass OpenAI-style ids (call_...) fail on the second turn.",
                "Callisto maps call ids to 9 letters and digits (call00000, hist00001...) before rendering.",
                _line(source, r"length\s*!=\s*9", r"length\s*==\s*9", r"\b9\b.*id|id.*\b9\b"),
                ["multi_turn", "parallel"],
            )

    # 4. strict alternation
    one, _ = render([{"role": "user", "content": _USER}], tools=tools)
    two, two_err = render(
        [{"role": "user", "content": _USER}, {"role": "user", "content": _USER2}],
        tools=tools,
    )
    if one is not None and two is None:
        add(
            "strict_alternation",
            "warning",
            "Strict role alternation",
            f"The template raises when two user turns follow each other ({_clip(two_err or '', 100)}).",
            "Callisto merges consecutive user turns and retries, so its own conversations render.",
            _line(source, r"raise_exception.*(altern|order|must)", r"raise_exception"),
            ["multi_turn"],
        )

    # 5. system prompt after a tool result
    plain, _ = render([base_sys, {"role": "user", "content": _USER}], tools=tools)
    if plain is not None and _SYS in plain and out is not None and _SYS not in out:
        add(
            "system_dropped_after_tool",
            "warning",
            "System prompt dropped after a tool result",
            "The system prompt is rendered for a plain turn but disappears once the last message is a tool result.",
            "Callisto keeps the system prompt in the conversation, but through this template the model loses it "
            "while it works with tool results; keep lasting instructions in the first user message.",
            _line(source, r"system_message", r"messages\[0\].*system", r"'system'|\"system\""),
            ["multi_turn", "reasoning"],
        )

    # 6. content null on a tool-call turn
    if calls_rendered:
        null_out, null_err = render(
            [base_sys, {"role": "user", "content": _USER}, _call_msg(_GOOD_ID, None), _tool_msg(_GOOD_ID)],
            tools=tools,
        )
        if null_out is None or ("None" in null_out and "None" not in (out or "")):
            why = f"raises ({_clip(null_err or '', 100)})" if null_out is None else "writes the text None"
            add(
                "content_null_on_call",
                "warning",
                "Assumes content is not null on a tool-call turn",
                f"An assistant turn with calls and content null (what OpenAI clients send) {why}.",
                "Callisto always renders an empty string for such a turn; clients sending null to a server with "
                "this template fail on their second request.",
                _line(
                    source,
                    r"\+\s*message(\.content|\[.content.\])",
                    r"message(\.content|\[.content.\])\s*\+",
                    r"content",
                ),
                ["multi_turn", "reasoning"],
            )

    # 7. doubled braces in instructions
    if mode != "none":
        rendered_tools, _ = render([{"role": "user", "content": _USER}], tools=tools)
        if on_system:
            rendered_tools, _ = render([base_sys, {"role": "user", "content": _USER}])
        if rendered_tools and re.search(r'\{\{\s*\\?"(name|function|arguments)"', rendered_tools):
            add(
                "doubled_braces",
                "warning",
                "Doubled braces in the call instructions",
                'The instructions show the call format as {{"name": ...}}: small models copy the doubled braces '
                "and their calls are not JSON.",
                "Callisto's parser does not guess (a reply with doubled braces is shown as text, scored "
                "unparsed_tool_call); hermes guidance from another template avoids it.",
                _line(source, r'\{\{\\?"name', r"\{\{\s*\\\"", r"\{\{\""),
                ["single", "parallel", "streaming", "multi_turn", "tool_choice", "negative", "reasoning"],
            )

    # 8-9. vocabulary: call marker and end of turn
    if vocab is not None:
        findings.extend(_vocab_findings(source, family, vocab, name, bos, eos))

    # 10. reasoning kept in history
    if re.search(r"</think>|\[/THINK\]|<channel\|>|reasoning_content", source):
        hist = [
            {"role": "user", "content": _USER},
            {"role": "assistant", "content": f"<think>{_REASON}</think>{_ANSWER}"},
            {"role": "user", "content": _USER2},
        ]
        r_out, _ = render(hist, tools=None)
        if r_out is not None and _REASON in r_out:
            add(
                "reasoning_not_stripped",
                "info",
                "Old reasoning is not stripped from history",
                "A past turn's <think> block is rendered back into the prompt, costing context and confusing the "
                "model about what it said.",
                "Callisto keeps reasoning out of the content (its own field, passed as reasoning_content); clients "
                "that send <think> inside content get it replayed.",
                _line(source, r"</think>|\[/THINK\]|<channel\|>", r"reasoning_content"),
                ["reasoning", "multi_turn"],
            )

    if any("took too long" in e for e in errors):  # the checks ran out of time: their findings mean nothing
        findings = [
            Finding(
                "template_error",
                "error",
                "The template takes too long to render",
                f"Its renders took more than the {LINT_SECONDS:g} s the checks of one template get.",
                "Callisto renders templates with a time limit; through this one every prompt is slow or "
                "refused. The other checks were not finished.",
                None,
                None,
                list(CALL_CATEGORIES),
                name,
            )
        ]

    # 11. official comparison
    match, closest, diff = _compare_official(source, official_dir, name)
    if match is None and closest is not None:
        add(
            "differs_from_official",
            "info",
            f"Differs from the official template {closest}",
            f"The template is close to {closest} but not the same: {diff['summary']}",
            "Callisto renders the template as it is; a changed line here is the first suspect for a red cell that "
            "the official template's models pass.",
            (diff["line"], diff["line_text"]),
            [],
        )
    return TemplateReport(
        template=name,
        sha256=hashlib.sha256(source.encode("utf-8")).hexdigest(),
        detected_format=family,
        tools_mode=mode,
        official_match=match,
        closest_official=closest,
        findings=findings,
    )


def _eot_marker(source: str, bos: str, eos: str) -> str | None:
    """The special-token-looking text the template writes right after an assistant turn's content."""
    out, _ = _render(
        source,
        [{"role": "user", "content": _USER}, {"role": "assistant", "content": _ANSWER}],
        gen=False,
        bos=bos,
        eos=eos,
    )
    if not out or _ANSWER not in out:
        return None
    after = out.split(_ANSWER, 1)[1]
    m = re.match(r"\s*(<[|｜]?[^<>\s]{1,40}[|｜]?>|\[/?[A-Z_]{2,20}\])", after)
    return m.group(1) if m else None


def _vocab_findings(
    source: str, family: str | None, vocab: VocabInfo, name: str, bos: str, eos: str
) -> list[Finding]:
    from app.engine.formats import FORMATS

    out: list[Finding] = []
    if family in FORMATS:
        fmt = FORMATS[family]
        # openers that are not the family's published call marker (a deviation real models write, a
        # response or citation marker read at the same place) say nothing about the vocabulary
        not_markers = set(getattr(fmt, "non_marker_openers", ()))
        for marker in fmt.openers:
            if len(marker) < 3 or marker.isalnum() or marker in not_markers:
                continue  # "{" and "[": ordinary text, not a marker token
            line = _line(source, re.escape(marker))
            if marker not in vocab.tokens:
                out.append(
                    Finding(
                        "marker_not_single_token",
                        "info",
                        f"Call marker {marker} is not one token",
                        f"The {family} call marker {marker} is not in the vocabulary, so the model writes it in pieces "
                        "and a stack that watches for the marker's token id never sees it.",
                        "Callisto parses the decoded text, so calls are still found; llama-server-style token triggers "
                        "may miss them.",
                        line[0],
                        line[1],
                        list(CALL_CATEGORIES),
                        name,
                    )
                )
            elif vocab.token_type(marker) == TOKEN_CONTROL:
                out.append(
                    Finding(
                        "marker_is_control_token",
                        "warning",
                        f"Call marker {marker} is a control token",
                        f"{marker} is a control token: detokenizers that skip special tokens drop it, so the call is "
                        "invisible unless special tokens are decoded.",
                        "Callisto decodes special tokens (token_bytes(special=True)), so it sees the marker; servers "
                        "that hide specials show a call as plain JSON or nothing.",
                        line[0],
                        line[1],
                        list(CALL_CATEGORIES),
                        name,
                    )
                )
    eot = _eot_marker(source, bos, eos)
    if eot is not None:
        line = _line(source, re.escape(eot))
        tid = vocab.tokens.get(eot)
        if tid is None:
            out.append(
                Finding(
                    "eot_not_in_vocab",
                    "error",
                    f"End-of-turn {eot} is not in the vocabulary",
                    f"The template ends an assistant turn with {eot}, which is no token of this model: the model can "
                    "never write it, so its replies do not end where the template expects.",
                    "Callisto stops on the model's end-of-generation tokens and the token limit only; expect replies "
                    "that run on (finish_reason length).",
                    line[0],
                    line[1],
                    list(CALL_CATEGORIES),
                    name,
                )
            )
        elif tid not in vocab.eog_ids and eot not in _AUTO_EOG:
            out.append(
                Finding(
                    "eot_not_eog",
                    "warning",
                    f"End-of-turn {eot} does not stop generation",
                    f"{eot} is a token but not in the end-of-generation set (eos/eot/eom ids): after the reply the model "
                    "keeps going, often writing a new turn.",
                    "Callisto stops on the end-of-generation set llama.cpp reports; fix the GGUF's eos/eot id "
                    "(gguf-set-metadata) or expect long replies.",
                    line[0],
                    line[1],
                    list(CALL_CATEGORIES),
                    name,
                )
            )
    return out


# -- official templates ----------------------------------------------------------------------------------


def _official_dirs(extra: str | Path | None) -> list[Path]:
    dirs = []
    if extra is not None:
        dirs.append(Path(extra))
    env = os.environ.get("CALLISTO_OFFICIAL_TEMPLATES")
    if env:
        dirs.append(Path(env))
    dirs.append(Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "chat_templates")
    return [d for d in dirs if d.is_dir()]


@lru_cache(maxsize=4)
def _load_official(dirs: tuple[Path, ...]) -> tuple[tuple[str, str], ...]:
    out = []
    from app.files import read_text_file

    for d in dirs:
        for f in sorted(d.rglob("*.jinja")):
            try:
                out.append(
                    (f.relative_to(d).as_posix(), read_text_file(f, max_bytes=MAX_TEMPLATE_FILE_BYTES))
                )
            except (OSError, UnicodeDecodeError):  # a FIFO, a device, too big, not UTF-8: not an official one
                continue
    return tuple(out)


def official_templates(official_dir: str | Path | None = None) -> list[tuple[str, str]]:
    """(name, source) of every official template found (the repository's tests/fixtures/chat_templates)."""
    return list(_load_official(tuple(_official_dirs(official_dir))))


def _norm(source: str) -> str:
    return source.replace("\r\n", "\n").strip()


def _compare_official(
    source: str, official_dir: str | Path | None, name_hint: str = ""
) -> tuple[str | None, str | None, dict[str, Any]]:
    """(identical official name, closest official name, what changed)."""
    officials = official_templates(official_dir)
    mine = _norm(source)
    officials.sort(key=lambda o: o[0] != name_hint)  # an identical file of the same name first
    for name, src in officials:
        if _norm(src) == mine:
            return name, name, {}
    mine_lines = mine.splitlines()
    best: tuple[float, str, str] | None = None
    for name, src in officials:
        theirs = _norm(src).splitlines()
        sm = difflib.SequenceMatcher(None, theirs, mine_lines, autojunk=False)
        if sm.real_quick_ratio() < 0.6 or sm.quick_ratio() < 0.6:
            continue
        r = sm.ratio()
        if best is None or r > best[0]:
            best = (r, name, src)
    if best is None or best[0] < 0.6:
        # one-line templates: compare characters
        for name, src in officials:
            sm = difflib.SequenceMatcher(None, _norm(src), mine, autojunk=False)
            if sm.real_quick_ratio() >= 0.85 and sm.quick_ratio() >= 0.85 and sm.ratio() >= 0.85:
                if best is None or sm.ratio() > best[0]:
                    best = (sm.ratio(), name, src)
    if best is None or best[0] < 0.6:
        return None, None, {}
    _, name, src = best
    theirs = _norm(src).splitlines()
    changes: list[str] = []
    first_line = None
    first_text = None
    sm = difflib.SequenceMatcher(None, theirs, mine_lines, autojunk=False)
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        if op == "equal":
            continue
        if first_line is None:
            first_line = b0 + 1 if b0 < len(mine_lines) else len(mine_lines)
            first_text = _clip(mine_lines[b0]) if b0 < len(mine_lines) else None
        if op == "replace":
            changes.append(f"line {b0 + 1} changed: {_char_change(theirs[a0], mine_lines[b0])}")
        elif op == "delete":
            changes.append(f"official lines {a0 + 1}-{a1} removed ({_clip(theirs[a0], 60)!r}...)")
        else:
            changes.append(f"lines {b0 + 1}-{b1} added ({_clip(mine_lines[b0], 60)!r}...)")
    summary = "; ".join(changes[:3]) + (
        f"; and {len(changes) - 3} more change(s)" if len(changes) > 3 else ""
    )
    return None, name, {"summary": summary or "whitespace only", "line": first_line, "line_text": first_text}


def _char_change(old: str, new: str, ctx: int = 12) -> str:
    """Where two versions of a line differ: ``'...{\\"name' -> '...{{\\"name' at column 120``."""
    i = 0
    while i < min(len(old), len(new)) and old[i] == new[i]:
        i += 1
    j = 0
    while j < min(len(old), len(new)) - i and old[len(old) - 1 - j] == new[len(new) - 1 - j]:
        j += 1
    start = max(0, i - ctx)
    a, b = old[start : len(old) - j + ctx], new[start : len(new) - j + ctx]
    return f"{a[:80]!r} -> {b[:80]!r} at column {i + 1}"


# -- GGUF files ------------------------------------------------------------------------------------------


def read_vocab(path: str | Path, meta: Any = None) -> VocabInfo | None:
    """The GGUF's token texts, token types and end-of-generation ids (read with gguf-py, no llama.cpp)."""
    try:
        import gguf

        reader = gguf.GGUFReader(str(path))
        f_tokens = reader.fields.get("tokenizer.ggml.tokens")
        if f_tokens is None:
            return None
        texts = [bytes(f_tokens.parts[i]).decode("utf-8", "replace") for i in f_tokens.data]
        f_types = reader.fields.get("tokenizer.ggml.token_type")
        types = [int(f_types.parts[i][0]) for i in f_types.data] if f_types is not None else []

        def scalar(key: str) -> int | None:
            f = reader.fields.get(key)
            if f is None:
                return None
            try:
                return int(f.parts[f.data[0]][0])
            except (IndexError, TypeError, ValueError):
                return None
    except Exception:  # noqa: BLE001 - a file the reader cannot parse has no vocabulary to lint
        return None
    tokens: dict[str, int] = {}
    for i, t in enumerate(texts):
        tokens.setdefault(t, i)
    eog = {
        i
        for i in (
            scalar("tokenizer.ggml.eos_token_id"),
            scalar("tokenizer.ggml.eot_token_id"),
            scalar("tokenizer.ggml.eom_token_id"),
        )
        if i is not None
    }
    return VocabInfo(tokens=tokens, types=types, eog_ids=eog)


def lint_gguf(path: str | Path, *, official_dir: str | Path | None = None) -> dict[str, Any]:
    """A report for every chat template in a GGUF (``tokenizer.chat_template``, ``.tool_use``, named
    variants) with the tokenizer checks. Raises GGUFMetadataError for a file that is not a GGUF."""
    from app.engine.models.metadata import read_metadata

    meta = read_metadata(path)
    vocab = read_vocab(path, meta)
    templates: list[tuple[str, str]] = []
    if meta.chat_template:
        templates.append(("chat_template", meta.chat_template))
    for name, src in sorted(meta.named_templates.items()):
        if isinstance(src, str) and src.strip():
            templates.append((f"chat_template.{name}", src))
    reports = [
        lint_template(
            src,
            name=name,
            bos=meta.bos_token or "",
            eos=meta.eos_token or "",
            vocab=vocab,
            official_dir=official_dir,
        )
        for name, src in templates
    ]
    findings = [f.to_dict() for r in reports for f in r.findings]
    if not templates:
        findings.append(
            Finding(
                "no_tools_variable",
                "error",
                "No chat template",
                "The GGUF has no chat template at all, so it renders no tools.",
                "Callisto formats the conversation with its fallback ChatML template and tools "
                "are off unless you choose a format.",
                None,
                None,
                list(CALL_CATEGORIES),
                "(none)",
            ).to_dict()
        )
    return {
        "path": str(path),
        "file_name": Path(path).name,
        "vocab_read": vocab is not None,
        "templates": [r.to_dict() for r in reports],
        "findings": findings,
    }
