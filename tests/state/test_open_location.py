"""A ``--db`` value parses once into a ``Location``, and the location is what travels:
``locate`` and ``open_store`` take it as it is."""

from __future__ import annotations

from pathlib import Path

from claimfsm.state.open import Location, locate, open_store


def test_a_location_is_the_value_split_and_remembers_the_text() -> None:
    url = "postgresql://u@h/db?sslmode=require&index=ev.db"
    where = locate(url)
    assert where == Location(store="postgresql://u@h/db?sslmode=require", index="ev.db",
                             url=True, text=url)
    assert locate("s.db") == Location(store="s.db", index="s.db", url=False, text="s.db")
    assert locate(Path("s.db")) == locate("s.db")


def test_a_location_is_taken_as_it_is(tmp_path: Path) -> None:
    where = locate(str(tmp_path / "loc.db"))
    assert locate(where) is where
    with open_store(where) as store:
        assert list(store.sessions()) == []
    with open_store(where, readonly=True) as again:  # the file the location named
        assert list(again.sessions()) == []
