"""People by name wherever oz0 names them: the display names chat channels learned, kept in the journal
so every replica, the console and the CLI show "Ana Lima" where the journal says `slack:U04ABCD`.

One row per person (`who`, as the journal records askers, answerers and grantors), written by a channel
when it learns a name that changed (adapters.chat.names, at most once an hour per person), read where a
person is shown: budget grants (`BudgetBook.states`), `oz0 jobs show`, the console. The ids stay the
journal's and the JSON's; a name is only ever shown, as plain text. Revision 0023 makes the table.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import Column, Float, String, Table, select, update
from sqlalchemy.exc import IntegrityError

from oz0.edge.runtime.store import metadata

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["MAX_NAME_CHARS", "People", "people", "shown_as"]

MAX_WHO_CHARS = 200
MAX_NAME_CHARS = 100
CONSOLE_PREFIX = "console:"   # a console login's name is its id: `console:Ana Lima`

people = Table(
    "people", metadata,
    Column("who", String(MAX_WHO_CHARS), primary_key=True),
    Column("name", String(MAX_NAME_CHARS), nullable=False),
    Column("at", Float, nullable=False),
)


def shown_as(who: str, name: str | None) -> str:
    """How a person is shown: their known name, a console login's own name, else the journal's id."""
    if name:
        return name
    return who[len(CONSOLE_PREFIX):] if who.startswith(CONSOLE_PREFIX) and len(who) > len(CONSOLE_PREFIX) else who


class People:
    """The journal's known names (one `Store`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def remember(self, who: str, name: str) -> None:
        """Keep `who`'s display name (the newest wins; two replicas writing at once both succeed)."""
        who, name = who[:MAX_WHO_CHARS], " ".join(name.split())[:MAX_NAME_CHARS]
        if not who or not name:
            return
        now = time.time()
        with self.store.engine.begin() as conn:
            if conn.execute(update(people).where(people.c.who == who).values(name=name, at=now)).rowcount:
                return
            try:
                with conn.begin_nested():
                    conn.execute(people.insert().values(who=who, name=name, at=now))
            except IntegrityError:
                conn.execute(update(people).where(people.c.who == who).values(name=name, at=now))

    def names(self, whos: Iterable[str]) -> dict[str, str]:
        """who -> display name, for those the journal knows."""
        wanted = sorted({w[:MAX_WHO_CHARS] for w in whos if w})
        if not wanted:
            return {}
        with self.store.engine.connect() as conn:
            return {r.who: r.name for r in conn.execute(select(people.c.who, people.c.name)
                                                        .where(people.c.who.in_(wanted)))}

    def shown(self, who: str) -> str:
        """`who` as people read it (`shown_as` with the journal's name)."""
        return shown_as(who, self.names([who]).get(who))
