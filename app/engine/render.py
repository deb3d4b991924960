"""Shape messages so that every supported template accepts them, and render the prompt
through the GGUF's own template (``app.engine.templates``: Jinja's sandbox).

Shapes (what each template needs, past the limits of the usual renderers):

* an assistant tool-call turn always has string content (``""`` when it has no text) and
  OpenAI-style ``tool_calls`` (``{"id", "type": "function", "function": {"name", "arguments"}}``
  with arguments as an object);
* call ids are 9 alphanumerics: local ids are ``call00000``..., replayed ids that are not
  9 alphanumerics become ``hist00000``... (the tool result that answers them follows);
* tool results carry ``tool_call_id`` and ``name``;
* a template that renders a past call only from an assistant message's ``metadata`` and knows
  nothing of ``tool_calls`` (GLM-4's) gets each call as such a message (the tool's name, the
  arguments' JSON) and each result as an ``observation`` message (:func:`reads_metadata_calls`);
* reasoning goes back as ``reasoning_content`` (Qwen3 and others) for templates that read it,
  and as ``thinking`` for templates that read that key instead (gpt-oss, LFM2.5: found by a trial
  render, ``app.engine.thinking``), so a tool round's prompt extends the last one (KV reuse);
* a thinking choice (``app.engine.thinking.Thinking``) renders through the template's own switch:
  a variable (``enable_thinking``, ``reasoning_effort``...), ``/no_think`` in the system message, or
  a pre-closed reasoning block after the generation prompt (``RenderedPrompt.thinking`` says which);
* a template that requires alternating user/assistant turns (Mistral) is rendered again
  with consecutive same-role turns merged, instead of failing;
* a template that reads tools from the system message instead of the ``tools`` variable
  gets them there: as a JSON string (Phi-4-mini) or as the list itself (GLM-4-9B-chat); one
  that reads them from its own ``functions`` variable (FireFunction v2: a JSON string of the
  function specs, with the date in ``datetime``) gets them there (``tools_mode ==
  "functions"``, :func:`functions_variables`);
* with tools on, a ``tokenizer.chat_template.tool_use`` template is used when present;
* a template that does not render tools at all (a plain ChatML template, the fallback), when a
  tool-call format was chosen explicitly, gets the schemas and an example call in that format's
  syntax in its system message (``app.engine.formats.guidance``; ``tools_mode == "guidance"``),
  merged with the conversation's own system prompt; past calls are replayed as text in that
  syntax, since such a template does not render ``tool_calls`` either, and results go back as
  the user's words where it has no tool role (:func:`renders_tool_results`). A template that
  already renders the tools gets no guidance.
* a user message's images (``Message.images``) go before its text, one place per image: each
  place is a mark made for this render alone (a random nonce between NUL characters, which no
  message text holds), the template renders it as text, and the output is split at the marks
  into an ``app.engine.vision.ImagePrompt`` (``RenderedPrompt.text``: a ``str`` whose ``parts``
  are the text and the images' bytes, in order). Nothing user text writes can place an image. A
  template that drops or repeats a message's content (so an image's place is lost or doubled)
  is a :class:`PromptRenderError`. ``RenderedPrompt.images`` counts them.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from app.engine.errors import PromptRenderError, TemplateRenderError
from app.engine.formats.guidance import call_example, tool_guidance
from app.engine.formats.sections import json_text
from app.engine.messages import Message, is_valid_call_id, local_call_id
from app.engine.templates import functions_variables, render_template, template_tools_mode
from app.engine.thinking import Thinking, thinking_control
from app.engine.vision import image_prompt

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel

__all__ = [
    "RenderedPrompt",
    "choose_template",
    "reads_metadata_calls",
    "render_messages",
    "render_prompt",
    "renders_tool_results",
    "shape_messages",
]


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    template: str  # "chat_template", "tool_use" or "fallback"
    tools_sent: bool
    merged_turns: bool = False
    # how the tools reached the prompt: "variable" (the template's ``tools``), "system_message"
    # (Phi-4-mini's JSON string), "system_list" (GLM-4-9B-chat: the list on the system message),
    # "functions" (FireFunction v2), "guidance" (schemas and the chosen format's call syntax written
    # into the system message) or "none" (the template ignored them: nothing reached the prompt)
    tools_mode: str = "variable"
    # how a thinking choice reached the prompt ("" : the template's default)
    thinking: str = ""
    # the images the prompt holds (``text`` is then an ``app.engine.vision.ImagePrompt``)
    images: int = 0


_RESERVED_VARIABLES = frozenset(
    {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token", "functions", "datetime"}
)


def choose_template(model: LoadedModel, tools_on: bool) -> tuple[str, str]:
    """(source, name): the ``tool_use`` template when tools are on and it exists."""
    if tools_on and model.tool_use_template:
        return model.tool_use_template, "tool_use"
    if model.template_is_fallback:
        return model.chat_template, "fallback"
    return model.chat_template, "chat_template"


def _arguments(arguments: dict[str, Any] | str) -> dict[str, Any] | str:
    """A call's arguments for a template: a copy of the object, or the client's JSON text parsed
    (kept as text when it is not a JSON object: the template shows what the client sent)."""
    if isinstance(arguments, dict):
        return dict(arguments)
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    return parsed if isinstance(parsed, dict) else arguments


def _as_object(arguments: dict[str, Any] | str) -> dict[str, Any]:
    value = _arguments(arguments)
    return value if isinstance(value, dict) else {}


def shape_messages(
    messages: Sequence[Message],
    *,
    merge_turns: bool = False,
    calls_as: str | None = None,
    results_as_user: bool = False,
    reasoning_key: str = "reasoning_content",
    image_mark: str | None = None,
    history_id: str | None = None,
    metadata_calls: bool = False,
    reasoning_pads: tuple[bool, bool] = (False, False),
) -> list[dict[str, Any]]:
    """Template-ready dicts (see the module docstring for the shapes).

    ``calls_as``: a tool-call format family; assistant calls are then written into the turn's
    content in that family's syntax instead of ``tool_calls`` (for templates that ignore them).
    ``results_as_user``: tool results become user turns (for templates that reject the role).
    ``reasoning_key``: the key an assistant turn's reasoning goes back under.
    ``image_mark``: a user message's images become ``f"{image_mark}{n}\\x00"`` (``n`` counting the
    conversation's images from 0) before its text (:func:`render_messages` splits there); None:
    images are left out.
    ``history_id``: the shape of the ids calls get (the family's ``history_id``, with ``{name}``
    and ``{index}``), a tool result the id its call got; None: valid ids are kept.
    ``metadata_calls``: each call becomes an assistant message whose ``metadata`` is the tool's
    name and whose content is the arguments' JSON, each result an ``observation`` message (the
    shape GLM-4's templates render, :func:`reads_metadata_calls`).
    ``reasoning_pads``: the template writes a line break before / after the reasoning, so one the
    reply wrote there is left out (the prompt then repeats the reply as it was written)."""
    id_map: dict[str, str] = {}
    names: dict[str, str] = {}
    counter = 0

    def replay_id(original: str, name: str | None = None) -> str:
        """The id a call (``name``: its tool) or a tool result (``name`` None) is rendered with."""
        nonlocal counter
        if original in id_map:
            return id_map[original]
        if history_id is not None and name is not None:
            new = history_id.format(name=name, index=counter)
        elif is_valid_call_id(original):
            return original
        else:
            new = local_call_id(counter, "hist")
        counter += 1
        if original:
            id_map[original] = new
        return new

    out: list[dict[str, Any]] = []
    n_images = 0
    for m in messages:
        if m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content or ""}
            if m.reasoning:
                reasoning = m.reasoning.removeprefix("\n") if reasoning_pads[0] else m.reasoning
                d[reasoning_key] = reasoning.removesuffix("\n") if reasoning_pads[1] else reasoning
            if m.tool_calls:
                calls = []
                for c in m.tool_calls:
                    cid = replay_id(c.id, c.name)
                    names[cid] = c.name
                    calls.append(
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": c.name, "arguments": _arguments(c.arguments)},
                        }
                    )
                if metadata_calls:
                    # GLM-4: each call an assistant message of its own, the tool's name its
                    # ``metadata``, the arguments its content (as the model writes them); the
                    # turn's text a message before them, its reasoning on the first
                    messages_out = [_metadata_call(c.name, c.arguments) for c in m.tool_calls]
                    if d["content"]:
                        out.append(d)
                    elif reasoning_key in d:
                        messages_out[0][reasoning_key] = d[reasoning_key]
                    out.extend(messages_out)
                    continue
                if calls_as is None:
                    d["tool_calls"] = calls
                else:
                    written = "\n".join(
                        call_example(calls_as, c.name, _as_object(c.arguments)) for c in m.tool_calls
                    )
                    d["content"] = "\n".join(x for x in (d["content"], written) if x)
        elif m.role == "tool":
            cid = replay_id(m.tool_call_id or "")
            name = m.name or names.get(cid, "")
            if results_as_user:
                d = {"role": "user", "content": f"Result of the tool {name}:\n{m.content or ''}"}
            elif metadata_calls:
                d = {"role": "observation", "content": m.content or ""}
            else:
                d = {"role": "tool", "content": m.content or "", "tool_call_id": cid, "name": name}
        else:
            d = {"role": m.role, "content": m.content or ""}
            if m.images and image_mark is not None:
                marks = "".join(f"{image_mark}{n_images + i}\x00" for i in range(len(m.images)))
                n_images += len(m.images)
                d["content"] = marks + d["content"]
        if (
            merge_turns
            and out
            and d["role"] in ("user", "assistant", "system")
            and out[-1]["role"] == d["role"]
            and "tool_calls" not in d
            and "tool_calls" not in out[-1]
            and "metadata" not in out[-1]
        ):
            prev = out[-1]
            prev["content"] = "\n\n".join(x for x in (prev["content"], d["content"]) if x)
            if d.get(reasoning_key):
                prev[reasoning_key] = "\n\n".join(
                    x for x in (prev.get(reasoning_key, ""), d[reasoning_key]) if x
                )
            continue
        out.append(d)
    return out


def _metadata_call(name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """A call as GLM-4's templates render one: the name as ``metadata``, the arguments' JSON as
    content (a client's text that is no JSON object as it was sent)."""
    value = _arguments(arguments)
    return {
        "role": "assistant",
        "metadata": name,
        "content": value if isinstance(value, str) else json_text(value),
    }


# a message's ``metadata`` key, as GLM-4's templates read it
_METADATA = re.compile(r"""\[\s*['"]metadata['"]\s*\]|\.get\(\s*['"]metadata['"]|\.metadata\b""")


@lru_cache(maxsize=64)  # read once per template, as its other traits are
def reads_metadata_calls(source: str) -> bool:
    """Whether a template renders a past call from an assistant message's ``metadata`` (the
    tool's name) and knows nothing of ``tool_calls``: GLM-4's templates
    (``<|assistant|>{metadata}\\n{content}``, a result as ``<|observation|>``) render nothing of
    ``tool_calls`` and drop a ``tool`` message, so a tool round would lose the call and its result."""
    return bool(_METADATA.search(source)) and "tool_calls" not in source


_RESULT_PROBE = "tool-result-probe-5c1e"


@lru_cache(maxsize=64)
def renders_tool_results(source: str) -> bool:
    """Whether a template writes a ``tool`` message's content into the prompt after an assistant
    turn of text (as guidance replays a call: templates that render tools may want the call's
    ``tool_calls`` before it, and are not asked). One with no tool role (RWKV World's ``User:`` /
    ``Assistant:`` turns, Phi-3.5's) drops it without a word, so the model would never see what
    its tool answered; one that raises on the role cannot render it either. Read once per
    template, from a trial render."""
    trial = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
        {"role": "tool", "content": _RESULT_PROBE, "tool_call_id": "call0", "name": "probe"},
    ]
    try:
        return _RESULT_PROBE in render_template(source, trial, add_generation_prompt=True)
    except TemplateRenderError:
        return False


