"""`python -m oz0.adapters.cli.action`: the checks of the oz0 GitHub Action (action.yml) for plugin authors.

The action runs in the caller's repository, so every path it is given comes from a workflow file
or a pull request: each one must stay inside GITHUB_WORKSPACE (no `..`, no absolute path outside
it, no symlink that leads out), checked before anything reads or writes it. The checks are the
CLI's own commands run in-process (`oz0 plugin lint`, `oz0 plugin diff`, `oz0 qzx receipt`), so
a CI verdict and a local one cannot disagree. Inputs arrive as INPUT_* environment variables (the
action's `env:` block, never interpolated into a shell); the PASS/FAIL tables are appended to
GITHUB_STEP_SUMMARY, a file the runner owns outside the workspace.

Exit codes: 0 every check passed or was skipped, 1 a check failed, 2 an input was refused.
"""

from __future__ import annotations

import io
import json
import os
import re
import secrets
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from oz0.edge.contracts.changes import Change
from oz0.edge.documents.compat import refusal_message

__all__ = ["ActionError", "Check", "Inputs", "confine", "main", "read_inputs", "summary_markdown"]

MAX_ROWS = 50
MAX_CELL_CHARS = 200
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
GIT_TIMEOUT_S = 120


class ActionError(Exception):
    """An input the action refuses: one line naming the input and the path; exit code 2."""


class _GitError(Exception):
    """The previous release cannot be read from git: the upgrade check fails with this line."""


@dataclass(frozen=True)
class Check:
    """One check's verdict for the summary: PASS, FAIL or SKIP, a sentence, and an optional table."""

    name: str
    verdict: str
    message: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()


def confine(workspace: Path, raw: str, *, what: str) -> Path:
    """The path `raw` names, resolved, provided it stays inside `workspace` (itself resolved)."""
    if not raw.strip() or "\x00" in raw:
        raise ActionError(f"{what} {raw!r} is refused: give a path inside GITHUB_WORKSPACE")
    pure = PurePosixPath(raw)
    if ".." in pure.parts:
        raise ActionError(f"{what} {raw!r} is refused: '..' may not appear in it; give a path inside "
                          f"GITHUB_WORKSPACE ({workspace})")
    if pure.is_absolute():
        lexical = Path(os.path.normpath(raw))
        if not (lexical.is_relative_to(workspace) or lexical.resolve().is_relative_to(workspace)):
            raise ActionError(f"{what} {raw!r} is refused: an absolute path outside GITHUB_WORKSPACE ({workspace})")
    resolved = (workspace / raw).resolve()
    if not resolved.is_relative_to(workspace):
        raise ActionError(f"{what} {raw!r} is refused: a symlink leads it to {str(resolved)!r}, outside "
                          f"GITHUB_WORKSPACE ({workspace})")
    return resolved


def _oz0(*argv: str) -> tuple[int, str, str]:
    """Run one `oz0` command in this process: (exit code, stdout, stderr)."""
    from oz0.adapters.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli_main(list(argv))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _lint(plugin: Path, label: str) -> Check:
    code, out, err = _oz0("plugin", "lint", str(plugin), "--json")
    try:
        result = json.loads(out)
    except ValueError:
        return Check("lint", "FAIL", _last_line(err) or f"oz0 plugin lint exited {code}")
    findings = result.get("findings") or []
    rows = tuple((f["severity"], f["file"], f["path"], f["message"], f.get("fix", "")) for f in findings)
    verdict = "PASS" if code == 0 and result.get("success") else "FAIL"
    message = str(result.get("message", "")).replace(str(plugin), label)
    return Check("lint", verdict, message, ("severity", "file", "where", "finding", "how to mend"), rows)


def _git(repo: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True, timeout=GIT_TIMEOUT_S)


