"""The deterministic scorer: what a target replied, against what the scenario expects.

No model judges. Every failure gets one class that explains a red cell:

``error``               the request failed (the transcript holds the error)
``empty_response``      no text, no reasoning, no call
``call_in_reasoning``   no call, but call-shaped text inside the reasoning block
``unparsed_tool_call``  no call, but call-shaped text in the content (the bytes are shown)
``no_call``             an expected call is missing
``wrong_tool``          a call to a tool the scenario did not expect
``bad_arguments``       the right tool with wrong arguments (the key, expected and got)
``extra_call``          a call more than expected (any call where no call is correct)
``stream_mismatch``     the streamed reply does not reassemble into the non-streamed one
``marker_leak``         template or call markup left in the visible content

Checks are structural where they can be: the arguments must fit the tool's schema, argument sets
compare per ``match`` mode, numbers compare by value, strings in NFC, arrays by position unless the
scenario marks them ``unordered``; a reply's calls compare as a set unless the scenario is ``ordered``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

from app.check.corpus import ExpectedCall, Scenario
from app.json_schema import schema_problem

__all__ = [
    "FAILURE_CLASSES",
    "MARKERS",
    "ObservedCall",
    "Observation",
    "Outcome",
    "call_shaped",
    "leaked_marker",
    "score_scenario",
    "score_turn",
]

FAILURE_CLASSES = (
    "no_call",
    "wrong_tool",
    "bad_arguments",
    "extra_call",
    "unparsed_tool_call",
    "call_in_reasoning",
    "marker_leak",
    "stream_mismatch",
    "empty_response",
    "error",
)

# The call openers of the families not named below, each a special token or a tag of the family's
# own wire (a test holds every family's openers to this list or to an exemption with its reason).
_FAMILY_CALL_OPENERS = (
    "<use_mcp_tool>",
    "<｜tool_calls_begin｜>",
    "<|tool_call_section_begin|>",
    "<minimax:tool_call>",
    "<seed:tool_call>",
    "<|START_ACTION|>",
    "<|tool_call_start|>",
    "<|tools_prefix|>",
    "<tool_calls",
    "<TOOLCALL>",
    "<|function_call|>",
    "function call<|role_sep|>",
    '<function name="',
    "<|tool_calls|>",
    "<|tool_call|>",
    "<|action_start|>",
    "<longcat_tool_call>",
    "<function_call>",
    "<function_calls>",
    "<start_function_call>",
    "<ifm|tool_calls>",
    "<iquestcoder_tool_call>",
    "<|content_invoke_tool_json|>",
    "<｜GCML｜",
    "<|DSML|",
    "<｜｜DSML｜｜",
    "<‖DSML‖",
    '<invoke name="',
    "<dots_function_call>",
    "<steptml:toolcall>",
    "<|tool_call:start|>",
    "<|plamo:begin_tool_requests:plamo|>",
    "<tool: ",
    " -> tool/function_call\n",
    "functools[",
    "**Tool Call:**",
    "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>",
    "<｜tool▁calls｜>",
    "<|open|>tools<|sep|>",
)

# Markup that never belongs in visible content: call openers/closers of every family and the chat
# templates' role and end-of-turn tokens.
MARKERS = (
    "<tool_call>",
    "</tool_call>",
    "<|tool_call>",
    "<tool_call|>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<|python_start|>",
    "<|python_end|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜DSML｜",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|open|>call",
    "<function=",
    "</function>",
    "<|im_start|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<|channel|>",
    "<|message|>",
    "<|call|>",
    "<|return|>",
    "<|start|>",
    "<|end|>",
    "<|endoftext|>",
    "<think>",
    "</think>",
    "[THINK]",
    "[/THINK]",
    "<|channel>thought",
    "<channel|>",
    "<tool_response>",
    "</tool_response>",
    "[INST]",
    "[/INST]",
    *_FAMILY_CALL_OPENERS,
    "<|tool_call_end|>",
    "<|thought_start|>",
    "<|thought_end|>",
    # GLM-4's role headers (a call message opens with <|assistant|>, a result with <|observation|>)
    "<|assistant|>",
    "<|observation|>",
)
_CALL_OPENERS = (
    "<tool_call>",
    "<|tool_call>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "<|python_start|>",
    "<｜tool▁calls▁begin｜>",
    "<｜DSML｜",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",  # Kimi K2's call without its section
    "<|open|>call",
    "<function=",
    "<|channel|>commentary to=",
    # the other families' call openers (each a special token or a tag of the wire's own)
    *_FAMILY_CALL_OPENERS,
)


@dataclass
class ObservedCall:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)  # a str: JSON text that did not parse
    id: str = ""
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments, "id": self.id}


@dataclass
class Observation:
    """One reply as a target saw it."""

    content: str = ""
    reasoning: str = ""
    calls: list[ObservedCall] = field(default_factory=list)
    error: str | None = None
    finish_reason: str | None = None
    #: set by a target for a streamed reply that does not reassemble into the non-streamed one
    stream_problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "reasoning": self.reasoning,
            "calls": [c.to_dict() for c in self.calls],
            "error": self.error,
            "finish_reason": self.finish_reason,
            "stream_problem": self.stream_problem,
        }


@dataclass
class Outcome:
    passed: bool
    failure_class: str | None = None
    message: str = ""
    turn: int | None = None  # 1-based turn of the failure
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fail(cls: str, message: str, **detail: Any) -> Outcome:
    return Outcome(False, cls, message, detail=detail)


# Call-shaped text where no call was read: in the reasoning, then in the content.
_UNREAD_CALLS = (
    ("call_in_reasoning", "the call was written inside the reasoning block, where it is not a call"),
    ("unparsed_tool_call", "the reply holds a call that was not parsed as one (the bytes are shown)"),
)


# -- values ----------------------------------------------------------------------------------------


def _nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def _same(expected: Any, got: Any, *, unordered: bool = False) -> bool:
    if isinstance(expected, bool) or expected is None:
        return got is expected
    if isinstance(expected, int | float):
        if isinstance(got, bool) or not isinstance(got, int | float):
            return False
        return abs(float(expected) - float(got)) <= 1e-9 * max(1.0, abs(float(expected)))
    if isinstance(expected, str):
        return isinstance(got, str) and _nfc(expected) == _nfc(got)
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            return False
        if not unordered:
            return all(_same(e, g) for e, g in zip(expected, got, strict=True))
        left = list(got)
        for e in expected:
            hit = next((i for i, g in enumerate(left) if _same(e, g)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and set(got) == set(expected)
            and all(_same(v, got[k]) for k, v in expected.items())
        )
    return expected == got


def _arguments_problem(exp: ExpectedCall, got: ObservedCall, scenario: Scenario) -> dict[str, Any] | None:
    """None when the call's arguments satisfy the expectation, else {key, expected, got, problem}."""
    if isinstance(got.arguments, str):
        return {
            "key": None,
            "expected": exp.arguments,
            "got": got.arguments,
            "problem": "the arguments are not a JSON object",
        }
    args = got.arguments
    schema = scenario.tool_schema(exp.name) or {}
    problem = schema_problem(args, schema)
    if problem is not None:
        key = problem.split(":", 1)[0]
        top = key.split(".")[0].split("[")[0]
        return {"key": key, "expected": exp.arguments.get(top), "got": args.get(top), "problem": problem}
    if exp.match == "ignore":
        return None
    for key, value in exp.arguments.items():
        if key not in args:
            return {"key": key, "expected": value, "got": None, "problem": f"{key}: missing"}
        if not _same(value, args[key], unordered=key in exp.unordered):
            return {"key": key, "expected": value, "got": args[key], "problem": f"{key}: wrong value"}
    if exp.match == "exact":
        for key in args:
            if key not in exp.arguments:
                return {"key": key, "expected": None, "got": args[key], "problem": f"{key}: not expected"}
    return None


