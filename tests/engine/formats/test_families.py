"""Every registered family, walked from the registry, through the generic harness (see harness.py).

A family registered in ``app.engine.formats.FAMILY_MODULES`` is covered here without touching
this file: its cases (``tests/engine/formats/cases/<family>.py``) run through parse, every split,
truncation at every position and the cross-family rejection matrix; its example call is read
back by detection's order; the fuzz suite (``test_fuzz.py``) walks the same registry.
"""

from __future__ import annotations

import pytest

from app.engine.formats import FORMATS
from app.engine.formats.detect import PROBE_ARGS, PROBE_CALL, PROBE_TOOLS, same_wire
from tests.engine.formats.harness import (
    case_modules,
    check_cross_family,
    check_parse,
    check_splits,
    check_truncation,
)

MODULES = case_modules()


def _all_cases():
    out = []
    for family in FORMATS:
        mod = MODULES.get(family)
        for case in getattr(mod, "CASES", []):
            out.append(pytest.param(family, case, id=f"{family}-{case.id}"))
    return out


ALL = _all_cases()


def test_every_registered_family_has_cases():
    missing = [f for f in FORMATS if not getattr(MODULES.get(f), "CASES", None)]
    assert not missing, f"families without cases: {missing}"


@pytest.mark.parametrize(("family", "case"), ALL)
def test_parse(family, case):
    check_parse(FORMATS[family], case)


@pytest.mark.parametrize(("family", "case"), ALL)
def test_every_split_equals_parse(family, case):
    check_splits(FORMATS[family], case)


@pytest.mark.parametrize(("family", "case"), ALL)
def test_truncation_at_every_position(family, case):
    check_truncation(FORMATS[family], case)


@pytest.mark.parametrize(("family", "case"), [p for p in ALL if p.values[1].calls])
def test_no_other_family_reads_the_call(family, case):
    check_cross_family(family, case)


@pytest.mark.parametrize("family", list(FORMATS))
def test_detection_order_reads_the_family_first(family):
    """The family reads its own probe call back, and no family tried before it in detection's
    order (the registry's) reads a call out of it, so detection picks the family itself. A family
    that writes another's wire (``detect.WIRE_OF``) is told apart by its template's markers."""
    text = FORMATS[family].example_call(PROBE_CALL[0], dict(PROBE_ARGS))
    reply = FORMATS[family].parse(text, PROBE_TOOLS)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [(PROBE_CALL[0], PROBE_ARGS)], reply
    for other, fmt in FORMATS.items():
        if other == family:
            break
        if same_wire(other, family):
            continue
        assert not fmt.parse(text, PROBE_TOOLS).tool_calls, f"{other} (tried first) reads {family}'s call"


def test_a_family_built_from_data_takes_only_the_settings_its_class_declares():
    from app.engine.formats.open_json import JsonTagFormat

    fmt = JsonTagFormat("x-tag", "X tag", ("<x>",), close="</x>")
    assert (fmt.name, fmt.label, fmt.openers, fmt.close) == ("x-tag", "X tag", ("<x>",), "</x>")
    assert fmt.reasoning == FORMATS["hermes"].reasoning  # left out: the class's own
    assert fmt.parse('<x>\n{"name": "f", "arguments": {"a": 1}}\n</x>', None).tool_calls[0].name == "f"
    for bad in ({"clse": "</x>"}, {"read_call": None}, {"structure": ()}, {"_private": 1}):
        with pytest.raises(TypeError, match="has no setting"):
            JsonTagFormat("x-tag", "X tag", ("<x>",), **bad)
    assert "x-tag" not in FORMATS  # built, not registered