def _check_out_previous(plugin: Path, label: str, ref: str, into: Path) -> Path:
    """The plugin folder as it was at `ref`, unpacked under `into` from `git archive`."""
    if ref.startswith("-") or any(c.isspace() for c in ref):
        raise _GitError(f"previous-ref {ref!r} is refused: not a git ref")
    prefix = _git(plugin, "rev-parse", "--show-prefix")
    if prefix.returncode != 0:
        raise _GitError(f"plugin {label!r} is not inside a git repository; the upgrade check needs the "
                          "repository checked out with its history (actions/checkout with fetch-depth: 0)")
    commit = _git(plugin, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if commit.returncode != 0:
        raise _GitError(f"previous-ref {ref!r} is not a commit in this repository; fetch it "
                          "(actions/checkout with fetch-depth: 0 fetches the tags)")
    tree = f"{commit.stdout.strip()}:{prefix.stdout.strip()}"
    if _git(plugin, "cat-file", "-e", tree).returncode != 0:
        raise _GitError(f"plugin {label!r} does not exist at previous-ref {ref!r}")
    archive = into / "previous.tar"
    top = Path(_git(plugin, "rev-parse", "--show-toplevel").stdout.strip())
    made = _git(top, "archive", "--format=tar", "-o", str(archive), tree)
    if made.returncode != 0:
        raise _GitError(f"cannot read plugin {label!r} at {ref!r}: {_last_line(made.stderr)}")
    if archive.stat().st_size > MAX_ARCHIVE_BYTES:
        raise _GitError(f"plugin {label!r} at {ref!r} is {archive.stat().st_size:,} bytes; the limit is "
                          f"{MAX_ARCHIVE_BYTES:,}")
    folder = into / "previous"
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise _GitError(f"cannot unpack plugin {label!r} at {ref!r}: {exc}") from None
    return folder


def _upgrade(plugin: Path, label: str, ref: str) -> Check:
    name = f"upgrade check against {ref}"
    with tempfile.TemporaryDirectory(prefix="oz0-previous-") as tmp:
        previous = _check_out_previous(plugin, label, ref, Path(tmp))
        code, out, err = _oz0("plugin", "diff", str(previous), str(plugin), "--json")
    if code != 0:
        line = _last_line(err) or f"oz0 plugin diff exited {code}"
        return Check(name, "FAIL", line.replace(str(previous), f"{label} at {ref}").replace(str(plugin), label))
    result = json.loads(out)
    changes = [Change(**c) for c in result["changes"]]
    rows = tuple((c.agent, c.direction, c.json_path, c.what, "breaking" if c.breaking else "not breaking")
                 for c in changes)
    columns = ("agent", "direction", "JSON path", "change", "verdict")
    old, new = result["old"], result["new"]
    if result["breaking"] and not result["major_bump"]:
        message = refusal_message(new["name"], old["version"], new["version"], changes)
        return Check(name, "FAIL", f"{message} (needs {result['required_version']} or later)", columns, rows)
    return Check(name, "PASS", f"{old['version']} -> {new['version']}: {result['message']}", columns, rows)


def _receipt(inputs: Inputs) -> Check:
    if inputs.success is None or inputs.failure is None:
        return Check("QZX receipt", "SKIP", "no evidence given (success-evidence, failure-evidence)")
    argv = ["qzx", "receipt", "--profile", inputs.profile, "--success", str(inputs.success),
            "--failure", str(inputs.failure)]
    if inputs.tool_definition is not None:
        argv += ["--tool-definition", str(inputs.tool_definition)]
    code, _out, err = _oz0(*argv, "--report", str(inputs.receipt))
    name = f"QZX receipt ({inputs.profile})"
    if code not in (0, 1):
        return Check(name, "FAIL", (_last_line(err) or f"oz0 qzx receipt exited {code}")
                     .replace(str(inputs.workspace) + os.sep, ""))
    receipt = json.loads(inputs.receipt.read_bytes())
    rows = tuple(("violation", v) for v in receipt["details"]["violations"]) + \
        tuple(("warning", w) for w in receipt["warnings"])
    where = inputs.receipt.relative_to(inputs.workspace)
    return Check(name, "PASS" if code == 0 else "FAIL", f"{receipt['message']} Receipt written to {where}.",
                 ("kind", "finding"), rows)


_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MARKDOWN = re.compile(r"""[\\`*_\[\]~|]|:(?=//)|(?<=www)\.|@""", re.IGNORECASE)


def _cell(text: str) -> str:
    """Text from the plugin (its names, messages, schema paths) as one line of literal text in the
    summary: cut, then HTML escaped (no tag, image or comment) and its markdown escaped (no link,
    image, emphasis, code, heading, table cell or autolink: `https://`, `www.` and `@` are broken)."""
    text = " ".join(str(text).split())
    text = text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"
    text = _MARKDOWN.sub(lambda m: "\\" + m.group(0), text)
    return "".join(_HTML.get(ch, ch) for ch in text)


def summary_markdown(checks: Sequence[Check]) -> str:
    """The step summary: the overall verdict, then a short table per check (at most MAX_ROWS rows)."""
    overall = "FAIL" if any(c.verdict == "FAIL" for c in checks) else "PASS"
    out = [f"## oz0 plugin checks: {overall}", "", "| check | result | detail |", "| --- | --- | --- |"]
    out += [f"| {_cell(c.name)} | {c.verdict} | {_cell(c.message)} |" for c in checks]
    for check in checks:
        if not check.rows:
            continue
        out += ["", f"### {_cell(check.name)}: {check.verdict}", "",
                "| " + " | ".join(check.columns) + " |", "|" + " --- |" * len(check.columns)]
        out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in check.rows[:MAX_ROWS]]
        if len(check.rows) > MAX_ROWS:
            out += ["", f"… and {len(check.rows) - MAX_ROWS} more (the table shows at most {MAX_ROWS} rows)."]
    return "\n".join(out) + "\n"


