"""The scenario corpus of the "Will it call?" check: TOML data, loaded and validated here.

A scenario file (``app/check/scenarios/<category>.toml``) names its ``category`` and holds
``[[scenario]]`` tables; tool schemas live in ``tools.json`` beside them. A scenario has an
``id``, a ``rationale`` (what it asserts and why no correct model can fail it for another
reason), the ``tools`` it offers, a ``prompt``, optional ``history`` / ``system`` /
``tool_choice`` (``auto`` | ``none`` | ``required`` | ``{name = "tool"}``) / ``stream``, and
either ``expect`` (the calls of the one reply; ``[]`` means no call is correct) or
``[[scenario.turn]]`` tables (``expect`` plus the ``results`` the harness feeds back).

``thinking`` (the reasoning dimension): ``"on"``, ``"off"``, or ``["on", "off"]``, which runs the
same scenario once per choice, as ``<id>-thinking-on`` and ``<id>-thinking-off`` (the model's own
switch, rendered by ``app.engine.thinking``; without the key the template's default).

An expected call has ``name``, ``arguments`` and ``match``: ``exact`` (the argument set and every
value), ``subset`` (these keys with these values; more are allowed) or ``ignore`` (only the name;
the arguments must still fit the schema). Arrays compare by position unless their key is listed in
``unordered``. Strings compare in NFC.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.json_schema import schema_problem

__all__ = [
    "CATEGORIES",
    "MATCH_MODES",
    "Corpus",
    "CorpusError",
    "ExpectedCall",
    "Scenario",
    "ToolResultSpec",
    "Turn",
    "default_scenarios_dir",
    "load_corpus",
]

CATEGORIES = ("single", "parallel", "streaming", "multi_turn", "tool_choice", "negative", "reasoning")
MATCH_MODES = ("exact", "subset", "ignore")
_CHOICES = ("auto", "none", "required")


class CorpusError(ValueError):
    """A scenario file that cannot be used; the message names the file and the scenario."""


@dataclass(frozen=True)
class ExpectedCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    match: str = "exact"
    unordered: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "match": self.match,
            "unordered": list(self.unordered),
        }


@dataclass(frozen=True)
class ToolResultSpec:
    name: str
    content: str


@dataclass(frozen=True)
class Turn:
    """One reply of the model: the calls it must make (none: a text reply) and the results fed back."""

    expect: tuple[ExpectedCall, ...]
    results: tuple[ToolResultSpec, ...] = ()


@dataclass(frozen=True)
class Scenario:
    id: str
    category: str
    rationale: str
    prompt: str
    tools: tuple[dict[str, Any], ...]
    turns: tuple[Turn, ...]
    history: tuple[dict[str, Any], ...] = ()
    system: str | None = None
    tool_choice: str | dict[str, str] = "auto"
    stream: bool = False
    ordered: bool = False
    source: str = ""
    thinking: str | None = None  # "on" | "off" (None: the template's default)

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        for t in self.tools:
            if t["function"]["name"] == name:
                return t["function"].get("parameters") or {"type": "object", "properties": {}}
        return None

    @property
    def tool_choice_label(self) -> str:
        return self.tool_choice if isinstance(self.tool_choice, str) else f"named:{self.tool_choice['name']}"

    def openai_tool_choice(self) -> str | dict[str, Any]:
        if isinstance(self.tool_choice, str):
            return self.tool_choice
        return {"type": "function", "function": {"name": self.tool_choice["name"]}}


@dataclass(frozen=True)
class Corpus:
    directory: Path
    scenarios: tuple[Scenario, ...]
    sha256: str  # of every file the corpus was read from, in name order

    def select(self, categories: list[str] | None = None, ids: list[str] | None = None) -> list[Scenario]:
        out = list(self.scenarios)
        if categories:
            unknown = sorted(set(categories) - set(CATEGORIES))
            if unknown:
                raise CorpusError(f"unknown category {', '.join(unknown)} (choices: {', '.join(CATEGORIES)})")
            out = [s for s in out if s.category in categories]
        if ids:
            missing = sorted(set(ids) - {s.id for s in out})
            if missing:
                raise CorpusError(f"no scenario with the id {', '.join(missing)}")
            out = [s for s in out if s.id in ids]
        return out

    def quick(self) -> list[Scenario]:
        """The first scenario of each category: a short run that still fills every column."""
        seen: set[str] = set()
        out = []
        for s in self.scenarios:
            if s.category not in seen:
                seen.add(s.category)
                out.append(s)
        return out

    def by_id(self, scenario_id: str) -> Scenario:
        for s in self.scenarios:
            if s.id == scenario_id:
                return s
        raise KeyError(scenario_id)


def default_scenarios_dir() -> Path:
    return Path(__file__).resolve().parent / "scenarios"


def _need(cond: object, where: str, problem: str) -> None:
    if not cond:
        raise CorpusError(f"{where}: {problem}")


def _expected(raw: Any, where: str, tools: dict[str, dict[str, Any]]) -> ExpectedCall:
    _need(isinstance(raw, dict), where, "an expected call must be a table")
    unknown = set(raw) - {"name", "arguments", "match", "unordered"}
    _need(not unknown, where, f"unknown key(s) {', '.join(sorted(unknown))} in an expected call")
    name = raw.get("name")
    _need(
        isinstance(name, str) and name in tools,
        where,
        f"expected call to {name!r}, which the scenario does not offer",
    )
    args = raw.get("arguments", {})
    _need(isinstance(args, dict), where, "arguments must be a table")
    match = raw.get("match", "exact")
    _need(match in MATCH_MODES, where, f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
    unordered = raw.get("unordered", [])
    _need(
        isinstance(unordered, list)
        and all(isinstance(k, str) and isinstance(args.get(k), list) for k in unordered),
        where,
        "unordered must list argument keys whose expected values are arrays",
    )
    # the expectation itself must fit the tool's schema (a scenario no model can pass is a bug)
    problem = schema_problem(args, tools[name].get("parameters") or {}, partial=match != "exact")
    _need(problem is None, where, f"the expected arguments of {name} do not fit its schema: {problem}")
    return ExpectedCall(name=name, arguments=args, match=match, unordered=tuple(unordered))


def _history(raw: Any, where: str) -> tuple[dict[str, Any], ...]:
    _need(isinstance(raw, list), where, "history must be an array of messages")
    out = []
    for m in raw:
        _need(
            isinstance(m, dict) and m.get("role") in ("system", "user", "assistant", "tool"),
            where,
            f"not a message: {m!r:.80}",
        )
        _need(isinstance(m.get("content", ""), str), where, "message content must be a string")
        out.append(m)
    return tuple(out)


THINKING_CHOICES = ("on", "off")


def _variants(s: Scenario, raw: dict[str, Any], where: str) -> list[Scenario]:
    """The scenario once per ``thinking`` choice it names (itself without the key)."""
    value: Any = raw.get("thinking")
    if value is None:
        return [s]
    where = f"{where} [{s.id}]"
    if isinstance(value, str):
        _need(value in THINKING_CHOICES, where, f"thinking must be one of {', '.join(THINKING_CHOICES)}")
        return [replace(s, thinking=value)]
    _need(
        isinstance(value, list)
        and value
        and all(v in THINKING_CHOICES for v in value)
        and len(set(value)) == len(value),
        where,
        'thinking must be "on", "off" or an array of them, each once',
    )
    return [replace(s, id=f"{s.id}-thinking-{v}", thinking=v) for v in value]


def _scenario(raw: dict[str, Any], category: str, tools: dict[str, dict[str, Any]], where: str) -> Scenario:
    sid: Any = raw.get("id")  # TOML data: checked below
    _need(isinstance(sid, str) and sid.strip(), where, "every scenario needs an id")
    where = f"{where} [{sid}]"
    allowed = {
        "id",
        "rationale",
        "prompt",
        "tools",
        "expect",
        "turn",
        "history",
        "system",
        "tool_choice",
        "stream",
        "ordered",
        "thinking",
    }
    rationale: Any = raw.get("rationale")
    _need(
        isinstance(rationale, str) and len(rationale.strip()) >= 20,
        where,
        "a rationale is required: say what the scenario asserts and why no correct model can fail it",
    )
    unknown = set(raw) - allowed
    _need(not unknown, where, f"unknown key(s) {', '.join(sorted(unknown))}")
    prompt: Any = raw.get("prompt")
    _need(isinstance(prompt, str) and prompt.strip(), where, "a prompt is required")
    names: Any = raw.get("tools")
    _need(
        isinstance(names, list) and names and all(isinstance(n, str) for n in names),
        where,
        "tools must be a non-empty array of tool names",
    )
    missing = [n for n in names if n not in tools]
    _need(not missing, where, f"unknown tool(s) {', '.join(missing)} (not in tools.json)")
    offered = {n: tools[n] for n in names}
    _need(("expect" in raw) != ("turn" in raw), where, "give either expect or [[scenario.turn]] tables")
    raw_turns = [{"expect": raw["expect"]}] if "expect" in raw else raw["turn"]
    _need(isinstance(raw_turns, list) and raw_turns, where, "at least one turn is required")
    turns = []
    for i, rt in enumerate(raw_turns):
        tw = f"{where} turn {i + 1}"
        _need(isinstance(rt, dict) and isinstance(rt.get("expect"), list), tw, "a turn needs an expect array")
        expect = tuple(_expected(e, tw, offered) for e in rt["expect"])
        results = []
        for r in rt.get("results", []):
            _need(
                isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("content"), str),
                tw,
                "a result needs a name and a string content",
            )
            results.append(ToolResultSpec(r["name"], r["content"]))
        last = i == len(raw_turns) - 1
        if not last:
            _need(bool(expect), tw, "a turn before the last must expect calls (their results lead on)")
            _need(
                {r.name for r in results} == {e.name for e in expect},
                tw,
                "a turn before the last needs one result per expected tool",
            )
        turns.append(Turn(expect=expect, results=tuple(results)))
    choice = raw.get("tool_choice", "auto")
    if isinstance(choice, dict):
        _need(
            set(choice) == {"name"} and choice["name"] in offered,
            where,
            'a named tool_choice is {name = "<offered tool>"}',
        )
        choice = {"name": choice["name"]}
    else:
        _need(
            choice in _CHOICES, where, f"tool_choice must be one of {', '.join(_CHOICES)} or {{name = ...}}"
        )
    system = raw.get("system")
    _need(system is None or isinstance(system, str), where, "system must be a string")
    return Scenario(
        id=sid,
        category=category,
        rationale=rationale.strip(),
        prompt=prompt,
        tools=tuple({"type": "function", "function": {"name": n, **offered[n]}} for n in names),
        turns=tuple(turns),
        history=_history(raw.get("history", []), where),
        system=system,
        tool_choice=choice,
        stream=bool(raw.get("stream", False)),
        ordered=bool(raw.get("ordered", False)),
        source=where.split(" ")[0],
    )


MAX_TOOLS_FILE_BYTES = 8 * 1024 * 1024  # tools.json (the built-in one is 5 KB)
MAX_SCENARIO_FILE_BYTES = 32 * 1024 * 1024  # one *.toml (20,000 scenarios are about 4 MB)


def load_corpus(directory: str | Path | None = None) -> Corpus:
    """Read every ``*.toml`` in ``directory`` (default: the built-in corpus) with its ``tools.json``.

    Each file is read through :func:`app.files.read_regular_file`: a FIFO, a device or a file over
    :data:`MAX_SCENARIO_FILE_BYTES` (:data:`MAX_TOOLS_FILE_BYTES`) is a :class:`CorpusError`, as is
    a file nested too deeply to parse."""
    try:
        return _load_corpus(directory)
    except RecursionError:  # a value nested deeper than the checks can follow
        raise CorpusError(f"{directory}: a scenario value is nested too deeply") from None


def _load_corpus(directory: str | Path | None) -> Corpus:
    from app.files import loads_json, read_regular_file

    d = Path(directory) if directory is not None else default_scenarios_dir()
    if not d.is_dir():
        raise CorpusError(f"{d}: not a folder of scenario files")
    tools_path = d / "tools.json"
    if not os.path.lexists(tools_path):
        tools_path = default_scenarios_dir() / "tools.json"
    digest = hashlib.sha256()
    try:
        tools_bytes = read_regular_file(tools_path, max_bytes=MAX_TOOLS_FILE_BYTES)
        tools = loads_json(tools_bytes)
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{tools_path}: cannot read the tool schemas ({exc})") from exc
    _need(
        isinstance(tools, dict) and all(isinstance(v, dict) and "parameters" in v for v in tools.values()),
        str(tools_path),
        "tools.json maps each tool name to {description, parameters}",
    )
    digest.update(tools_bytes)
    files = sorted(d.glob("*.toml"))
    _need(bool(files), str(d), "no *.toml scenario files")
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for f in files:
        try:
            data_bytes = read_regular_file(f, max_bytes=MAX_SCENARIO_FILE_BYTES)
        except OSError as exc:
            raise CorpusError(f"{f.name}: cannot read the scenario file ({exc.strerror or exc})") from exc
        digest.update(f.name.encode() + b"\0" + data_bytes)
        try:
            data = tomllib.loads(data_bytes.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CorpusError(f"{f.name}: not valid TOML ({exc})") from exc
        except RecursionError:
            raise CorpusError(f"{f.name}: not valid TOML (nested too deeply)") from None
        category: Any = data.get("category")  # checked below
        _need(
            category in CATEGORIES,
            f.name,
            f"category must be one of {', '.join(CATEGORIES)}, got {category!r}",
        )
        raw_list = data.get("scenario", [])
        _need(isinstance(raw_list, list), f.name, "scenarios are [[scenario]] tables")
        for raw in raw_list:
            for s in _variants(_scenario(raw, category, tools, f.name), raw, f.name):
                _need(s.id not in seen, f.name, f"duplicate scenario id {s.id!r}")
                seen.add(s.id)
                scenarios.append(s)
    scenarios.sort(key=lambda s: CATEGORIES.index(s.category))  # stable: file order within a category
    return Corpus(directory=d, scenarios=tuple(scenarios), sha256=digest.hexdigest())
