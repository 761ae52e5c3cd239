"""A long job's progress in the chat "working..." message, seen on the Slack and Discord stand-ins:
the latest report with the time so far, at most one update every PROGRESS_EVERY_S (2 s), the last
one before the card and none after it, and a Slack 429 pausing the updates for its Retry-After.

Timing is asserted as order and minimum spacing (what the rule promises), never as exact counts of a
loaded machine: an agent reporting every 0.1 s for ~5 s gets about 3 updates, never two within 2 s.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from discord_harness import running_channel as discord_channel
from discord_harness import texts as discord_texts
from slack_harness import answer_response, install_test_plugin, running_channel

from oz0.adapters.chat.flow import PROGRESS_EVERY_S
from oz0.adapters.chat.slack_wire import PRIVATE_PROGRESS_USES

SPACING = PROGRESS_EVERY_S - 0.05   # the stand-in's clock reads arrivals, a little after each send


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 90))


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OZ0_TEST_RUNS", str(oz0_home.parent / "runs.txt"))
    return oz0_home


def items(shown: list[str]) -> list[int]:
    return [int(re.search(r"item (\d+)", s).group(1)) for s in shown]


def check_updates(shown: list[str], at: list[float], card_at: float) -> None:
    """What every platform's progress must look like: spaced, newest last, before the card."""
    assert len(shown) >= 2, shown
    assert all(b - a >= SPACING for a, b in zip(at, at[1:])), [round(b - a, 2) for a, b in zip(at, at[1:])]
    assert len(shown) <= (card_at - at[0]) / PROGRESS_EVERY_S + 1
    assert items(shown) == sorted(set(items(shown))), shown   # always a newer report than the last
    assert all(t < card_at for t in at)
    assert re.search(r"Working on echo\.\.\. \d+ s", shown[-1]) and "/50 ▓" in shown[-1], shown[-1]
    assert items(shown)[-1] > 10   # the latest report, not the first ones of each window


def test_slack_progress_updates_the_working_message_at_most_every_2_s_until_the_card(home: Path) -> None:
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            await h.mention("echo count 50 0.1", event_id="EvCOUNT")
            await h.slack.wait_for("chat.postMessage")
            while not any("echo: count" in json.dumps(c.args) for c in h.slack.of("chat.update")):
                await asyncio.sleep(0.05)
            await asyncio.sleep(PROGRESS_EVERY_S + 0.5)   # nothing may come after the card
            updates = h.slack.of("chat.update")
            [card] = [c for c in updates if "echo: count 50 0.1" in json.dumps(c.args)]
            assert updates[-1] is card
            progress = [c for c in updates if c is not card]
            check_updates([json.dumps(c.args, ensure_ascii=False) for c in progress],
                          [c.at for c in progress], card.at)
    run(main())


def test_a_report_inside_the_window_is_shown_when_it_ends(home: Path) -> None:
    """Trailing edge: item 2 comes 0.1 s after item 1 and nothing after it; it is shown 2 s later."""
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            await h.mention("echo count 2 0.1 3", event_id="EvTRAIL")
            first, second, card = await h.slack.wait_for("chat.update", 3, timeout=20)
            assert "item 1" in json.dumps(first.args) and "2/2 ▓▓▓▓▓▓▓▓▓▓" in json.dumps(second.args, ensure_ascii=False)
            assert second.at - first.at >= SPACING and "echo: count 2 0.1 3" in json.dumps(card.args)
    run(main())


def test_a_slack_429_pauses_progress_for_its_retry_after(home: Path) -> None:
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            h.slack.rate_limit_once["chat.update"] = 3
            await h.mention("echo count 60 0.1", event_id="EvLIMIT")
            first, second = await h.slack.wait_for("chat.update", 2, timeout=20)
            assert first.status == 429 and second.status == 200
            assert second.at - first.at >= 2.95   # no update while Slack said to wait
            while not any("echo: count" in json.dumps(c.args) for c in h.slack.of("chat.update")):
                await asyncio.sleep(0.05)
            updates = h.slack.of("chat.update")
            assert all(b.at - a.at >= SPACING for a, b in zip(updates[1:], updates[2:-1]))
    run(main())


def test_a_private_slack_view_spends_at_most_its_share_of_the_response_url(home: Path) -> None:
    """A slash command's answer goes through its response_url, which Slack takes 5 times."""
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            await h.command("echo count 50 0.1", trigger_id="TR-COUNT")
            answer = await answer_response(h.slack, timeout=30)
            responses = h.slack.of("response")
            progress = responses[:responses.index(answer)]
            assert 1 <= len(progress) <= PRIVATE_PROGRESS_USES and len(responses) <= 5
            assert all(p.args["replace_original"] is True and "Working on echo" in p.args["text"] for p in progress)
            assert "echo: count 50 0.1" in json.dumps(answer.args)
    run(main())


def test_discord_progress_edits_the_original_response_at_most_every_2_s_until_the_card(home: Path) -> None:
    home.parent.joinpath("discord-home").mkdir()

    async def main() -> None:
        async with discord_channel(home.parent / "discord-home") as d:
            ask = await d.send(d.standin.slash("ask", {"agent": "echo", "input": "count 50 0.1"}, **d.where()))
            path = f"/webhooks/{d.standin.app_id}/{ask['token']}/messages/@original"

            def edits() -> list[Any]:
                return [r for r in d.standin.requests if r.method == "PATCH" and r.path == path]

            while not any("echo: count" in discord_texts(r.body.get("components") or []) for r in edits()):
                await asyncio.sleep(0.05)
            await asyncio.sleep(PROGRESS_EVERY_S + 0.5)
            done = edits()
            shown = [discord_texts(r.body.get("components") or []) for r in done]
            assert "echo: count 50 0.1" in shown[-1] and not any("echo: count" in s for s in shown[:-1])
            at = [r.at for r in done]
            check_updates(shown[:-1], at[:-1], at[-1])
    run(main())