# -- text checks ----------------------------------------------------------------------------------


def call_shaped(text: str, tool_names: list[str], *, markers_only: bool = False) -> str | None:
    """The call-looking part of ``text`` (a family's call opener, or JSON / a Python-style call naming an
    offered tool), up to 300 characters from where it starts; None when the text has none.
    ``markers_only``: only a family's call opener counts (an answer may quote a call as an example)."""
    if not text:
        return None
    starts = [i for i in (text.find(m) for m in _CALL_OPENERS) if i >= 0]
    for name in [] if markers_only else tool_names:
        for pat in (
            rf'"name"\s*:\s*"{re.escape(name)}"',
            rf'\b{re.escape(name)}\s*\(\s*[A-Za-z_"\')]',
            rf'"function"\s*:\s*"{re.escape(name)}"',
        ):
            m = re.search(pat, text)
            if m:
                brace = text.rfind("{", 0, m.start() + 1)
                starts.append(brace if brace >= 0 and m.start() - brace < 40 else m.start())
    if not starts:
        return None
    i = min(starts)
    return text[i : i + 300]


def leaked_marker(text: str) -> str | None:
    for m in MARKERS:
        if m in text:
            return m
    return None


# -- scoring --------------------------------------------------------------------------------------


def score_turn(scenario: Scenario, expected: tuple[ExpectedCall, ...], obs: Observation) -> Outcome:
    """Score one reply against the calls it must make (``()``: a text reply is correct)."""
    names = scenario.tool_names
    if obs.error is not None:
        return _fail("error", f"the request failed: {obs.error}", error=obs.error)
    if obs.stream_problem:  # it breaks only under streaming: that explains the cell, whatever the calls
        return _fail("stream_mismatch", obs.stream_problem)
    if not obs.content.strip() and not obs.reasoning.strip() and not obs.calls:
        return _fail("empty_response", "the reply was empty: no text, no reasoning, no call")
    if not expected:
        if obs.calls:
            c = obs.calls[0]
            return _fail(
                "extra_call",
                f"no call was correct, but the reply called {c.name}",
                calls=[c.to_dict() for c in obs.calls],
            )
        # where no call is right, an answer may mention or quote a call: only a call marker counts
        shaped = call_shaped(obs.content, names, markers_only=True)
        if shaped is not None:
            return _fail(
                "unparsed_tool_call", "no call was correct, but the text holds a call block", bytes=shaped
            )
        if not obs.content.strip():
            return _fail("empty_response", "no call was correct, but the reply has no visible text")
    else:
        if not obs.calls:
            for text, (failure, message) in zip((obs.reasoning, obs.content), _UNREAD_CALLS, strict=True):
                shaped = call_shaped(text, names)
                if shaped is not None:
                    return _fail(failure, message, bytes=shaped)
            return _fail("no_call", f"expected a call to {expected[0].name}; the reply made none")
        outcome = _match_calls(scenario, expected, obs.calls)
        if outcome is not None:
            return outcome
    marker = leaked_marker(obs.content)
    if marker is not None:
        i = obs.content.find(marker)
        return _fail(
            "marker_leak",
            f"markup {marker!r} in the visible content",
            marker=marker,
            bytes=obs.content[max(0, i - 40) : i + 80],
        )
    return Outcome(True)


