"""`oz0 qzx validate` and `oz0 qzx receipt`: QZX Result Contract v1 checks from the command line.

The rules live in edge.results; this module reads files, prints, and writes the receipt atomically.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.json_out import emit_result, usage_failure
from oz0.edge.results.qzx import InputError, check_core, parse_document
from oz0.edge.results.qzx_profiles import PROFILES, validate_document
from oz0.edge.results.qzx_receipts import Evidence, build_receipt, receipt_bytes

__all__ = ["register"]

_PROFILE_HELP = "|".join(PROFILES)


def register(qzx: argparse.ArgumentParser) -> None:
    """Fill in `oz0 qzx` with its two subcommands."""
    qzx.description = "Validate QZX results and write conformance receipts for a success/failure evidence pair."
    commands = qzx.add_subparsers(dest="qzx_command", metavar="SUBCOMMAND", required=True)

    v = commands.add_parser(
        "validate", help="validate one result",
        description="Validate one JSON document against QZX Result Contract v1 under a profile: the "
                    "core envelope, or an MCP CallToolResult / JSON-RPC response of one MCP revision.",
        epilog="Exit codes: 0 conforms, 1 does not (one line per violation: where, then what), "
               "2 usage error or unreadable or non-JSON input. With --json stdout carries exactly one "
               "QZX result whatever happens.")
    v.add_argument("file", metavar="FILE", nargs="?", help="the document: a JSON file, or - for stdin")
    v.add_argument("--profile", default="core", metavar=_PROFILE_HELP, help="which rules apply (default: core)")
    v.add_argument("--tool-definition", metavar="FILE",
                   help="the MCP tool definition whose outputSchema is classified against the contract")
    v.add_argument("--json", action="store_true", help="print the verdict as one QZX result")
    v.set_defaults(func=_validate)

    r = commands.add_parser(
        "receipt", help="write a conformance receipt for a success/failure pair",
        description="Check that the success evidence says success: true and the failure evidence "
                    "success: false, apply the profile to both, and write a deterministic receipt "
                    "(QZX Result Contract Conformance Receipt v1) with SHA-256 digests of the exact "
                    "evidence bytes. The MCP profiles need --tool-definition.",
        epilog="Exit codes: 0 the pair conforms, 1 it does not (the receipt is still written), "
               "2 usage error (nothing written).")
    r.add_argument("--profile", required=True, metavar=_PROFILE_HELP, help="which rules apply")
    r.add_argument("--success", required=True, metavar="FILE", help="evidence of a completed success")
    r.add_argument("--failure", required=True, metavar="FILE", help="evidence of a completed failure")
    r.add_argument("--tool-definition", metavar="FILE", help="the MCP tool definition (required by MCP profiles)")
    r.add_argument("--report", required=True, metavar="OUT", help="where to write the receipt (JSON)")
    r.set_defaults(func=_receipt)


def _read(name: str) -> bytes:
    try:
        if name == "-":
            return sys.stdin.buffer.read()
        return Path(name).read_bytes()
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from None


def _validate(args: argparse.Namespace) -> int:
    started = time.monotonic()
    command = "qzx validate"
    try:
        if args.file is None:
            raise _Usage("FILE is required (a JSON file, or - for stdin)")
        if args.profile not in PROFILES:
            raise _Usage(f"unknown profile {args.profile!r}; choose one of {', '.join(PROFILES)}")
        if args.file == "-" and args.tool_definition == "-":
            raise _Usage("only one of FILE and --tool-definition can be read from stdin")
        document = parse_document(_read(args.file), source=_label(args.file))
        tool = None
        if args.tool_definition is not None:
            tool = parse_document(_read(args.tool_definition), source=_label(args.tool_definition))
    except (_Usage, InputError) as exc:
        if args.json:
            return usage_failure(command, str(exc), started=started)
        raise CommandError(str(exc), code=2) from None

    verdict = validate_document(document, profile=args.profile, tool_definition=tool,
                                tool_definition_given=args.tool_definition is not None)
    label = _label(args.file)
    subject = f"{label} under the {args.profile} profile of QZX Result Contract v1"
    violations = [str(f) for f in verdict.violations]
    warnings = [str(f) for f in verdict.warnings]
    if args.json:
        details: dict[str, Any] = {"file": label, "profile": args.profile, "violations": violations,
                                   "profile_facts": verdict.facts}
        if args.tool_definition is not None:
            details["tool_definition"] = _label(args.tool_definition)
        if verdict.conforms:
            return emit_result(command, True, f"{subject}: conforms.", details=details,
                               warnings=warnings, started=started)
        count = len(violations)
        return emit_result(command, False, f"{subject}: does not conform ({count} violation"
                                           f"{'s' if count != 1 else ''}).",
                           error=f"first violation: {violations[0]}", error_code="result_contract_violation",
                           details=details, warnings=warnings, started=started)
    for line in violations:
        print(f"{label}: {line}")
    for line in warnings:
        print(f"{label}: warning: {line}")
    if verdict.conforms:
        print(f"{subject}: conforms.")
        return 0
    print(f"{subject}: does not conform ({len(violations)} violation{'s' if len(violations) != 1 else ''}).")
    return 1


def _label(name: str) -> str:
    return "<stdin>" if name == "-" else name


class _Usage(Exception):
    pass


def _evidence(name: str) -> Evidence:
    try:
        return Evidence(name, Path(name).read_bytes())
    except OSError as exc:
        return Evidence(name, None, exc.strerror or str(exc))


def _receipt(args: argparse.Namespace) -> int:
    if args.profile not in PROFILES:
        raise CommandError(f"unknown profile {args.profile!r}; choose one of {', '.join(PROFILES)}")
    if PROFILES[args.profile] is not None and args.tool_definition is None:
        raise CommandError(f"the {args.profile} profile requires --tool-definition FILE "
                           "(the MCP tool definition with its outputSchema)")
    inputs = [args.success, args.failure] + ([args.tool_definition] if args.tool_definition else [])
    if "-" in inputs or args.report == "-":
        raise CommandError("the receipt reads and writes files, not stdin or stdout: give file paths")
    report = Path(args.report)
    for name in inputs:
        if _same_file(report, Path(name)):
            raise CommandError(f"--report {args.report} is the evidence file {name}; the receipt never "
                               "overwrites evidence, choose another path")
    if report.is_dir():
        raise CommandError(f"--report {args.report} is a directory; give a file path")
    if not report.parent.is_dir():
        raise CommandError(f"--report {args.report}: folder {str(report.parent)!r} does not exist")

    receipt = build_receipt(args.profile, _evidence(args.success), _evidence(args.failure),
                            tool_definition=_evidence(args.tool_definition) if args.tool_definition else None)
    problems = check_core(receipt)
    if problems:
        raise RuntimeError(f"the receipt itself breaks the contract: {problems[0]}")
    _write_atomically(report, receipt_bytes(receipt))
    for line in receipt["details"]["violations"]:
        print(f"violation: {line}")
    for line in receipt["warnings"]:
        print(f"warning: {line}")
    verdict = "PASS" if receipt["success"] else "FAIL"
    print(f"{verdict}: {receipt['message']}")
    print(f"Receipt written to {args.report}.")
    return 0 if receipt["success"] else 1


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _write_atomically(path: Path, data: bytes) -> None:
    """Write beside the target, then rename over it: readers see the old receipt or the new one."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
