"""What `oz0 run` prints of the card after a model's answer was streamed to the terminal.

The answer is printed on stderr as it is written (adapters.cli.progress_out.TerminalText), and the
card on stdout at the end. When both go to one terminal (a person typing `oz0 run` in a shell) the
card's text is what they just read: it is printed once, and the card adds only what is not in it (its
notes, the file that carries a cut result). When stdout goes elsewhere (a pipe, a file) it gets the
whole card, as a script reading it expects; so does any card that is more than the text streamed
(a table, a status, a text that is not the streamed one).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import IO

from oz0.edge.cards.model import Card

__all__ = ["card_to_print", "same_terminal"]


def same_terminal(out: IO[str], err: IO[str]) -> bool:
    """Whether `out` and `err` are one terminal (the same device), so what went to one was seen with the other."""
    try:
        return out.isatty() and err.isatty() and os.path.samestat(os.fstat(out.fileno()), os.fstat(err.fileno()))
    except (OSError, ValueError):  # a stream with no descriptor (a test's StringIO), or a closed one
        return False


def card_to_print(card: Card, streamed: str, *, target: str, out: IO[str], err: IO[str]) -> Card:
    """The card as printed on `out` after `streamed` was printed on `err`: without the text (nor the
    title that heads it) when a person already saw that text on the same terminal, else whole."""
    if (not streamed or target != "text" or card.form != "text" or not card.drawn or card.status is not None
            or card.text.strip() != streamed.strip() or not same_terminal(out, err)):
        return card
    return replace(card, text="", title=None)