def _match_calls(
    scenario: Scenario, expected: tuple[ExpectedCall, ...], got: list[ObservedCall]
) -> Outcome | None:
    if scenario.ordered:
        for i, (e, g) in enumerate(zip(expected, got, strict=False)):
            if g.name != e.name:
                return _fail(
                    "wrong_tool",
                    f"call {i + 1} went to {g.name}, expected {e.name}",
                    expected=e.name,
                    got=g.name,
                )
            p = _arguments_problem(e, g, scenario)
            if p is not None:
                return _fail("bad_arguments", f"{e.name}: {p['problem']}", **p)
        if len(got) > len(expected):
            extra = got[len(expected)]
            return _fail("extra_call", f"an extra call to {extra.name}", calls=[c.to_dict() for c in got])
        if len(got) < len(expected):
            return _fail(
                "no_call",
                f"expected {len(expected)} calls, got {len(got)}: {expected[len(got)].name} is missing",
            )
        return None
    left = list(got)
    unmatched: list[ExpectedCall] = []
    for e in expected:  # exact matches first, so a set of calls compares without order
        hit = next(
            (
                i
                for i, g in enumerate(left)
                if g.name == e.name and _arguments_problem(e, g, scenario) is None
            ),
            None,
        )
        if hit is None:
            unmatched.append(e)
        else:
            left.pop(hit)
    if not unmatched and not left:
        return None
    for e in unmatched:  # a call of the right tool with the wrong arguments
        same_tool = next((g for g in left if g.name == e.name), None)
        if same_tool is not None:
            p = _arguments_problem(e, same_tool, scenario)
            assert p is not None
            return _fail("bad_arguments", f"{e.name}: {p['problem']}", **p)
    expected_names = {e.name for e in expected}
    for g in left:
        if g.name not in expected_names and unmatched:
            return _fail(
                "wrong_tool",
                f"called {g.name}, expected {unmatched[0].name}",
                expected=unmatched[0].name,
                got=g.name,
            )
    if left:
        g = left[0]
        return _fail(
            "extra_call",
            f"an extra call to {g.name} beyond the {len(expected)} expected",
            calls=[c.to_dict() for c in got],
        )
    return _fail(
        "no_call",
        f"expected {len(expected)} call(s), got {len(got)}: {unmatched[0].name} is missing",
        missing=[e.name for e in unmatched],
    )


def score_scenario(scenario: Scenario, observations: list[Observation]) -> Outcome:
    """Score every turn in order; the first failing turn decides. Fewer observations than turns (the
    harness stopped early because a turn failed) never passes."""
    for i, turn in enumerate(scenario.turns):
        if i >= len(observations):
            return Outcome(False, "error", f"turn {i + 1} was not run", turn=i + 1)
        out = score_turn(scenario, turn.expect, observations[i])
        if not out.passed:
            out.turn = i + 1
            return out
    return Outcome(True)


def arguments_json(arguments: Any) -> str:
    return (
        arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    )
