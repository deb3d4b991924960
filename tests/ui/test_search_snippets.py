"""A search's results in the real window's list show, under each title, the words around the match
in the chat's messages (real SQLite: FTS5), drawn smaller on a second line with the match in bold
and in view however narrow the list; a chat found by its title alone keeps one line, and the
words go when the search is cleared."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics

from app.storage.history import History, TurnMessage
from app.ui.conversation_lines import SNIPPET_ROLE, fit_runs, snippet_runs

LONG = (
    "Roses want a sunny place and deep soil. In spring, cut the old canes back to three buds and "
    "feed them well; prune climbers after they flower, not before, or you lose the year's blooms."
)


def _search(w, text: str) -> None:
    w.conversations_ctl.list.search.setText(text)
    w.conversations_ctl.search_conversations(text)


def test_the_words_around_the_match_are_shown_under_each_title(qtbot, make_window):
    h = History()
    garden = h.create_conversation("Garden").id
    h.record_turn(
        garden, None, [TurnMessage("user", "When do I prune roses?"), TurnMessage("assistant", LONG)]
    )
    climbers = h.create_conversation("Climbers").id  # found by its title alone
    h.record_turn(climbers, None, [TurnMessage("user", "hello"), TurnMessage("assistant", "hi")])
    w = make_window(None, history=h)
    w.resize(900, 600)
    w.show()
    lst = w.conversations_ctl.list

    _search(w, "climbers")
    assert sorted(lst.ids()) == sorted([garden, climbers])
    words = lst.item_for(garden).data(SNIPPET_ROLE)
    assert "\x02climbers\x03" in words and len(words) < len(LONG)
    assert "prune climbers after" in lst.item_for(garden).toolTip()  # the marks are not shown
    assert lst.item_for(climbers).data(SNIPPET_ROLE) is None
    two, one = (lst.list.visualItemRect(lst.item_for(c)).height() for c in (garden, climbers))
    assert two > one  # a second line, under the title
    assert lst.titles() == ["Climbers", "Garden"] or lst.titles() == [
        "Garden",
        "Climbers",
    ]  # titles as they are

    _search(w, "")
    assert lst.item_for(garden).data(SNIPPET_ROLE) is None
    assert lst.list.visualItemRect(lst.item_for(garden)).height() == one


def test_the_match_stays_whole_and_in_view_on_a_narrow_line(qtbot):
    font = QFont()
    normal = QFontMetrics(font)
    font.setBold(True)
    bold = QFontMetrics(font)
    runs = snippet_runs("…" + "words before it " * 6 + "\x02climbers\x03" + " and words after it" * 6 + "…")
    assert [m for _t, m in runs] == [False, True, False]
    wide = sum(normal.horizontalAdvance(t) for t, _m in runs)
    for width in (120, 200, 400):
        fitted = fit_runs(runs, width, normal, bold)
        assert ("climbers", True) in fitted  # whole, and in bold
        before = fitted[0][0]
        assert before.startswith("…") and normal.horizontalAdvance(before) <= width // 3
        assert fitted[-1][0].endswith("…")  # what follows is cut at the right
        assert sum((bold if m else normal).horizontalAdvance(t) for t, m in fitted) <= width
    assert fit_runs(runs, wide + 100, normal, bold) == runs  # room for all: as it is


def test_a_search_that_finds_more_than_it_lists_says_so_at_the_end(qtbot, make_window):
    """A search lists the latest :data:`SEARCH_SHOWN` chats that match; when more match, its last
    line says so (and how to find the others), and one that lists all of them says nothing."""
    from app.ui.conversation_list import SEARCH_SHOWN

    h = History()
    ids = []
    for n in range(SEARCH_SHOWN + 2):
        cid = h.create_conversation(f"Chat {n}").id
        h.record_turn(
            cid, None, [TurnMessage("user", f"about tulips, part {n}"), TurnMessage("assistant", "ok")]
        )
        ids.append(cid)
    h.create_conversation("Roses")
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list

    _search(w, "tulips")
    assert len(lst.ids()) == SEARCH_SHOWN and ids[0] not in lst.ids() and ids[-1] in lst.ids()
    last = lst.list.item(lst.list.count() - 1)
    assert last.text() == f"Showing the {SEARCH_SHOWN} latest matches" and "add a word" in last.toolTip()
    assert not last.flags() & Qt.ItemFlag.ItemIsSelectable and last.text() not in lst.headers()

    _search(w, "tulips part 10")  # 10, 100 and 101: all listed, nothing said
    assert sorted(lst.ids()) == sorted([ids[10], ids[100], ids[101]])
    assert lst.list.item(lst.list.count() - 1).data(Qt.ItemDataRole.UserRole) is not None
    _search(w, "")  # every chat, nothing said
    assert len(lst.ids()) == SEARCH_SHOWN + 3
    assert all("latest matches" not in lst.list.item(i).text() for i in range(lst.list.count()))
