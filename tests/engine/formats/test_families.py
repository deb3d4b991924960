"""Every family's cases through the generic harness (see harness.py)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from app.engine.formats import FORMATS
from tests.engine.formats import cases as cases_pkg
from tests.engine.formats.harness import (
    check_cross_family,
    check_parse,
    check_splits,
    check_truncation,
)


def _all_cases():
    out = []
    for info in sorted(pkgutil.iter_modules(cases_pkg.__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"{cases_pkg.__name__}.{info.name}")
        for case in mod.CASES:
            out.append(pytest.param(mod.FAMILY, case, id=f"{mod.FAMILY}-{case.id}"))
    return out


ALL = _all_cases()


def test_every_registered_family_has_cases():
    families = {p.values[0] for p in ALL}
    assert set(FORMATS) <= families, f"families without cases: {set(FORMATS) - families}"


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
