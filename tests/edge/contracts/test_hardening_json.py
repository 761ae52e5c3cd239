"""JSON data that tries to wedge or hide: deep nesting, lone surrogates, NaN, huge integers. Each ends
as a clear failure a user can read (exit 2, InvalidOutput, a 502), never an internal error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oz0.edge.contracts.json_data import MAX_JSON_DEPTH

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def oz0(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=60)


# 4. deep nesting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("to", ["text", "card", "slack"])
def test_a_1000_level_result_is_exit_2_with_one_line(tmp_path, to):
    result = tmp_path / "deep.json"
    result.write_text("[" * 1000 + "]" * 1000)
    done = oz0("render", str(result), "--to", to)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "internal error" not in lines[0] and "Recursion" not in lines[0]
    assert str(result) in lines[0] and f"deeper than {MAX_JSON_DEPTH} levels" in lines[0]


def test_a_600_level_schema_is_exit_2_with_one_line(tmp_path):
    schema = tmp_path / "deep.schema.json"
    schema.write_text('{"not":' * 600 + "{}" + "}" * 600)
    result = tmp_path / "ok.json"
    result.write_text('{"a": 1}')
    done = oz0("render", str(result), "--schema", str(schema))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "internal error" not in lines[0]
    assert str(schema) in lines[0] and f"deeper than {MAX_JSON_DEPTH} levels" in lines[0]


# 5-7. answers that wedge or hide ---------------------------------------------------------------

import asyncio  # noqa: E402

import httpx  # noqa: E402
from console_plugin import ConsoleThread  # noqa: E402
from plugin_kit import make_plugin  # noqa: E402

from oz0.adapters.cli import main  # noqa: E402
from oz0.edge.flows.engine import FLOW_ENGINE  # noqa: E402
from oz0.edge.plugins.manifest import load_plugin  # noqa: E402
from oz0.edge.runtime.install import install_plugin  # noqa: E402
from oz0.edge.runtime.runner import Runtime  # noqa: E402
from oz0.renderers import RENDERERS  # noqa: E402

BIG = 123456789012345678901234567890
ANSWERS = '''
import math
def surrogate(x): return "x\\ud800y"
def surrogate_key(x): return {"n\\udfff": 1}
def nan(x): return {"n": float("nan")}
def inf(x): return [{"n": math.inf}]
def fine(x): return {"n": 1}
def partial_nan(x):
    from oz0.edge.model.job import JobFailure
    raise JobFailure("Upstream", "half done", partial_output={"done": float("nan")})
def big(x): return {"n": %d, "rows": [{"id": %d, "name": "a"}]}
def big70(x): return 2**70
''' % (BIG, BIG)  # noqa: UP031  (Python source full of braces: % keeps them as they are)
LOOSE = {"type": "object"}
ANY = {}


def _runtime(tmp_path: Path) -> Runtime:
    python = lambda entry, **kw: {"kind": "python", "entry": f"answers:{entry}", "input": "text", **kw}  # noqa: E731
    root = make_plugin(tmp_path / "plugin", agents={
        "surrogate": python("surrogate", output="text"),
        "surrogate-key": python("surrogate_key", output_schema="schemas/loose.json"),
        "nan": python("nan", output_schema="schemas/loose.json"),
        "inf": python("inf", output_schema="schemas/any.json"),
        "fine": python("fine", output_schema="schemas/loose.json"),
        "partial-nan": python("partial_nan", output_schema="schemas/loose.json", failures={"Upstream": {}}),
        "big": python("big", output_schema="schemas/loose.json"),
        "big70": python("big70", output_schema="schemas/int.json"),
        "big-command": {"kind": "command", "input": "text", "output_schema": "schemas/loose.json",
                        "command": ["python", "-c", f"print('{{\"n\": {BIG}}}')"]},
    }, files={"answers.py": ANSWERS, "schemas/loose.json": LOOSE, "schemas/any.json": ANY,
              "schemas/int.json": {"type": "integer"}})
    runtime = Runtime(tmp_path / "home", backoff_s=0.01, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(root))
    return runtime


def test_a_lone_surrogate_answer_fails_the_job_with_a_502(tmp_path):
    runtime = _runtime(tmp_path)
    try:
        with ConsoleThread(runtime) as server, httpx.Client(base_url=server.url, timeout=20) as http:
            r = http.post("/v1/agents/surrogate/runs", content="hi", headers={"content-type": "text/plain"})
            assert r.status_code == 502, r.text
            body = r.json()
            assert body["error_code"] == "invalid_output"
            assert "surrogate" in body["error"]
            assert body["job"]["status"] == "failed"
            r = http.post("/v1/agents/surrogate-key/runs", content="hi", headers={"content-type": "text/plain"})
            assert r.status_code == 502 and r.json()["job"]["status"] == "failed", r.text
        assert [j.status for j in runtime.jobs()] == ["failed", "failed"]
        assert all(j.failure_kind == "InvalidOutput" for j in runtime.jobs())
    finally:
        runtime.close()


@pytest.mark.parametrize("agent", ["nan", "inf"])
def test_nan_or_infinity_is_invalid_output_never_succeeded(tmp_path, agent):
    runtime = _runtime(tmp_path)
    try:
        job = asyncio.run(runtime.run(agent, "hi"))
        assert job.status == "failed" and job.failure_kind == "InvalidOutput"
        assert "not a JSON number" in job.failure_reason
        assert "$" in job.failure_reason
    finally:
        runtime.close()


def test_one_bad_job_never_hides_the_others_from_jobs_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OZ0_HOME", str(tmp_path / "home"))
    runtime = _runtime(tmp_path)
    try:
        good = asyncio.run(runtime.run("fine", "hi"))
        bad = asyncio.run(runtime.run("nan", "hi"))
        partial = asyncio.run(runtime.run("partial-nan", "hi"))
        assert partial.status == "failed" and partial.failure_kind == "Upstream"
        assert partial.output is None and "not JSON data" in partial.failure_reason
    finally:
        runtime.close()
    assert main(["jobs", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    ids = {j["id"]: j for j in shown["jobs"]}
    assert good.id in ids and bad.id in ids and partial.id in ids
    assert ids[bad.id]["status"] == "failed"


def test_a_30_digit_integer_stays_30_digits_on_every_card(tmp_path):
    runtime = _runtime(tmp_path)
    try:
        job = asyncio.run(runtime.run("big", "hi"))
        assert job.status == "succeeded", job.failure_reason
        assert runtime.job(job.id).output["n"] == BIG  # the journal keeps it exact
        card = runtime.card(runtime.job(job.id))
        for name, renderer in RENDERERS.items():
            drawn = renderer(card)
            text = drawn if isinstance(drawn, str) else json.dumps(getattr(drawn, "payload", drawn), default=str)
            assert str(BIG) in text, name
            assert "e+29" not in text, name
        assert str(BIG) in json.dumps(card.to_dict(), default=str)
        seventy = asyncio.run(runtime.run("big70", "hi"))
        assert seventy.status == "succeeded", seventy.failure_reason
        assert runtime.job(seventy.id).output == 2**70
        command = asyncio.run(runtime.run("big-command", "hi"))
        assert command.status == "succeeded", command.failure_reason
        assert runtime.job(command.id).output == {"n": BIG}
    finally:
        runtime.close()


def test_a_30_digit_integer_from_oz0_render_stays_exact(tmp_path):
    result = tmp_path / "big.json"
    result.write_text(json.dumps({"n": BIG}))
    done = oz0("render", str(result), "--to", "card")
    assert done.returncode == 0, done.stderr
    assert str(BIG) in done.stdout and "e+29" not in done.stdout
