"""Conversation folders (``m014_conversation_folder``): a conversation put in a folder by name and
taken out without changing its last change; the folders listed by name; a folder renamed (into one
that exists: merged) or removed (its conversations kept); names folded and refused; a branch stays
in its folder, an import goes in none; a history written before the migration. Real SQLite."""

from __future__ import annotations

import pytest

from app.storage.export import conversation_from_json, conversation_json
from app.storage.history import MAX_FOLDER_NAME, ConversationNotFound, History, TurnMessage, folder_name
from tests.support.history import history_before


def _chat(h: History, title: str) -> int:
    cid = h.create_conversation(title).id
    h.record_turn(cid, None, [TurnMessage("user", f"about {title}"), TurnMessage("assistant", "sure")])
    return cid


def test_a_conversation_goes_in_a_folder_and_out_and_keeps_its_last_change(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        a, b, c = _chat(h, "Budget"), _chat(h, "Trip"), _chat(h, "Recipes")
        before = h.get_conversation(a).updated
        assert h.folders() == [] and h.get_conversation(a).folder is None
        h.set_folder(a, "  Work\t stuff ")  # a new name makes the folder; white space folded
        h.set_folder(b, "home")
        h.set_folder(c, "Work stuff")
        assert h.get_conversation(a).folder == "Work stuff" == h.load_conversation(c).folder
        assert h.folders() == ["home", "Work stuff"]  # by name, case aside
        assert h.get_conversation(a).updated == before  # filing is no change to the chat
        assert [x.id for x in h.list_conversations()] == [c, b, a]  # the history's order is kept
        assert {x.id: x.folder for x in h.search("about")} == {a: "Work stuff", b: "home", c: "Work stuff"}
        h.set_folder(b, None)
        assert h.get_conversation(b).folder is None and h.folders() == ["Work stuff"]
        with pytest.raises(ConversationNotFound):
            h.set_folder(404, "Work stuff")


def test_a_folder_is_renamed_merged_and_removed_and_its_conversations_are_kept(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        a, b, c = _chat(h, "One"), _chat(h, "Two"), _chat(h, "Three")
        h.set_folder(a, "Drafts")
        h.set_folder(b, "Drafts")
        h.set_folder(c, "Final")
        assert h.rename_folder("Drafts", " Early   drafts ") == 2
        assert h.folders() == ["Early drafts", "Final"]
        assert h.rename_folder("Final", "Early drafts") == 1  # into a folder there is: one folder
        assert h.folders() == ["Early drafts"]
        assert {h.get_conversation(x).folder for x in (a, b, c)} == {"Early drafts"}
        assert h.rename_folder("Nowhere", "Else") == 0 and h.folders() == ["Early drafts"]
        assert h.remove_folder("Early drafts") == 3
        assert h.folders() == [] and len(h.list_conversations()) == 3  # the chats are kept


def test_folder_names_are_folded_and_blank_or_long_ones_refused(tmp_path):
    assert folder_name(" a \n b ") == "a b"
    assert folder_name("x" * MAX_FOLDER_NAME) == "x" * MAX_FOLDER_NAME
    with History(tmp_path / "h.sqlite3") as h:
        cid = _chat(h, "Chat")
        h.set_folder(cid, "Kept")
        for bad in ("", "  \t ", "x" * (MAX_FOLDER_NAME + 1)):
            with pytest.raises(ValueError, match="folder"):
                h.set_folder(cid, bad)
            with pytest.raises(ValueError, match="folder"):
                h.rename_folder("Kept", bad)
        assert h.get_conversation(cid).folder == "Kept"  # nothing changed


def test_a_branch_stays_in_its_folder_and_an_import_goes_in_none(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = _chat(h, "Plan")
        h.set_folder(cid, "Projects")
        branch = h.branch_conversation(cid, 0)
        assert branch.folder == "Projects" == h.get_conversation(branch.id).folder
        conv = h.load_conversation(cid)
        restored = h.restore_conversation(conversation_from_json(conversation_json(conv)))
        assert h.get_conversation(restored.id).folder is None
        plain = _chat(h, "Loose")
        assert h.branch_conversation(plain, 0).folder is None


def test_a_history_from_before_the_migration_gets_the_column(tmp_path):
    p = tmp_path / "before.sqlite3"
    history_before(
        p,
        "m014_conversation_folder",
        "INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old chat', 1.0, 2.0);",
    )
    with History(p) as h:
        assert h.applied_migrations == ["m014_conversation_folder"]
        assert h.get_conversation(1).folder is None and h.folders() == []
        h.set_folder(1, "Old")
        assert h.list_conversations()[0].folder == "Old"


def test_the_search_finds_a_folder_s_conversations_by_its_name(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        a, b, c = _chat(h, "Budget"), _chat(h, "Trip"), _chat(h, "Work notes")
        h.set_folder(a, "Home office")
        h.set_folder(b, "Home office")
        assert [x.id for x in h.search("office")] == [b, a]  # the folder's name
        assert [x.id for x in h.search("home budget")] == [a]  # every word: the folder's or the title's
        assert [x.id for x in h.search("work")] == [c]  # a title, as before
        assert [x.id for x in h.search("about trip")] == [b]  # and the messages
        h.remove_folder("Home office")
        assert h.search("office") == []