def _history_id(family: str | None) -> str | None:
    """The shape of the ids the family's calls are rendered with (None: as they are)."""
    if family is None:
        return None
    from app.engine.formats import FORMATS

    fmt = FORMATS.get(family)
    return None if fmt is None else fmt.history_id


def render_messages(
    source: str,
    messages: Sequence[Message],
    *,
    tools: list[dict[str, Any]] | None = None,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
    template_name: str = "chat_template",
    tool_format: str | None = None,
    thinking: Thinking | None = None,
    reasoning_markers: tuple[str, str] | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
) -> RenderedPrompt:
    """Render through ``source``; retry with merged turns if the template insists on
    alternation. Raises :class:`PromptRenderError` if the template still fails.

    ``template_kwargs``: more variables for the template, as a client names them (OpenAI's
    ``chat_template_kwargs``: ``{"enable_thinking": false}``); they win over the thinking choice's.
    The variables the renderer sets itself (``messages``, ``tools``, ``add_generation_prompt``,
    ``bos_token``, ``eos_token``) cannot be replaced this way and are ignored.

    ``tool_format``: the family the reply will be parsed in; when the template does not render
    ``tools``, the schemas and that family's call syntax go into the system message.
    ``thinking``: the thinking choice, rendered through the template's own switch
    (``app.engine.thinking``; ``reasoning_markers``: the family's reasoning tags, for a template
    whose only switch is a pre-closed block)."""
    mode = template_tools_mode(source) if tools else "variable"
    wants = thinking is not None and not thinking.is_default
    control = (
        thinking_control(source, reasoning_markers)
        if wants or any(m.reasoning for m in messages if m.role == "assistant")
        else None
    )
    plan = control.plan(thinking) if control is not None and wants else None
    reasoning_key = (control.reads_reasoning if control is not None else None) or "reasoning_content"
    history_id = _history_id(tool_format)
    images = [image for m in messages for image in m.images]
    image_mark = f"\x00image-{secrets.token_hex(8)}-" if images else None
    metadata_calls = reads_metadata_calls(source)
    guidance = None
    results_as_user = False
    if tools and mode == "none" and tool_format is not None:
        mode = "guidance"
        guidance = tool_guidance(tool_format, tools)
        # the guidance promises the result in the next message: where the template drops the
        # tool role, the result goes back as the user's words
        results_as_user = any(m.role == "tool" for m in messages) and not renders_tool_results(source)

    def attempt(merge: bool, fold_system: bool = False, args_text: bool = False) -> str:
        shaped = shape_messages(
            messages,
            merge_turns=merge,
            calls_as=tool_format if guidance else None,
            results_as_user=fold_system or results_as_user,
            reasoning_key=reasoning_key,
            image_mark=image_mark,
            history_id=history_id,
            metadata_calls=metadata_calls,
            reasoning_pads=control.pads_reasoning if control is not None else (False, False),
        )
        if args_text:  # templates that concatenate the arguments (Functionary v3.2) need JSON text
            for m in shaped:
                for call in m.get("tool_calls") or ():
                    fn = call.get("function")
                    if isinstance(fn, dict) and not isinstance(fn.get("arguments"), str):
                        fn["arguments"] = json.dumps(fn["arguments"], ensure_ascii=False)
        kwargs: dict[str, Any] = dict(plan.variables) if plan is not None else {}
        kwargs.update(
            (str(k), v) for k, v in (template_kwargs or {}).items() if str(k) not in _RESERVED_VARIABLES
        )
        if plan is not None and plan.tag:  # /no_think or /think at the end of the system message
            if shaped and shaped[0]["role"] == "system":
                shaped[0]["content"] = "\n".join(x for x in (shaped[0]["content"], plan.tag) if x)
            else:
                shaped.insert(0, {"role": "system", "content": plan.tag})
        if guidance is not None:
            if shaped and shaped[0]["role"] == "system":
                shaped[0]["content"] = "\n\n".join(x for x in (shaped[0]["content"], guidance) if x)
            else:
                shaped.insert(0, {"role": "system", "content": guidance})
            if fold_system:  # a template without a system role: the guidance opens the first user turn
                system = shaped.pop(0)["content"]
                first = next((d for d in shaped if d["role"] == "user"), None)
                if first is None:
                    shaped.insert(0, {"role": "user", "content": system})
                else:
                    first["content"] = system + "\n\n" + first["content"]
        elif tools and mode in ("system_message", "system_list"):
            payload = json.dumps(tools, ensure_ascii=False) if mode == "system_message" else tools
            if shaped and shaped[0]["role"] == "system":
                shaped[0]["tools"] = payload
            else:
                shaped.insert(0, {"role": "system", "content": "", "tools": payload})
        elif tools and mode == "functions":
            kwargs.update(functions_variables(tools))
        elif tools:
            kwargs["tools"] = tools
        return render_template(
            source,
            shaped,
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token,
            eos_token=eos_token,
            **kwargs,
        )

    tries = [(False, False, False), (True, False, False)] + (
        [(True, True, False)] if guidance is not None else []
    )
    if any(m.tool_calls for m in messages):
        tries += [(merge, fold, True) for merge, fold, _ in tries]  # then the arguments as JSON text
    first_error: TemplateRenderError | None = None
    for merged, fold, args_text in tries:
        try:
            text = attempt(merged, fold, args_text)
            break
        except TemplateRenderError as exc:
            first_error = first_error or exc
    else:
        raise PromptRenderError(f"the model's chat template failed: {first_error}") from first_error
    applied = ""
    if plan is not None and control is not None:
        if add_generation_prompt and control.needs_prompt(thinking):
            plan = control.plan(thinking, text)
            text += plan.suffix
        applied = plan.describe()
    if image_mark is not None:
        text = _place_images(text, image_mark, images)
    return RenderedPrompt(
        text=text,
        template=template_name,
        tools_sent=bool(tools) and mode != "none",
        merged_turns=merged,
        tools_mode=mode if tools else "variable",
        thinking=applied,
        images=len(images),
    )