def _write_summary(env: Mapping[str, str], text: str) -> None:
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        print("GITHUB_STEP_SUMMARY is not set; the summary follows.\n" + text)
        return
    with open(path, "a", encoding="utf-8") as summary:
        summary.write(text)


def _log(checks: Sequence[Check]) -> None:
    """One line per check; plugin-controlled text cannot run workflow commands (::stop-commands::)."""
    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}")
    for c in checks:
        print(f"{c.verdict} {c.name}: {c.message}")
    print(f"::{token}::")
    for c in checks:
        if c.verdict == "FAIL":
            line = f"{c.name}: {c.message}".replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            print(f"::error title=oz0 {c.name.split()[0]}::{line}")


@dataclass(frozen=True)
class Inputs:
    """The action's inputs, every path already confined to the workspace."""

    workspace: Path
    plugin: Path
    plugin_label: str
    previous_ref: str
    profile: str
    success: Path | None
    failure: Path | None
    tool_definition: Path | None
    receipt: Path


def read_inputs(env: Mapping[str, str]) -> Inputs:
    """The INPUT_* variables, checked before any check runs: a refused path stops everything."""
    raw_workspace = env.get("GITHUB_WORKSPACE", "")
    if not raw_workspace or not Path(raw_workspace).is_dir():
        raise ActionError(f"GITHUB_WORKSPACE {raw_workspace!r} is not a folder; run the action in a job "
                          "that checked out the repository")
    workspace = Path(raw_workspace).resolve()

    def path(name: str, default: str = "") -> Path | None:
        raw = env.get(f"INPUT_{name.upper().replace('-', '_')}", "") or default
        return confine(workspace, raw, what=name) if raw else None

    label = env.get("INPUT_PLUGIN", "") or "."
    success, failure = path("success-evidence"), path("failure-evidence")
    if (success is None) != (failure is None):
        raise ActionError("success-evidence and failure-evidence are given together, or neither")
    receipt = confine(workspace, env.get("INPUT_RECEIPT", "") or "oz0-qzx-receipt.json", what="receipt")
    return Inputs(workspace=workspace, plugin=confine(workspace, label, what="plugin"), plugin_label=label,
                  previous_ref=env.get("INPUT_PREVIOUS_REF", "").strip(),
                  profile=env.get("INPUT_PROFILE", "") or "core", success=success, failure=failure,
                  tool_definition=path("tool-definition"), receipt=receipt)


def _run(inputs: Inputs) -> list[Check]:
    checks = [_lint(inputs.plugin, inputs.plugin_label)]
    if inputs.previous_ref:
        try:
            checks.append(_upgrade(inputs.plugin, inputs.plugin_label, inputs.previous_ref))
        except _GitError as exc:
            checks.append(Check(f"upgrade check against {inputs.previous_ref}", "FAIL", str(exc)))
    else:
        checks.append(Check("upgrade check", "SKIP", "no previous-ref given (the previous release's tag)"))
    checks.append(_receipt(inputs))
    return checks


def main(environ: Mapping[str, str] | None = None) -> int:
    """Run the checks the INPUT_* variables ask for; write the summary; 0 pass, 1 fail, 2 refused input."""
    env = os.environ if environ is None else environ
    try:
        inputs = read_inputs(env)
    except ActionError as exc:
        print(f"oz0 action: error: {exc}", file=sys.stderr)
        _write_summary(env, summary_markdown([Check("inputs", "FAIL", str(exc))]))
        return 2
    checks = _run(inputs)
    _write_summary(env, summary_markdown(checks))
    _log(checks)
    return 1 if any(c.verdict == "FAIL" for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
