"""Shape messages so that every supported template accepts them, and render the prompt
through the GGUF's own template (``app.engine.templates``: Jinja's sandbox).

Shapes (ADR 0061 and past its walls):

* an assistant tool-call turn always has string content (``""`` when it has no text) and
  OpenAI-style ``tool_calls`` (``{"id", "type": "function", "function": {"name", "arguments"}}``
  with arguments as an object);
* call ids are 9 alphanumerics: local ids are ``call00000``..., replayed ids that are not
  9 alphanumerics become ``hist00000``... (the tool result that answers them follows);
* tool results carry ``tool_call_id`` and ``name``;
* reasoning goes back as ``reasoning_content`` (Qwen3 and others) for templates that read it;
* a template that requires alternating user/assistant turns (Mistral) is rendered again
  with consecutive same-role turns merged, instead of failing;
* a template that reads tools from the system message instead of the ``tools`` variable
  (Phi-4-mini) gets them there, as a JSON string;
* with tools on, a ``tokenizer.chat_template.tool_use`` template is used when present.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from app.engine.messages import Message, is_valid_call_id, local_call_id

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel

__all__ = [
    "PromptRenderError",
    "RenderedPrompt",
    "choose_template",
    "render_messages",
    "render_prompt",
    "shape_messages",
    "template_tools_mode",
]


class PromptRenderError(RuntimeError):
    """The model's chat template failed on this conversation (the message says how)."""


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    template: str  # "chat_template", "tool_use" or "fallback"
    tools_sent: bool
    merged_turns: bool = False
    tools_mode: str = "variable"  # "variable" or "system_message"


def choose_template(model: LoadedModel, tools_on: bool) -> tuple[str, str]:
    """(source, name): the ``tool_use`` template when tools are on and it exists."""
    if tools_on and model.tool_use_template:
        return model.tool_use_template, "tool_use"
    if model.template_is_fallback:
        return model.chat_template, "fallback"
    return model.chat_template, "chat_template"


def shape_messages(messages: Sequence[Message], *, merge_turns: bool = False) -> list[dict[str, Any]]:
    """Template-ready dicts (see the module docstring for the shapes)."""
    id_map: dict[str, str] = {}
    names: dict[str, str] = {}
    counter = 0

    def replay_id(original: str) -> str:
        nonlocal counter
        if is_valid_call_id(original):
            return original
        if original in id_map:
            return id_map[original]
        new = local_call_id(counter, "hist")
        counter += 1
        if original:
            id_map[original] = new
        return new

    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content or ""}
            if m.reasoning:
                d["reasoning_content"] = m.reasoning
            if m.tool_calls:
                calls = []
                for c in m.tool_calls:
                    cid = replay_id(c.id)
                    names[cid] = c.name
                    calls.append({"id": cid, "type": "function",
                                  "function": {"name": c.name, "arguments": dict(c.arguments)}})
                d["tool_calls"] = calls
        elif m.role == "tool":
            cid = replay_id(m.tool_call_id or "")
            d = {"role": "tool", "content": m.content or "", "tool_call_id": cid,
                 "name": m.name or names.get(cid, "")}
        else:
            d = {"role": m.role, "content": m.content or ""}
        if (merge_turns and out and d["role"] in ("user", "assistant", "system")
                and out[-1]["role"] == d["role"] and "tool_calls" not in d and "tool_calls" not in out[-1]):
            prev = out[-1]
            prev["content"] = "\n\n".join(x for x in (prev["content"], d["content"]) if x)
            if d.get("reasoning_content"):
                prev["reasoning_content"] = "\n\n".join(
                    x for x in (prev.get("reasoning_content", ""), d["reasoning_content"]) if x)
            continue
        out.append(d)
    return out


_PROBE_NAME = "callisto_probe_tool_7f3a"
_PROBE_TOOLS = [{"type": "function", "function": {
    "name": _PROBE_NAME, "description": "probe", "parameters": {"type": "object", "properties": {}}}}]


@lru_cache(maxsize=64)
def template_tools_mode(source: str) -> str:
    """How a template takes tools: ``variable`` (the standard ``tools``), ``system_message``
    (Phi-4-mini: a JSON string in the system message's ``tools`` key) or ``none``."""
    from app.engine.templates import TemplateRenderError, render_template

    base = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    try:
        if _PROBE_NAME in render_template(source, base, tools=_PROBE_TOOLS):
            return "variable"
    except TemplateRenderError:
        pass
    sys_msgs = [{"role": "system", "content": "s", "tools": json.dumps(_PROBE_TOOLS)},
                {"role": "user", "content": "u"}]
    try:
        if _PROBE_NAME in render_template(source, sys_msgs):
            return "system_message"
    except TemplateRenderError:
        pass
    return "none"


def render_messages(
    source: str,
    messages: Sequence[Message],
    *,
    tools: list[dict[str, Any]] | None = None,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
    template_name: str = "chat_template",
) -> RenderedPrompt:
    """Render through ``source``; retry with merged turns if the template insists on
    alternation. Raises :class:`PromptRenderError` if the template still fails."""
    from app.engine.templates import TemplateRenderError, render_template

    mode = template_tools_mode(source) if tools else "variable"

    def attempt(merge: bool) -> str:
        shaped = shape_messages(messages, merge_turns=merge)
        kwargs: dict[str, Any] = {}
        if tools and mode == "system_message":
            payload = json.dumps(tools, ensure_ascii=False)
            if shaped and shaped[0]["role"] == "system":
                shaped[0]["tools"] = payload
            else:
                shaped.insert(0, {"role": "system", "content": "", "tools": payload})
        elif tools:
            kwargs["tools"] = tools
        return render_template(source, shaped, add_generation_prompt=add_generation_prompt,
                               bos_token=bos_token, eos_token=eos_token, **kwargs)

    try:
        text = attempt(False)
        merged = False
    except TemplateRenderError as first:
        try:
            text = attempt(True)
            merged = True
        except TemplateRenderError:
            raise PromptRenderError(f"the model's chat template failed: {first}") from first
    return RenderedPrompt(text=text, template=template_name, tools_sent=bool(tools), merged_turns=merged,
                          tools_mode=mode if tools else "variable")


def render_prompt(
    model: LoadedModel,
    messages: Sequence[Message],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
) -> RenderedPrompt:
    source, name = choose_template(model, bool(tools))
    return render_messages(source, messages, tools=tools or None, bos_token=model.bos_token,
                           eos_token=model.eos_token, add_generation_prompt=add_generation_prompt,
                           template_name=name)