def _place_images(text: str, mark: str, images: list[bytes]) -> str:
    """``text`` split at each image's mark into an ``ImagePrompt`` (PromptRenderError when the
    template lost, repeated or reordered a mark)."""
    pieces = re.split(re.escape(mark) + r"(\d+)\x00", text)
    found = [int(n) for n in pieces[1::2]]
    if found != list(range(len(images))):
        raise PromptRenderError(
            f"the model's chat template placed {len(found)} of the conversation's {len(images)} image(s) "
            "(it drops or repeats a message's text), so the images cannot be placed"
        )
    parts: list[str | bytes] = []
    for i, piece in enumerate(pieces):
        parts.append(piece if i % 2 == 0 else images[int(piece)])
    return image_prompt(parts)


def render_prompt(
    model: LoadedModel,
    messages: Sequence[Message],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    tool_format: str | None = None,
    thinking: Thinking | None = None,
    reasoning_markers: tuple[str, str] | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
) -> RenderedPrompt:
    """Render ``messages`` through the model's template (see :func:`render_messages`)."""
    source, name = choose_template(model, bool(tools))
    return render_messages(
        source,
        messages,
        tools=tools or None,
        bos_token=model.bos_token,
        eos_token=model.eos_token,
        add_generation_prompt=add_generation_prompt,
        template_name=name,
        tool_format=tool_format,
        thinking=thinking,
        reasoning_markers=reasoning_markers,
        template_kwargs=template_kwargs,
    )
