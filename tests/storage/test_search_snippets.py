"""The words around a search's match, per conversation found (the list shows them under its
title), from real SQLite: with FTS5 and with the LIKE fallback a SQLite without it uses."""

from __future__ import annotations

import pytest

from app.storage.history import MATCH_MARKS, History, TurnMessage

LONG = (
    "Roses want a sunny place and deep soil. In spring, cut the old canes back to three buds and "
    "feed them well; prune climbers after they flower, not before, or you lose the year's blooms."
)


@pytest.fixture(params=["fts5", "like"])
def h(request, tmp_path):
    with History(tmp_path / "history.sqlite3") as store:
        if request.param == "like":
            store.has_fts = False  # as on a SQLite built without FTS5
        yield store


def _chat(h: History, title: str, *texts: str) -> int:
    cid = h.create_conversation(title).id
    msgs = [TurnMessage("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    h.record_turn(cid, None, msgs)
    return cid


def test_each_found_chat_has_the_words_around_its_first_match(h):
    garden = _chat(h, "Garden", "When do I prune roses?", LONG)
    trip = _chat(h, "Trip", "Pack light", "Take a rain coat.\nAnd climbers' boots.")
    climbers = _chat(h, "Climbers", "nothing here")  # found by its title alone
    found = [c.id for c in h.search("climbers")]
    assert sorted(found) == sorted([garden, trip, climbers])
    snippets = h.search_snippets("climbers", found)
    assert set(snippets) == {garden, trip}  # by its title alone: none
    assert "\x02climbers\x03" in snippets[garden] and snippets[garden].startswith("…")  # the match marked
    assert len(snippets[garden]) < len(LONG)
    assert snippets[trip].endswith("\x02climbers\x03' boots.") and "\n" not in snippets[trip]
    assert MATCH_MARKS == ("\x02", "\x03")


def test_every_word_must_match_one_message_and_only_the_ids_asked_are_read(h):
    garden = _chat(h, "Garden", "When do I prune roses?", LONG)
    other = _chat(h, "Other", "prune the hedge")
    assert h.search_snippets("prune roses", [garden, other]).keys() == {garden}
    assert h.search_snippets("prune", [other]).keys() == {other}
    assert h.search_snippets("prune", []) == {} and h.search_snippets("  ", [garden]) == {}
    assert "prune" in h.search_snippets("prune", [garden])[garden].lower()  # the first message's
