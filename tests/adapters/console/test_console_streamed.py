"""A running model job's text on its console page while it is written (adapters/console/streamed.py),
over real HTTP on loopback, against the model stand-in streaming over SSE."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
from console_plugin import ConsoleThread
from model_standins import ModelStandin, Turn
from stream_kit import KEY, KEY_ENV, stream_plugin

WORDS = tuple(f"word{i} " for i in range(40)) + ("<b>bold</b> ", "done.")


def test_the_job_page_shows_the_answer_so_far_escaped_then_the_card(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ModelStandin([Turn(text="".join(WORDS), pieces=WORDS)], token_s=0.08) as model:
        runtime = stream_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, _ = runtime.submit("writer", "go")
        try:
            with ConsoleThread(runtime) as console, httpx.Client(base_url=console.url, timeout=20) as browser:
                runner = threading.Thread(target=lambda: asyncio.run(runtime.execute(job.id)))
                runner.start()
                deadline = time.monotonic() + 20
                while runtime.job(job.id).status != "running" and time.monotonic() < deadline:
                    time.sleep(0.02)
                browser.get(f"/jobs/{job.id}")             # the first view starts reading its text
                pages = []
                while runner.is_alive() and time.monotonic() < deadline:
                    time.sleep(0.5)
                    pages.append(browser.get(f"/jobs/{job.id}").text)
                runner.join(20)
                final = browser.get(f"/jobs/{job.id}").text
        finally:
            runtime.close()
    shown = [p for p in pages if 'id="job-text"' in p]
    assert shown, "no page showed the answer so far"
    assert any("word3" in p and "done." not in p.split('id="job-text"')[1].split("</pre>")[0] for p in shown)
    assert all("<b>bold</b>" not in p for p in pages)
    assert 'id="job-text"' not in final and "done." in final
