"""One attempt of an agent under its limits, and the check of its answer against its contract.

The retry loop around `Attempts.attempt` is edge.runtime.runs'. The check: the output is JSON data,
within limits.max_output_bytes, a QZX failure is one of the agent's declared failure kinds, and the
answer matches the output contract. Each answer that met its contract is noted in `CheckedAnswers`,
which the card (edge.runtime.job_cards) reads, so the answer is not validated a second time to be drawn.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from oz0.edge.cards.choice import is_qzx_result
from oz0.edge.cards.qzx_status import CORE_FIELDS
from oz0.edge.contracts.json_data import MAX_JSON_DEPTH, JsonDataError, check_json_data, dumps_exact
from oz0.edge.contracts.schema import violation_sentence
from oz0.edge.model.agent import AgentSpec, FailureKind
from oz0.edge.model.job import BUILTIN_FAILURES, INVALID_RESULT_CONTRACT, JobFailure
from oz0.edge.results.qzx import check_core
from oz0.edge.results.tool_result import kept_value
from oz0.edge.runtime.context import RunContext
from oz0.edge.runtime.kinds import AGENT_KINDS
from oz0.edge.runtime.transient import is_transient

__all__ = ["CHECKED_JOBS_MAX", "Attempts", "CheckedAnswers", "failure_kind"]

log = logging.getLogger("oz0.edge.runtime.runner")

CHECKED_JOBS_MAX = 1_024  # recent answers whose contract check the card need not repeat


class CheckedAnswers:
    """The recent answers that met their output contract: job id -> the contract's digest, bounded
    (CHECKED_JOBS_MAX; an answer older than that is validated again when drawn, never trusted)."""

    def __init__(self) -> None:
        self._digests: OrderedDict[str, str] = OrderedDict()

    def record(self, job_id: str, digest: str) -> None:
        self._digests[job_id] = digest
        if len(self._digests) > CHECKED_JOBS_MAX:
            self._digests.popitem(last=False)

    def met(self, job_id: str, digest: str) -> bool:
        """Whether the job's answer was checked here against the contract of this digest."""
        return self._digests.get(job_id) == digest


class Attempts:
    """One run of an agent of any kind (edge.runtime.kinds) under its limits, and its answer's check."""

    def __init__(self, checked: CheckedAnswers) -> None:
        self.checked = checked

    def checked_output(self, job_id: str, spec: AgentSpec, output: Any) -> Any:
        """The job's answer once checked (a flow's output too): JobFailure when it breaks a rule."""
        output = self.check_output(spec, output)
        if spec.output is not None:
            self.checked.record(job_id, spec.output.digest)
        return output

    async def attempt(self, spec: AgentSpec, value: Any, ctx: RunContext) -> Any:
        """One run of the agent under its limits, its answer checked: the output or a JobFailure."""
        kind = AGENT_KINDS.get(spec.kind)
        if kind is None:
            raise JobFailure("Misconfigured", f"agent kind {spec.kind!r} is not available in this bot; "
                                              f"available kinds: {', '.join(AGENT_KINDS)}")
        timeout = spec.limits.timeout_s
        try:  # a tool loop's timeout_s bounds each of its calls; tree_timeout_s bounds the loop
            async with asyncio.timeout(None if spec.loops else timeout):
                output = await kind(spec, value, ctx)
        except TimeoutError:
            raise JobFailure("Timeout", f"the agent did not answer within {timeout:g} s "
                                        f"(limits.timeout_s is {timeout:g}); it was stopped") from None
        except JobFailure:
            raise
        except Exception as exc:
            if isinstance(exc, SQLAlchemyError) and is_transient(exc):
                raise  # the journal's fault (a question, a budget), not the agent's: the engine retries the step
            log.warning("agent %s crashed in job %s", spec.name, ctx.job_id, exc_info=True)
            raise JobFailure("Crashed", f"the agent raised {type(exc).__name__}: {exc}") from None
        return self.checked_output(ctx.job_id, spec, output)

    def check_output(self, spec: AgentSpec, output: Any) -> Any:
        """The answer, if it keeps every rule of its agent; else JobFailure saying which it breaks."""
        cap = spec.limits.max_output_bytes
        try:
            check_json_data(output)
        except JsonDataError as exc:
            where = f" at {exc.path}" if exc.path != "$" else ""
            if exc.too_deep:
                raise JobFailure("InvalidOutput", f"the answer nests deeper than {MAX_JSON_DEPTH} levels (the "
                                                  f"limit for JSON data){where}; answer flatter data") from None
            raise JobFailure("InvalidOutput", f"the answer is not JSON data ({exc.message}){where}; answer strings, "
                                              "finite numbers, booleans, null, lists and objects with string keys"
                             ) from None
        size = len(output.encode("utf-8")) if isinstance(output, str) else len(dumps_exact(output))
        if size > cap:
            raise JobFailure("OutputTooLarge", f"the answer is {size:,} bytes, over limits.max_output_bytes "
                                               f"({cap:,})")
        if is_qzx_result(output):
            findings = check_core({k: output[k] for k in CORE_FIELDS if k in output})
            if findings:
                more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
                raise JobFailure(INVALID_RESULT_CONTRACT, f"the answer is shaped as a QZX result but breaks the "
                                                          f"QZX Result Contract v1: {findings[0]}{more}",
                                 partial_output=output)
        if is_qzx_result(output) and output["success"] is False:
            code = output.get("error_code")
            kind = _declared_kind(spec, code) if isinstance(code, str) else None
            message = output.get("error") if isinstance(output.get("error"), str) else output["message"]
            if kind is None:
                detail = f" (error_code {code!r} is not a failure kind it declares)" if code else ""
                raise JobFailure("AgentError", f"the agent reported a failure{detail}: {message}",
                                 partial_output=output)
            raise JobFailure(kind, message, partial_output=output)
        if spec.output is None:
            if not isinstance(output, str):
                raise JobFailure("InvalidOutput", f"the agent declares output: text but answered "
                                                  f"{_json_kind(output)}; answer a string, or declare "
                                                  "output_schema")
            return output
        violations = spec.output.validate(kept_value(output) if spec.kind == "mcp" else output)
        if violations:
            raise JobFailure("InvalidOutput", violation_sentence(violations, subject="the answer",
                                                                 rules_of=spec.output_schema_file),
                             partial_output=output)
        return output


def failure_kind(spec: AgentSpec, name: str) -> FailureKind:
    """The failure kind of this name as the agent declares it, else the built-in one, else a bare one."""
    declared = spec.failure(name)
    if declared is not None:
        return declared
    return BUILTIN_FAILURES.get(name) or FailureKind(name)


def _declared_kind(spec: AgentSpec, code: str) -> str | None:
    for candidate in (code, "".join(p[:1].upper() + p[1:] for p in code.split("_"))):
        if spec.failure(candidate) is not None:
            return candidate
    return None


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    if value is None:
        return "nothing (null)"
    return f"a {type(value).__name__}"
