"""One attempt of an agent under its limits, and the check of its answer against its contract.

A mixin of edge.runtime.runner.Runtime (which owns the retry loop around `_attempt` and sets
`_checked` and `store`): the output is JSON data, within limits.max_output_bytes, a QZX failure is
one of the agent's declared failure kinds, and the answer matches the output contract.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from oz0.edge.cards.choice import is_qzx_result
from oz0.edge.cards.qzx_status import CORE_FIELDS
from oz0.edge.contracts.json_data import MAX_JSON_DEPTH, JsonDataError, check_json_data, dumps_exact
from oz0.edge.contracts.schema import violation_sentence
from oz0.edge.model.agent import AgentSpec, FailureKind
from oz0.edge.model.job import BUILTIN_FAILURES, INVALID_RESULT_CONTRACT, Job, JobFailure
from oz0.edge.results.qzx import check_core
from oz0.edge.results.tool_result import kept_value
from oz0.edge.runtime.context import RunContext
from oz0.edge.runtime.flow_engine import NO_FLOW_ENGINE
from oz0.edge.runtime.kinds import AGENT_KINDS
from oz0.edge.runtime.transient import is_transient

if TYPE_CHECKING:
    from oz0.edge.model.progress import ProgressSink
    from oz0.edge.runtime.flow_engine import FlowEngine
    from oz0.edge.runtime.store import Store

__all__ = ["CHECKED_JOBS_MAX", "AgentAttempts"]

log = logging.getLogger("oz0.edge.runtime.runner")

CHECKED_JOBS_MAX = 1_024  # recent answers whose contract check the card need not repeat


class AgentAttempts:
    """Runtime's attempt and output-check methods."""

    store: Store
    flow_engine: FlowEngine | None
    _checked: OrderedDict[str, str]

    async def _run_flow(self, job: Job, spec: AgentSpec, value: Any,
                        on_progress: ProgressSink | None) -> Any:
        """A flow's steps in this process (edge.flows.runner), its output checked like an agent's."""
        if self.flow_engine is None:
            raise JobFailure("Misconfigured", NO_FLOW_ENGINE)
        self.store.update_job(job.id, attempts=1)
        output = await self.flow_engine.run_here(self, job, spec, value,  # type: ignore[arg-type]
                                                 on_progress=on_progress)
        return self._checked_flow_output(job.id, spec, output)

    def _checked_flow_output(self, job_id: str, spec: AgentSpec, output: Any) -> Any:
        output = self._check_output(spec, output)
        if spec.output is not None:
            self._checked[job_id] = spec.output.digest
            if len(self._checked) > CHECKED_JOBS_MAX:
                self._checked.popitem(last=False)
        return output

    async def _attempt(self, spec: AgentSpec, value: Any, ctx: RunContext) -> Any:
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
        output = self._check_output(spec, output)
        if spec.output is not None:
            self._checked[ctx.job_id] = spec.output.digest
            if len(self._checked) > CHECKED_JOBS_MAX:
                self._checked.popitem(last=False)
        return output

    def _check_output(self, spec: AgentSpec, output: Any) -> Any:
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

    def _failure_kind(self, spec: AgentSpec, name: str) -> FailureKind:
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
