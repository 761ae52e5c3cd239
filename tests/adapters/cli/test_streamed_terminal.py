"""`oz0 run` of a model agent whose text answer streams: on a terminal (a pty for stdin, stdout and
stderr) the person reads the answer once, as it is written, and the card adds only the job's line;
with stdout piped (a script reading the card) the card on stdout is whole, the answer streamed on
the terminal's stderr beside it. A real `oz0` process, the model stand-in streaming over SSE."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from model_standins import ModelStandin, Turn
from stream_kit import KEY, KEY_ENV, stream_plugin
from terminal import on_a_pty

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]
ANSWER = "The nightly build failed in test_login: a flaky timeout, rerun it."


def _env(tmp_path: Path, url: str) -> dict[str, str]:
    stream_plugin(tmp_path / "p", tmp_path / "h", url).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(tmp_path / "h"), **{KEY_ENV: KEY})
    env.pop("PYTEST_VERSION", None)  # a user's terminal: no test run's quiet defaults
    return env


def test_on_a_terminal_the_streamed_answer_is_printed_once(tmp_path: Path) -> None:
    with ModelStandin([Turn(text=ANSWER)], token_s=0.01) as model:
        code, text = on_a_pty([*OZ0, "run", "writer", "why did main fail?"], _env(tmp_path, model.url), [])
    assert code == 0, text
    assert text.count(ANSWER) == 1, text
    lines = [line for line in text.replace("\r\n", "\n").split("\n") if line]
    assert lines[0] == ANSWER and lines[-1].startswith("job ") and "succeeded" in lines[-1], lines
    assert len(lines) == 2, lines  # no title nor text again: the card added nothing to what was read


def test_with_stdout_piped_the_card_is_whole_on_stdout(tmp_path: Path) -> None:
    with ModelStandin([Turn(text=ANSWER)], token_s=0.01) as model:
        env = _env(tmp_path, model.url)
        primary, secondary = pty.openpty()
        try:
            done = subprocess.run([*OZ0, "run", "writer", "why did main fail?"], stdin=secondary,
                                  stdout=subprocess.PIPE, stderr=secondary, env=env, timeout=90)
            os.close(secondary)
            seen = b""
            while True:
                try:
                    chunk = os.read(primary, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
        finally:
            os.close(primary)
    assert done.returncode == 0
    assert done.stdout.decode().splitlines() == ["writer", ANSWER]   # the card, as a script reads it
    assert seen.decode().count(ANSWER) == 1                           # streamed on the terminal
