"""What an `oz0` command costs to start, against a bare Python of the same venv.

Plugin authors run `oz0 plugin lint` and `oz0 qzx validate` once per file in CI, so a command's
start-up is most of its cost. This script runs each command below in a fresh process, interleaved
round by round with the floor `python -c "import json, argparse"` of the same interpreter, and takes
the median CPU time (user + system of the child, from os.wait4) of each. CPU time, not elapsed
time, so that other work on the machine does not blur the figures.

It runs the console script `oz0` that sits beside the interpreter (`.venv/bin/oz0`), with the
environment it was given (so PYTHONPATH may point it at a work tree), on small inputs from the
bundled examples (edge/examples) and on a plugin made by `oz0 plugin new` in a temporary folder.
Each command runs once untimed first, with PYTHONDONTWRITEBYTECODE removed, so that the timed runs
load compiled .pyc files as an installed package does rather than compiling every module each time.

Run: `python bench/startup.py` (or `make bench-startup`). `--rounds N` (default 15); `--strict`
exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COMMANDS", "FLOOR", "Command", "cpu_seconds", "main"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "edge" / "examples"
SMALL = EXAMPLES / "deploys.result.json"
SMALL_SCHEMA = EXAMPLES / "deploys.schema.json"
SMALL_QZX = EXAMPLES / "qzx-success.result.json"
SCAFFOLD = "{scaffold}"

FLOOR = (sys.executable, "-c", "import json, argparse")


@dataclass(frozen=True)
class Command:
    """One command line to time (after `oz0`) and its target, in multiples of the floor."""

    label: str
    argv: tuple[str, ...]
    target: float


COMMANDS: tuple[Command, ...] = (
    Command("oz0 --help", ("--help",), 3.0),
    Command("oz0 render SMALL --to text", ("render", str(SMALL), "--to", "text"), 4.0),
    Command("oz0 render SMALL --schema S --to slack",
            ("render", str(SMALL), "--schema", str(SMALL_SCHEMA), "--to", "slack"), 4.0),
    Command("oz0 qzx validate SMALL", ("qzx", "validate", str(SMALL_QZX)), 3.0),
    Command("oz0 plugin lint SCAFFOLD", ("plugin", "lint", SCAFFOLD), 5.0),
)


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_seconds(argv: Sequence[str]) -> float:
    """Run `argv` to its end and return the child's user + system CPU time; a failing run is an error."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"bench/startup.py: {' '.join(argv)} exited {proc.returncode}: {err.strip()[-500:]}")
    return usage.ru_utime + usage.ru_stime


def _oz0() -> str:
    script = Path(sys.executable).parent / "oz0"
    if not script.is_file():
        raise SystemExit(f"bench/startup.py: no console script {script}; install the package (make install)")
    return str(script)


def _scaffold(oz0: str, folder: Path) -> Path:
    target = folder / "bench-plugin"
    subprocess.run([oz0, "plugin", "new", "bench-plugin", str(target)], check=True, stdout=subprocess.DEVNULL, env=ENV)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Median CPU time of each oz0 command, as a multiple of a bare Python.")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved runs of each command (default 15)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    oz0 = _oz0()
    with tempfile.TemporaryDirectory(prefix="oz0-bench-startup-") as tmp:
        scaffold = str(_scaffold(oz0, Path(tmp)))
        runs = {c.label: (oz0, *(scaffold if a == SCAFFOLD else a for a in c.argv)) for c in COMMANDS}
        runs["floor"] = FLOOR
        times: dict[str, list[float]] = {label: [] for label in runs}
        order = list(runs)
        rng = random.Random(14)
        for label in order:  # one warm-up run each: the page cache and .pyc files, not timed
            cpu_seconds(runs[label])
        for _ in range(args.rounds):
            rng.shuffle(order)
            for label in order:
                times[label].append(cpu_seconds(runs[label]))
    floor = statistics.median(times["floor"])
    print(f"Start-up CPU time (user + sys), median of {args.rounds} interleaved rounds; "
          f"floor: {' '.join(FLOOR[1:])!r} = {floor * 1000:.1f} ms")
    print(f"{'command':<42} {'median':>9} {'x floor':>8} {'target':>7}  verdict")
    missed = 0
    for command in COMMANDS:
        median = statistics.median(times[command.label])
        ratio = median / floor
        held = ratio <= command.target
        missed += not held
        print(f"{command.label:<42} {median * 1000:>6.1f} ms {ratio:>7.1f}x {command.target:>6.0f}x  "
              f"{'held' if held else 'MISSED'}")
    print(f"{len(COMMANDS) - missed} of {len(COMMANDS)} targets held.")
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
