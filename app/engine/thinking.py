"""Thinking under control: which switch a chat template reads, and how to render it.

Reasoning models think before they answer; their templates read a switch, and each reads its
own. :func:`thinking_control` finds it from the template (its free variables and trial renders,
as detection does for tools):

* a boolean variable (``enable_thinking`` for Qwen3, GLM, Gemma 4, SmolLM3...; ``thinking`` for
  DeepSeek V3.1; ``reasoning`` for Command A...): a variable whose name speaks of thinking or
  reasoning and whose ``False`` and ``True`` renders differ (``switch``);
* an effort variable (Harmony's ``reasoning_effort``: ``low``/``medium``/``high``): a variable whose
  renders differ by level, or that prints the level (``effort``, with the ``levels`` it takes);
* a budget variable (Seed-OSS's ``thinking_budget``): ``0`` turns thinking off (``budget_variable``);
* a tag in the system message (``/no_think`` and ``/think``: SmolLM3, Nemotron Nano v2), when the
  template names the tag;
* otherwise, for a template whose model writes a reasoning block (its family's markers, or the
  template closing one), a pre-closed block after the generation prompt (``<think>\\n\\n</think>``).

:class:`Thinking` is the choice of a session or a request: ``off``, ``on``, ``auto`` (the
template's default), an ``effort`` level, and a ``budget`` in tokens (the engine closes the
reasoning block in the family's own syntax once it is spent: ``app.engine.chat``).
:meth:`ThinkingControl.plan` turns a choice into a :class:`ThinkingRender`: the variables to pass
to the render, the tag to write into the system message, the text to append after the prompt.

This module sits at the templates' layer: the family's reasoning markers are passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from app.engine.errors import TemplateRenderError
from app.engine.templates import render_template, template_variables

__all__ = [
    "EFFORT_LEVELS",
    "THINKING_MODES",
    "Thinking",
    "ThinkingControl",
    "ThinkingRender",
    "anthropic_thinking",
    "parse_thinking",
    "thinking_control",
]

THINKING_MODES = ("auto", "off", "on")
#: the effort levels a template may take, lowest first (probed in this order)
EFFORT_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: the most tokens a thinking budget may name
MAX_BUDGET = 1_000_000
_DEFAULT_LEVELS = ("low", "medium", "high")  # a template that prints any level (Harmony)
_PROBE_LEVEL = "callisto_probe_level"
_NAME = re.compile(r"think|reason|effort", re.IGNORECASE)
_NO_THINK = "/no_think"
_THINK = "/think"


@dataclass(frozen=True)
class Thinking:
    """A thinking choice. ``mode``: ``auto`` (what the template does by default), ``off`` or
    ``on``; ``effort``: a level (``low``/``medium``/``high``...) for templates with levels (it
    implies ``on``; ``off`` where the template has no way to turn thinking off but has levels
    renders the lowest); ``budget``: the most tokens of reasoning, after which the engine closes
    the block (after ``budget_message``, written inside it) and the model answers."""

    mode: str = "auto"
    effort: str | None = None
    budget: int | None = None
    budget_message: str | None = "Time to answer."

    def __post_init__(self) -> None:
        if self.mode not in THINKING_MODES:
            raise ValueError(f"thinking must be one of {', '.join(THINKING_MODES)}, not {self.mode!r}")
        if self.effort is not None and self.effort not in EFFORT_LEVELS:
            raise ValueError(
                f"unknown reasoning effort {self.effort!r} (choices: {', '.join(EFFORT_LEVELS)})"
            )
        if self.budget is not None and (
            isinstance(self.budget, bool)
            or not isinstance(self.budget, int)
            or not 0 <= self.budget <= MAX_BUDGET
        ):
            raise ValueError(f"the reasoning budget must be a whole number of tokens from 0 to {MAX_BUDGET}")

    @property
    def off(self) -> bool:
        return self.mode == "off" or self.budget == 0

    @property
    def is_default(self) -> bool:
        return self.mode == "auto" and self.effort is None and self.budget is None


def parse_thinking(value: Any) -> Thinking:
    """A :class:`Thinking` from what an API or a setting says: None (auto), a bool (on / off), a
    mode (``auto``/``off``/``on``), an effort level, or a Thinking. Raises ValueError."""
    if value is None:
        return Thinking()
    if isinstance(value, Thinking):
        return value
    if isinstance(value, bool):
        return Thinking("on" if value else "off")
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "yes"):
            v = "on"
        if v in ("false", "no"):
            v = "off"
        if v in THINKING_MODES:
            return Thinking(v)
        if v in EFFORT_LEVELS:
            return Thinking("off" if v == "none" else "on", effort=None if v == "none" else v)
    raise ValueError(
        f"unknown thinking choice {value!r} (choices: true, false, {', '.join(THINKING_MODES)}, "
        f"or a level: {', '.join(EFFORT_LEVELS)})"
    )


def anthropic_thinking(value: Any) -> Thinking:
    """A :class:`Thinking` from Anthropic's ``thinking`` parameter: ``{"type": "enabled",
    "budget_tokens": N}`` (on, with that budget), ``{"type": "disabled"}`` (off), or absent (auto).
    Raises ValueError for any other shape."""
    if value is None:
        return Thinking()
    if not isinstance(value, dict) or value.get("type") not in ("enabled", "disabled"):
        raise ValueError('thinking must be {"type": "enabled", "budget_tokens": N} or {"type": "disabled"}')
    if value["type"] == "disabled":
        return Thinking("off")
    budget = value.get("budget_tokens")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ValueError("thinking.budget_tokens must be a positive whole number")
    return Thinking("on", budget=budget)


@dataclass(frozen=True)
class ThinkingRender:
    """How one render applies a choice: ``variables`` passed to the template, a ``tag``
    written at the end of the system message, ``suffix`` appended after the generation prompt."""

    variables: dict[str, Any] = field(default_factory=dict)
    tag: str | None = None
    suffix: str = ""

    @property
    def empty(self) -> bool:
        return not self.variables and self.tag is None and not self.suffix

    def describe(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self.variables.items()]
        if self.tag:
            parts.append(f"system tag {self.tag}")
        if self.suffix:
            parts.append(f"prefill {self.suffix!r}")
        return ", ".join(parts) or "template default"


@dataclass(frozen=True)
class ThinkingControl:
    """The thinking switch a template reads (see the module docstring).

    ``kind`` names how *off* is rendered: ``switch`` (``switch`` variable set to ``off_value``),
    ``effort`` (the ``effort`` variable at its lowest level: Harmony cannot turn thinking off),
    ``budget`` (``budget_variable`` = 0), ``tag`` (``/no_think`` in the system message),
    ``prefill`` (a closed block after the generation prompt) or ``none`` (no switch: the template
    ignores the choice). ``off_variable``: the (name, value) that renders *off* where the switch
    only forces thinking on and another variable skips it (HyperCLOVA X's ``force_reasoning`` and
    ``skip_reasoning``; with neither set, the model decides). ``reads_reasoning``: the message
    key the template reads earlier reasoning from (``reasoning_content``, ``thinking`` or
    ``thought``; None: it never shows it); ``pads_reasoning``: whether it writes a line break
    before and after that reasoning (MiniCPM3's ``<|thought_start|>\n{thought}\n``), so the line
    breaks a reply wrote there go back without it (the prompt then extends the reply as written)."""

    kind: str = "none"
    switch: str | None = None
    off_value: Any = False
    on_value: Any = True
    off_variable: tuple[str, Any] | None = None
    effort: str | None = None
    levels: tuple[str, ...] = ()
    on_level: str | None = None  # the level *on* passes when the template's default is off (Hy3)
    budget_variable: str | None = None
    tag: bool = False
    markers: tuple[str, str] | None = None
    reads_reasoning: str | None = None
    pads_reasoning: tuple[bool, bool] = (False, False)

    @property
    def has_switch(self) -> bool:
        return self.kind != "none"

    def plan(self, thinking: Thinking | None, prompt: str = "") -> ThinkingRender:
        """How to render ``thinking``. ``prompt``: the prompt as rendered with the returned
        variables and tag (a pre-closed block follows it: call again with it; see
        :meth:`suffix_for`)."""
        if thinking is None or thinking.is_default:
            return ThinkingRender()
        variables: dict[str, Any] = {}
        tag = None
        suffix = ""
        if thinking.off:
            if self.kind == "switch" and self.off_variable is not None:
                variables[self.off_variable[0]] = self.off_variable[1]
            elif self.kind == "switch":
                variables[self.switch or ""] = self.off_value
            elif self.kind == "effort":
                variables[self.effort or ""] = self.levels[0]
            elif self.kind == "budget":
                variables[self.budget_variable or ""] = 0
            elif self.kind == "tag":
                tag = _NO_THINK
            elif self.kind == "prefill" and self.markers is not None:
                suffix = _pre_closed(self.markers, prompt)
            return ThinkingRender(variables, tag, suffix)
        on = thinking.mode == "on" or thinking.effort is not None
        if on:
            if self.switch is not None:
                variables[self.switch] = self.on_value
            elif self.kind == "tag":
                tag = _THINK
        if self.effort is not None:
            level = thinking.effort if thinking.effort is not None else (self.on_level if on else None)
            if level is not None and level in self.levels:
                variables[self.effort] = level
        if self.budget_variable is not None and thinking.budget:
            variables[self.budget_variable] = thinking.budget
        return ThinkingRender(variables, tag, suffix)

    def needs_prompt(self, thinking: Thinking | None) -> bool:
        """Whether :meth:`plan` appends text that depends on the rendered prompt."""
        return self.kind == "prefill" and thinking is not None and thinking.off


def _pre_closed(markers: tuple[str, str], tail: str) -> str:
    """What closes an empty reasoning block after a prompt that ends with ``tail``."""
    open_, close = markers
    stripped = tail.rstrip()
    if stripped.endswith(close):
        return ""  # already closed
    if stripped.endswith(open_):
        return ("\n" if tail.endswith("\n") else "\n\n") + close + "\n\n"
    return f"{open_}\n\n{close}\n\n"


_PROBE_MESSAGES = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
_PROBE_NO_SYSTEM = [{"role": "user", "content": "U"}]  # some templates switch only in their own system text


def _render(source: str, messages: list[dict[str, Any]] | None = None, /, **variables: Any) -> str | None:
    """One trial render (None: it failed); without ``messages``, the probe conversation with and
    without a system message, joined."""
    try:
        if messages is not None:
            return render_template(source, messages, add_generation_prompt=True, **variables)
        return "\x00".join(
            render_template(source, msgs, add_generation_prompt=True, **variables)
            for msgs in (_PROBE_MESSAGES, _PROBE_NO_SYSTEM)
        )
    except TemplateRenderError:
        return None


def _last(rendered: str) -> str:
    """The render without a system message (the last of :func:`_render`'s joined two)."""
    return rendered.rsplit("\x00", 1)[-1]


def _reads_reasoning(source: str) -> tuple[str | None, tuple[bool, bool]]:
    """The message key ``source`` reads an earlier reply's reasoning from, in a tool round
    (MiniCPM3's template reads ``thought``), and whether it writes a line break right before and
    right after it (None, (False, False): it never shows it)."""
    for key in ("reasoning_content", "thinking", "thought"):
        probe = "callisto_probe_reasoning_1c9e"
        call = {"id": "call00000", "type": "function", "function": {"name": "f", "arguments": {}}}
        msgs: list[dict[str, Any]] = [
            {"role": "user", "content": "U"},
            {"role": "assistant", "content": "", key: probe, "tool_calls": [call]},
            {"role": "tool", "content": "R", "tool_call_id": "call00000", "name": "f"},
        ]
        out = _render(source, msgs)
        if out is None:
            msgs[1]["content"] = "A"  # a template that shows no calls still shows the turn
            del msgs[1]["tool_calls"]
            msgs[2] = {"role": "user", "content": "V"}
            out = _render(source, msgs)
        if out is not None and probe in out:
            return key, ("\n" + probe in out, probe + "\n" in out)
    return None, (False, False)


_OFF_LEVELS = ("none", "no_think", "off", "disabled")


def _quoted_levels(source: str, name: str) -> list[str]:
    """Words ``source`` compares ``name`` with (``x == 'no_think'``, ``x in ['low', 'high']``)."""
    found: list[str] = []
    pattern = re.escape(name) + r"\s*(?:==|!=|not\s+in|in)\s*(\[[^\]]{0,200}\]|'[^']{0,40}'|\"[^\"]{0,40}\")"
    for m in re.finditer(pattern, source):
        for word in re.findall(r"['\"]([A-Za-z_]{1,20})['\"]", m.group(1)):
            if word.lower() not in found:
                found.append(word.lower())
    return found


def _effort_levels(source: str, name: str) -> tuple[str, ...]:
    """The levels ``name`` takes, lowest first: the usual levels and the words the template
    compares it with, where a render takes them (a template that prints any value, as Harmony's
    ``Reasoning: {{ reasoning_effort }}``, takes the usual three; one that branches on values
    takes those whose renders differ from an unknown value's, or that it names)."""
    probe = _render(source, **{name: _PROBE_LEVEL})
    named = _quoted_levels(source, name)
    candidates = [x for x in (*_OFF_LEVELS, *EFFORT_LEVELS) if x in named or x in EFFORT_LEVELS]
    candidates += [x for x in named if x not in candidates]
    outs = {level: _render(source, **{name: level}) for level in candidates}
    if probe is not None and _PROBE_LEVEL in probe:
        return tuple(level for level in _DEFAULT_LEVELS if outs[level] is not None)
    return tuple(level for level, out in outs.items() if out is not None and (out != probe or level in named))


def _off_is_false(name: str, off: str, on: str, markers: tuple[str, str] | None) -> bool:
    """Whether ``False`` turns thinking off (the usual meaning; a name like ``disable_thinking``
    or a render that opens a block only with False says otherwise)."""
    if re.search(r"disable|no_?think|skip", name, re.IGNORECASE):
        return False
    if markers is not None:
        open_, close = markers
        off_tail, on_tail = _last(off)[-200:], _last(on)[-200:]
        off_open = off_tail.rstrip().endswith(open_)
        on_open = on_tail.rstrip().endswith(open_)
        if off_open and not on_open and not on_tail.rstrip().endswith(close):
            return False
    return True


def _off_variable(default: str, switches: list[tuple[str, bool, str, str]]) -> tuple[str, Any] | None:
    """The (name, value) that turns thinking off where the first switch's *off* renders the
    template's default (it only forces thinking on: the model decides without it) and another
    switch's *off* renders something else (it skips thinking); None otherwise."""
    _, false_is_off, off, on = switches[0]
    if (off if false_is_off else on) != default:
        return None
    for name, other_false_is_off, other_off, other_on in switches[1:]:
        if (other_off if other_false_is_off else other_on) != default:
            return name, not other_false_is_off
    return None


@lru_cache(maxsize=64)
def thinking_control(source: str, markers: tuple[str, str] | None = None) -> ThinkingControl:
    """The switch ``source`` reads (see the module docstring). ``markers``: the (open, close)
    tags of the family's reasoning block, for the pre-closed block and the budget; None: the
    ``<think>`` pair when the template writes ``</think>``."""
    try:
        names = template_variables(source)
    except TemplateRenderError:
        return ThinkingControl()
    if markers is None and "</think>" in source:
        markers = ("<think>", "</think>")
    default = _render(source)
    if default is None:
        return ThinkingControl(markers=markers)
    reads, pads = _reads_reasoning(source)
    switch: str | None = None
    off_value: Any = False
    on_value: Any = True
    effort: str | None = None
    levels: tuple[str, ...] = ()
    budget_var: str | None = None
    switches: list[tuple[str, bool, str, str]] = []  # (name, False is off, off render, on render)
    for name in sorted(names):
        if not _NAME.search(name) or name in ("messages", "tools"):
            continue
        if "budget" in name.lower():
            zero, some = _render(source, **{name: 0}), _render(source, **{name: 1024})
            if zero is not None and some is not None and zero != some:
                budget_var = budget_var or name
            continue
        if "effort" in name.lower() or effort is None and "level" in name.lower():
            found = _effort_levels(source, name)
            if found and effort is None:
                effort, levels = name, found
            continue
        off, on = _render(source, **{name: False}), _render(source, **{name: True})
        if off is None or on is None or off == on:
            found = _effort_levels(source, name)
            if found and effort is None:
                effort, levels = name, found
            continue
        switches.append((name, _off_is_false(name, off, on, markers), off, on))
    off_variable = None
    if switches:
        switch, false_is_off = switches[0][:2]
        if not false_is_off:
            off_value, on_value = True, False
        off_variable = _off_variable(default, switches)
    on_level = None
    if (
        effort is not None
        and levels
        and levels[0] in _OFF_LEVELS
        and default == _render(source, **{effort: levels[0]})
    ):
        on_level = "medium" if "medium" in levels else levels[-1]  # off by default: *on* names a level
    tag = _NO_THINK in source
    if switch is not None:
        kind = "switch"
    elif effort is not None and levels and levels[0] in _OFF_LEVELS:
        kind = "effort"
    elif budget_var is not None:
        kind = "budget"
    elif tag:
        kind = "tag"
    elif (
        effort is not None
        and levels
        and not (markers is not None and _last(default).rstrip().endswith(markers[0]))
    ):
        kind = "effort"
    elif markers is not None and (markers[1] in source or _last(default).rstrip().endswith(markers[0])):
        # (also a template with effort levels but none that is off, whose generation prompt opens
        # the block itself, as StepFun 3.7's: closing the block is what stops it thinking; the
        # levels still serve an effort choice)
        kind = "prefill"
    else:
        kind = "none"
    return ThinkingControl(
        kind=kind,
        switch=switch,
        off_value=off_value,
        on_value=on_value,
        off_variable=off_variable,
        effort=effort,
        levels=levels,
        on_level=on_level,
        budget_variable=budget_var,
        tag=tag,
        markers=markers,
        reads_reasoning=reads,
        pads_reasoning=pads,
    )
