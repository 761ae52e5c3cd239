"""Person-step answer latency: from the API's 202 to the flow's next step starting, under `oz0 serve`.

Starts a real `oz0 serve` (console and runtime API, the job engine on SQLite) on a temporary home with a
plugin whose flow asks a person and then runs a `stamp` agent, which writes the wall-clock time it
started. For each run: POST the flow (it answers 202, waiting), POST the answer (202), and read the stamp
once the job has ended: the latency is the stamp minus the moment the answer's 202 arrived. Until the
stamp's file appears the script looks at the file, not at the API (a GET every 10 ms loaded the server it
measured: p50 48 ms then, 28 ms without). Prints p50 and p99 over `--count` answers.

The figure of another checkout's code (the code before a change) is measured the same way with its
own interpreter and printed beside this one's:

    .venv/bin/python bench/answer.py [--count 30] [--before /work/main --before-python /work/main/.venv/bin/python]

Target: p50 <= 50 ms (issue 23).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_P50_MS = 50.0

AGENTS_PY = """
import os, time

def stamp(value):
    started = time.time()
    with open(os.path.join(os.environ["OZ0_BENCH_STAMPS"], str(value["n"])), "w") as out:
        out.write(repr(started))
    return {"n": value["n"]}
"""
SCHEMA_N = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
SCHEMA_OK = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
FLOW = """description: Ask, then stamp the time the next step starts.
input_schema: schemas/n.json
output_schema: schemas/n.json
steps:
  - id: approve
    ask: "Go on with {input.n}?"
    answer_schema: schemas/ok.json
  - id: stamp
    agent: stamp
    input: {n: input.n}
"""


def write_plugin(root: Path) -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "schemas").mkdir()
    (root / "flows").mkdir()
    (root / "plugin.yaml").write_text("name: benchanswer\nversion: 0.1.0\n")
    (root / "agents.py").write_text(AGENTS_PY)
    (root / "schemas" / "n.json").write_text(json.dumps(SCHEMA_N))
    (root / "schemas" / "ok.json").write_text(json.dumps(SCHEMA_OK))
    (root / "agents" / "stamp.yaml").write_text(
        "description: writes when it started\nkind: python\nentry: agents:stamp\n"
        "input_schema: schemas/n.json\noutput_schema: schemas/n.json\n")
    (root / "flows" / "ask-then-stamp.yaml").write_text(FLOW)
    return root


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def call(url: str, body: bytes | None = None, *, method: str = "GET") -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"content-type": "application/json"} if body is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def measure(python: str, checkout: Path, count: int) -> list[float]:
    """Latencies in ms of `count` answers, against `oz0 serve` of `checkout` run by `python`."""
    with tempfile.TemporaryDirectory() as tmp:
        home, stamps = Path(tmp) / "home", Path(tmp) / "stamps"
        stamps.mkdir()
        env = {**os.environ, "OZ0_HOME": str(home), "OZ0_BENCH_STAMPS": str(stamps), "PYTHONPATH": "",
               "OZ0_REPLICA_ID": "bench", "DBOS__VMID": "bench"}
        plugin = write_plugin(Path(tmp) / "plugin")
        subprocess.run([python, "-m", "oz0.adapters.cli", "plugin", "install", str(plugin)], env=env, check=True,
                       capture_output=True, cwd=checkout)
        port = free_port()
        log = open(Path(tmp) / "serve.log", "w")  # noqa: SIM115  (the server writes it until it stops)
        server = subprocess.Popen([python, "-m", "oz0.adapters.cli", "serve", "--port", str(port)], env=env,
                                  stdout=log, stderr=subprocess.STDOUT, cwd=checkout)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if call(f"{base}/readyz")[0] == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"oz0 serve did not become ready: {(Path(tmp) / 'serve.log').read_text()[-2000:]}")
                time.sleep(0.1)
            latencies = []
            for n in range(count + 2):  # the first two warm the engine's queues and imports
                status, started = call(f"{base}/v1/flows/ask-then-stamp/runs", json.dumps({"n": n}).encode(),
                                       method="POST")
                assert status == 202, (status, started)
                job_id = started["job"]["id"]
                time.sleep(0.05)  # the workflow is in its durable wait, as a person would find it
                status, answered = call(f"{base}/v1/jobs/{job_id}/answer", b'{"ok": true}', method="POST")
                got_202 = time.time()
                assert status == 202, (status, answered)
                stamp = stamps / str(n)
                for _ in range(3000):  # the stamp file, not the server: polling the API would load what is measured
                    if stamp.exists():
                        break
                    time.sleep(0.002)
                for _ in range(3000):
                    job = call(f"{base}/v1/jobs/{job_id}")[1]["job"]
                    if job["status"] not in ("queued", "running", "waiting"):
                        break
                    time.sleep(0.01)
                assert job["status"] == "succeeded", job
                if n >= 2:
                    latencies.append((float((stamps / str(n)).read_text()) - got_202) * 1000)
            return latencies
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


def summary(label: str, latencies: list[float]) -> str:
    return (f"{label:<8} p50 {statistics.median(latencies):7.1f} ms   p99 {percentile(latencies, 99):7.1f} ms   "
            f"min {min(latencies):6.1f} ms   (n={len(latencies)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--before", type=Path, help="a checkout of the code before the change (e.g. /work/main)")
    parser.add_argument("--before-python", help="its interpreter (default: BEFORE/.venv/bin/python)")
    args = parser.parse_args()
    print(f"person-step answer -> next step starting, oz0 serve on SQLite, {args.count} answers "
          f"(target p50 <= {TARGET_P50_MS:g} ms)")
    if args.before is not None:
        before_python = args.before_python or str(args.before / ".venv" / "bin" / "python")
        print(summary("before", measure(before_python, args.before, args.count)), flush=True)
    now = measure(sys.executable, ROOT, args.count)
    print(summary("now", now))
    print(f"p50 {'meets' if statistics.median(now) <= TARGET_P50_MS else 'misses'} the target")


if __name__ == "__main__":
    main()
