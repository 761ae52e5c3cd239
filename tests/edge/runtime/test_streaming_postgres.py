"""A streamed answer across replicas: the runtime that runs a model job publishes its text, and the
runtime holding the chat message reads it, over one real Postgres (LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from model_standins import ModelStandin, Turn
from stream_kit import KEY, KEY_ENV, stream_plugin

from oz0.edge.runtime.events import JobEnded, TextDelta
from oz0.edge.runtime.runner import Runtime


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def test_the_text_one_replica_streams_reaches_the_reader_on_the_other(tmp_path, postgres_url):
    answer = " ".join(f"word{i}" for i in range(120)) + " " + "é" * 9000   # past one NOTIFY payload at the end
    with ModelStandin([Turn(text=answer)], token_s=0.005) as model:
        runner = stream_plugin(tmp_path / "p", tmp_path / "a", model.url, database_url=postgres_url)
        asker = Runtime(tmp_path / "b", database_url=postgres_url)
        try:
            assert asker.stream.backend.wait_listening(10)   # type: ignore[attr-defined]
            job, _ = asker.submit("writer", "tell me")
            seen: list = []
            ready = threading.Event()

            def read() -> None:
                async def main() -> None:
                    with asker.stream.reader(job.id) as reader:
                        ready.set()
                        while (event := await reader.next(timeout=30)) is not None:
                            seen.append(event)
                asyncio.run(main())

            thread = threading.Thread(target=read)
            thread.start()
            assert ready.wait(10)
            ended = asyncio.run(runner.execute(job.id))
            thread.join(30)
        finally:
            runner.close()
            asker.close()
    shown = ""
    for event in seen:
        if isinstance(event, TextDelta):
            shown = shown[:event.offset] + event.text
    assert ended.output == answer
    assert shown == answer
    assert sum(isinstance(e, TextDelta) for e in seen) > 5
    assert seen[-1] == JobEnded("succeeded")
