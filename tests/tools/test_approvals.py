"""The one vocabulary of approvals (app.calls): decisions, outcomes, policy defaults, plain words."""

from __future__ import annotations

from app.calls import (
    APPROVAL_DECISIONS,
    APPROVAL_OUTCOMES,
    APPROVAL_WORDS,
    DENIED_OUTCOMES,
    POLICY_DEFAULTS,
    outcome_of,
    read_decision,
)
from app.tools.dispatcher import ApprovalPolicy


def test_every_decision_has_an_outcome_and_every_outcome_plain_words():
    assert {d: outcome_of(d) for d in APPROVAL_DECISIONS} == {
        "allow_once": "allowed_once",
        "always": "always",
        "deny": "denied",
    }
    assert set(APPROVAL_WORDS) == set(APPROVAL_OUTCOMES)
    assert set(DENIED_OUTCOMES) <= set(APPROVAL_OUTCOMES)
    assert "deny" not in APPROVAL_WORDS  # a decision, never a stored outcome


def test_anything_but_a_decision_reads_as_none():
    assert [read_decision(a) for a in APPROVAL_DECISIONS] == list(APPROVAL_DECISIONS)
    assert [read_decision(a) for a in ("yes", "ALLOW_ONCE", None, 1, "")] == [None] * 5


def test_the_policy_takes_only_its_defaults():
    policy = ApprovalPolicy({name: value for name, value in zip(("a", "b"), POLICY_DEFAULTS, strict=True)})
    assert policy.defaults() == {"a": "ask", "b": "allow"}
    assert not policy.is_preapproved("a") and policy.is_preapproved("b")
