"""Model agents stream their text answers as TextDelta events (edge.runtime.text_out,
edge.runtime.model_stream, the tool loop), against the model stand-in streaming over SSE."""

from __future__ import annotations

import asyncio

import pytest
from model_standins import ModelStandin, Turn
from stream_kit import KEY, KEY_ENV, stream_plugin

from oz0.edge.model.progress import Progress
from oz0.edge.runtime.events import JobEnded, TextDelta
from oz0.edge.runtime.redact import REDACTED, Redactor
from oz0.edge.runtime.text_out import TextOut


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def shown(deltas: list[TextDelta]) -> str:
    """What a reader holds after the deltas: each replaces the text from its offset."""
    text = ""
    for d in deltas:
        text = text[:d.offset] + d.text
    return text


def run_streamed(rt, agent: str, text: str = "why did main fail?"):
    events: list = []

    async def main():
        job, _ = rt.submit(agent, text)
        reader = rt.stream.reader(job.id)

        async def read():
            while (event := await reader.next(timeout=20)) is not None:
                events.append(event)

        task = asyncio.ensure_future(read())
        ended = await rt.execute(job.id)
        await asyncio.wait_for(task, 10)
        reader.close()
        return ended

    return asyncio.run(main()), events


def test_a_plain_model_answer_streams_token_by_token_and_the_job_records_the_whole_text(tmp_path):
    answer = "The nightly build failed in test_login: a flaky timeout, rerun it."
    with ModelStandin([Turn(text=answer)], token_s=0.02) as model:
        rt = stream_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, events = run_streamed(rt, "writer")
        sent = model.requests[0]["json"]
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert (job.status, job.output) == ("succeeded", answer)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert len(deltas) > 3 and shown(deltas) == answer
    assert isinstance(events[-1], JobEnded)


def test_a_secret_the_model_writes_is_never_streamed_not_even_in_part(tmp_path):
    answer = f"use the key {KEY} to log in"
    with ModelStandin([Turn(text=answer)], token_s=0.0) as model:
        rt = stream_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, events = run_streamed(rt, "writer")
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert job.output == f"use the key {REDACTED} to log in"
    assert shown(deltas) == job.output
    for d in deltas:
        assert KEY[:8] not in d.text and KEY[-8:] not in d.text


def test_the_text_out_holds_back_a_tail_that_may_begin_a_secret():
    published: list[TextDelta] = []
    out = TextOut(published.append, Redactor([KEY]), every_s=0)

    async def feed():
        for piece in ["token: ", KEY[:6], KEY[6:12], KEY[12:], " done"]:
            out.add(piece)
        out.end()

    asyncio.run(feed())
    assert all(KEY[:6] not in d.text for d in published)
    assert shown(published) == f"token: {REDACTED} done"


def test_the_tool_loop_streams_its_final_answer_and_shows_its_steps_as_progress(tmp_path):
    script = [Turn(calls=(("lookup", {"input": "4411"}),)), Turn(text="Build 4411 failed in test_login.")]
    with ModelStandin(script, token_s=0.01) as model:
        rt = stream_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, events = run_streamed(rt, "researcher")
        streamed = [r["json"].get("stream") for r in model.requests]
    assert (job.status, job.output) == ("succeeded", "Build 4411 failed in test_login.")
    assert streamed == [True, True]
    assert shown([e for e in events if isinstance(e, TextDelta)]) == job.output
    steps = [e.message for e in events if isinstance(e, Progress)]
    assert any("calling lookup" in s for s in steps), steps


def test_a_structured_answer_is_not_streamed(tmp_path):
    with ModelStandin([Turn(text='{"verdict": "flaky"}')], token_s=0.0) as model:
        rt = stream_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, events = run_streamed(rt, "verdict")
        sent = model.requests[0]["json"]
    assert job.output == {"verdict": "flaky"}
    assert "stream" not in sent and not [e for e in events if isinstance(e, TextDelta)]


def test_the_terminal_prints_the_text_as_it_comes_cleaned_and_whole_tokens_only():
    import io

    from oz0.adapters.cli.progress_out import TerminalText

    out = io.StringIO()
    paused: list[bool] = []
    text = TerminalText(out, live=True, pause=paused.append)
    text(TextDelta("The build ", 0))
    assert out.getvalue() == "The build "
    text(TextDelta("fai", 10))
    assert out.getvalue() == "The build "          # a token not ended yet waits
    text(TextDelta("led \x1b[2Jquietly.", 13))
    text.close()
    assert out.getvalue() == "The build failed [2Jquietly.\n"   # the escape sequence never reaches the terminal
    assert paused == [True]
