"""A model agent with tools: the agent loop (Pydantic AI), durable call by call, under the contract.

Pydantic AI drives the loop (the providers' wire formats, tool-call messages, output retries); the
runtime owns every rule inside it, through two seams: `_CheckpointedModel`, the model each request
goes through, and `_ContractTools`, the toolset every call goes through. Each model request and each
tool call is one step (edge.runtime.loop_steps: a DBOS step under `oz0 serve`), which, in order:
checks the loop's limits (`max_steps` model requests, `max_children` tool calls), validates the
arguments against the tool's contract (a violation goes back to the model, the tool is not called),
asks a person to confirm a destructive tool, reserves against the budgets, makes the call, settles
with the reported usage, checks the result against its contract and makes the trace row, which its
value carries (edge.runtime.loop_trace writes a turn's rows together, not one commit a call). Tool calls
of one answer run one after another, so a replay takes the same steps in the same order.

This module imports pydantic-ai (a second or so); edge.runtime.kinds imports it only when a model
agent with tools runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pydantic_ai
from pydantic_ai import Agent, ModelRetry, NativeOutput, StructuredDict
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import RunContext as ToolRunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from oz0.edge.contracts.schema import load_contract, violation_sentence
from oz0.edge.mcp.kind import tool_output
from oz0.edge.mcp.pool import servers
from oz0.edge.mcp.spec import ServerSpec
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import JobFailure
from oz0.edge.model.secrets import env_secrets
from oz0.edge.runtime.budgets import CallNeed, budget_call, model_need
from oz0.edge.runtime.context import RunContext
from oz0.edge.runtime.loop_steps import Checkpoints, checkpoints_for, failure_of, raise_failure
from oz0.edge.runtime.loop_tools import LoopTool, arguments_error, call_label, list_tools
from oz0.edge.runtime.loop_trace import TraceRows, add_trace, clip, trace_row
from oz0.edge.runtime.person_loop import LoopPerson
from oz0.edge.runtime.redact import Redactor
from oz0.edge.runtime.text_out import TextOut

__all__ = ["run_tool_loop"]

pydantic_ai.BANNER_ENABLED = False  # the terminal is `oz0 run`'s: its card and its prompts, no library banner
MAX_OUTPUT_TRIES = 3  # the first answer and at most two retries with the reason
_ANY_ARGS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


async def run_tool_loop(spec: AgentSpec, value: Any, ctx: RunContext, *, key: str | None,
                        secrets: list[str]) -> Any:
    """Run the loop to the model's final answer (checked against the output contract by the model's
    retries here and by the runtime after). Raises JobFailure."""
    if ctx.delegate is None:
        raise JobFailure("Misconfigured", "a model agent with tools runs inside the runtime (it calls agents "
                                          "as child jobs); this run has none")
    redactor = Redactor([*secrets, *_server_secrets(spec)])
    loop = _Loop(spec, redactor.context(ctx), redactor)
    return await redactor.run(loop.run(value, key))


def _server_secrets(spec: AgentSpec) -> list[str]:
    texts = [str(v) for s in spec.servers.values() for part in ("env", "headers")
             for v in dict(s.get(part) or {}).values()]
    return env_secrets(*texts)


class _Loop:
    """One run of the loop: its counters (requests, tool calls, trace rows) and its steps."""

    def __init__(self, spec: AgentSpec, ctx: RunContext, redactor: Redactor) -> None:
        assert ctx.delegate is not None
        self.spec, self.ctx, self.redactor = spec, ctx, redactor
        self.runtime = ctx.delegate.runtime
        self.job = ctx.delegate.job
        self.steps: Checkpoints = checkpoints_for(self.runtime.engine is not None)
        self.person = LoopPerson(self.runtime, self.job, self.steps, spec, self._trace)
        self.requests = 0
        self.tool_calls = 0
        self.seq = 0
        self.last_reason = ""
        self.rows = TraceRows(self.runtime.store)
        self.text = TextOut(ctx.on_text, redactor)

    @property
    def max_steps(self) -> int:
        return self.spec.limits.max_steps

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def _trace(self, seq: int, kind: str, name: str, detail: dict[str, Any], ms: float) -> None:
        """A row written now (a person step's: its wait may be long), after the rows before it."""
        self.rows.flush()
        add_trace(self.runtime.store, self.job.id, seq, kind, name, self.redactor.data(detail), ms)

    def _row(self, seq: int, kind: str, name: str, detail: dict[str, Any], ms: float) -> dict[str, Any]:
        return trace_row(self.job.id, seq, kind, name, self.redactor.data(detail), ms)

    def _traced(self, value: dict[str, Any]) -> dict[str, Any]:
        """A step's value without its trace row, which waits in `rows` (a step recorded by an earlier
        release carries none: it wrote its row itself)."""
        row = value.pop("trace", None)
        if row is not None:
            self.rows.add(row)
        return value

    async def _write_rest(self) -> None:
        """The rows a loop cut short left unwritten (a failure mid-turn), in a step of their own so a
        database fault is retried; a loop that answered wrote them in its last model request. A
        cancelled loop writes them at once (its steps are cancelled with it)."""
        if not self.rows.pending:
            return
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            self.rows.flush()
            return
        await self.steps.step("oz0.loop.trace", self._rest_step)

    async def _rest_step(self) -> dict[str, Any]:
        self.rows.flush()
        return {}

    async def run(self, value: Any, key: str | None) -> Any:
        listed = await self.steps.step("oz0.loop.tools", self._tools_step)
        tools = [LoopTool.from_json(t) for t in raise_failure(listed)["tools"]]
        agent = self._agent(key, tools)
        prompt = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        try:
            with ToolManager.parallel_execution_mode("sequential"):  # one call at a time: a replay takes the same steps
                try:
                    result = await agent.run(prompt, message_history=_history(self.ctx) or None)
                finally:
                    await self._write_rest()
        except JobFailure:
            raise
        except UnexpectedModelBehavior as exc:
            if self.last_reason:
                raise JobFailure("InvalidOutput", f"the model's answer did not match the output schema after "
                                                  f"{MAX_OUTPUT_TRIES} tries; the last reason: {self.last_reason}"
                                 ) from None
            raise JobFailure("InvalidOutput", f"the model misbehaved: {exc}") from None
        except BaseExceptionGroup as group:
            failure = next((e for e in _leaves(group) if isinstance(e, JobFailure)), None)
            if failure is None:
                raise
            raise failure from None
        return result.output

    async def _tools_step(self) -> dict[str, Any]:
        try:
            return {"tools": [t.as_json() for t in await list_tools(self.runtime, self.spec)]}
        except JobFailure as failure:
            return failure_of(self.redactor.failure(failure))

    def _agent(self, key: str | None, tools: list[LoopTool]) -> Agent[None, Any]:
        spec = self.spec
        output: Any = str
        if spec.output is not None:
            shape = StructuredDict(dict(spec.output.schema), name="answer",
                                   description="the final answer, matching the agent's output schema")
            output = NativeOutput(shape, strict=False) if _provider(spec) == "openai" else shape
        agent: Agent[None, Any] = Agent(
            _CheckpointedModel(_provider_model(spec, key), self), output_type=output,
            instructions=str(spec.config["system"]) if spec.config.get("system") else None,
            toolsets=[_ContractTools(tools, self)], retries={"tools": self.max_steps, "output": MAX_OUTPUT_TRIES - 1},
            model_settings=_settings(spec))

        @agent.output_validator
        def check(answer: Any) -> Any:
            if spec.output is None:
                return answer
            violations = spec.output.validate(answer)
            if violations:
                self.last_reason = "; ".join(v.describe() for v in violations[:3])
                self.ctx.progress(f"the answer does not match the output schema: {self.last_reason}")
                raise ModelRetry(f"Your answer does not match the required JSON schema: {self.last_reason}. "
                                 "Answer again with a JSON document that matches the schema.")
            return answer

        return agent

    # model requests ----------------------------------------------------------------------------

    async def request(self, model: Model, messages: list[ModelMessage], settings: ModelSettings | None,
                      params: ModelRequestParameters) -> ModelResponse:
        self.requests += 1
        if self.requests > self.max_steps:
            raise JobFailure("LimitExceeded", f"the loop made {self.max_steps} model requests without a final "
                                              f"answer (limits.max_steps is {self.max_steps})")
        seq = self._next_seq()
        self.ctx.progress(f"step {self.requests} of ≤{self.max_steps}: asking the model", self.requests,
                          self.max_steps)
        made = await self.steps.step("oz0.loop.model", self._request_step, model, seq, messages, settings, params)
        self.rows.written()  # the step wrote the turn before (read back from its record: written then)
        value = raise_failure(self._traced(made))
        return ModelMessagesTypeAdapter.validate_python([value["response"]])[0]  # type: ignore[return-value]

    async def _request_step(self, model: Model, seq: int, messages: list[ModelMessage],
                            settings: ModelSettings | None, params: ModelRequestParameters) -> dict[str, Any]:
        self.rows.flush()  # the turn before: its model request and tool calls, in one transaction
        size = len(ModelMessagesTypeAdapter.dump_json(messages)) + len(json.dumps(
            [t.parameters_json_schema for t in params.function_tools]))
        started = time.monotonic()
        try:
            async with budget_call(self.ctx, model_need(self.spec, size)) as meter:
                try:
                    async with asyncio.timeout(self.spec.limits.timeout_s):
                        response = await self._model_answer(model, messages, settings, params)
                except TimeoutError:
                    raise JobFailure("Timeout", f"the model did not answer within {self.spec.limits.timeout_s:g} s "
                                                "(limits.timeout_s)") from None
                except ModelHTTPError as exc:
                    raise _http_failure(exc, self.redactor) from None
                except ModelAPIError as exc:
                    raise JobFailure("Unavailable", self.redactor.text(f"cannot reach the model: {exc}")) from None
                usage = response.usage
                if usage.input_tokens or usage.output_tokens:
                    meter.used(prompt_tokens=usage.input_tokens, completion_tokens=usage.output_tokens)
        except JobFailure as failure:
            return failure_of(self.redactor.failure(failure))
        calls = [p.tool_name for p in response.parts if p.part_kind == "tool-call"]
        row = self._row(seq, "model", str(self.spec.config.get("model")),
                        {"tokens": {"input": usage.input_tokens, "output": usage.output_tokens}, "tool_calls": calls},
                        (time.monotonic() - started) * 1000)
        made = {"response": ModelMessagesTypeAdapter.dump_python([response], mode="json")[0]}
        if calls:  # written with the tool calls it asks for, by the next request
            return {**made, "trace": row}
        self.rows.add(row)  # a final answer: its row written now, in its own step, as the loop ends here
        self.rows.flush()
        return made

    async def _model_answer(self, model: Model, messages: list[ModelMessage], settings: ModelSettings | None,
                            params: ModelRequestParameters) -> ModelResponse:
        """The model's response; a text answer streamed as it is written (best effort: the step
        records the whole response, a replay streams nothing)."""
        if self.spec.output is not None or self.ctx.on_text is None:
            return await model.request(messages, settings, params)
        self.text.begin()
        async with model.request_stream(messages, settings, params) as stream:
            async for event in stream:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    self.text.add(event.part.content)
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    self.text.add(event.delta.content_delta)
            response = stream.get()
        self.text.end()
        return response

    # tool calls --------------------------------------------------------------------------------

    async def call(self, tool: LoopTool, arguments: dict[str, Any]) -> Any:
        seq = self._next_seq()
        error = arguments_error(tool, arguments)
        if error is not None:  # never reaches the tool: the model gets the reason, as a step of its own
            self.rows.add(self._row(seq, "tool", tool.name, {"arguments": clip(arguments), "error": error}, 0))
            raise ModelRetry(error)
        self.tool_calls += 1
        limit = self.spec.limits.max_children
        if self.tool_calls > limit:
            raise JobFailure("LimitExceeded", f"the loop asked for more than {limit} tool calls "
                                              f"(limits.max_children is {limit})")
        self.ctx.progress(f"step {self.requests} of ≤{self.max_steps}: calling {call_label(tool, arguments)}",
                          self.requests, self.max_steps)
        if tool.kind == "ask_person":
            return await self.person.ask(seq, arguments)
        if tool.destructive:
            if not await self.person.confirm(seq, tool, arguments):
                return f"The person declined: {tool.name} was not run. Do not call it again unless they ask."
            seq = self._next_seq()  # the call's trace row after its confirmation's, not in its place
        value = raise_failure(self._traced(await self.steps.step("oz0.loop.tool", self._tool_step, seq, tool,
                                                                 arguments)))
        if "error" in value:
            raise ModelRetry(value["error"])
        return value["result"]

    async def _tool_step(self, seq: int, tool: LoopTool, arguments: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        try:
            result = await (self._agent_call(seq, tool, arguments) if tool.kind == "agent"
                            else self._mcp_call(tool, arguments))
        except JobFailure as failure:
            if failure.kind in ("BudgetExhausted", "LimitExceeded"):
                return failure_of(self.redactor.failure(failure))
            outcome: dict[str, Any] = {"error": self.redactor.text(f"{tool.name} failed ({failure.kind}): "
                                                                   f"{failure.reason}")}
        else:
            outcome = {"result": self.redactor.data(result)}
            if tool.output is not None:
                violations = load_contract(dict(tool.output), source=f"tool {tool.name}").validate(result)
                if violations:  # an answer that breaks its contract is an error, never data
                    outcome = {"error": violation_sentence(violations, subject=f"the result of {tool.name}")}
        return {**outcome, "trace": self._row(seq, "tool", tool.name,
                                              {"arguments": clip(arguments), **{k: clip(v) for k, v in outcome.items()}},
                                              (time.monotonic() - started) * 1000)}

    async def _agent_call(self, seq: int, tool: LoopTool, arguments: dict[str, Any]) -> Any:
        text = arguments["input"] if tool.text_input else json.dumps(arguments, ensure_ascii=False)
        child = self.runtime.submit_child(self.job, tool.target, text, dedupe_key=f"tool:{self.job.id}:{seq}")
        if not child.finished:  # a step rerun after a crash finds the child by its key and its answer, if any
            child = await self.runtime.execute_here(child.id, resume=self.runtime.engine is not None)
        if child.status != "succeeded":
            raise JobFailure(child.failure_kind or "AgentError", child.failure_reason or f"it ended {child.status}")
        return child.output

    async def _mcp_call(self, tool: LoopTool, arguments: dict[str, Any]) -> Any:
        assert tool.server is not None
        plugin_dir = str(Path(self.spec.file).resolve().parent.parent) if self.spec.file else None
        server = ServerSpec.from_config(self.spec.servers[tool.server], cwd=plugin_dir)
        price = self.spec.price
        async with budget_call(self.ctx, CallNeed(tokens=0, cost=price.per_call if price else 0, calls=1)):
            _, result = await servers().call(server, tool.target, arguments, timeout_s=self.spec.limits.timeout_s)
        return tool_output(result, tool=tool.target)


class _CheckpointedModel(WrapperModel):
    """The provider's model, each request a checkpointed step of the loop (`_Loop.request`)."""

    def __init__(self, wrapped: Model, loop: _Loop) -> None:
        super().__init__(wrapped)
        self._loop = loop

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        return await self._loop.request(self.wrapped, messages, model_settings, model_request_parameters)


class _ContractTools(AbstractToolset[None]):
    """The loop's tools as the model sees them; arguments are checked by the edge's validator in
    `_Loop.call`, so Pydantic AI's own validation accepts any object."""

    def __init__(self, tools: list[LoopTool], loop: _Loop) -> None:
        self._tools = {t.name: t for t in tools}
        self._loop = loop

    @property
    def id(self) -> str:
        return "oz0-tools"

    async def get_tools(self, ctx: ToolRunContext[None]) -> dict[str, ToolsetTool[None]]:
        return {name: ToolsetTool(toolset=self, tool_def=ToolDefinition(
                    name=name, description=t.description, parameters_json_schema=dict(t.parameters), strict=False,
                    sequential=True),
                    max_retries=self._loop.max_steps, args_validator=_ANY_ARGS)
                for name, t in self._tools.items()}

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: ToolRunContext[None],
                        tool: ToolsetTool[None]) -> Any:
        return await self._loop.call(self._tools[name], tool_args)


def _history(ctx: RunContext) -> list[ModelMessage]:
    """The conversation's earlier turns (edge.runtime.conversations, bounded by the agent's
    `conversation:`) as the model's messages: each ask a user prompt, each final answer (after the
    line naming the tools that turn called) the model's text."""
    return [ModelRequest(parts=[UserPromptPart(content=str(m["content"]))]) if m["role"] == "user"
            else ModelResponse(parts=[TextPart(content=str(m["content"]))]) for m in ctx.history]


def _provider(spec: AgentSpec) -> str:
    return str(spec.config.get("provider") or "openai")


_MODELS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, OrderedDict[tuple[str, ...], Model]] = \
    weakref.WeakKeyDictionary()
MAX_MODELS_PER_LOOP = 32  # provider models (each an HTTP client with its connections) kept for reuse


def _provider_model(spec: AgentSpec, key: str | None) -> Model:
    """The provider's model, one per (endpoint, model, key) on each event loop: its HTTP client, TLS
    context and connections are made once, not at every job."""
    loop = asyncio.get_running_loop()
    cache = _MODELS.setdefault(loop, OrderedDict())
    ident = (_provider(spec), str(spec.config["base_url"]), str(spec.config["model"]),
             hashlib.sha256((key or "").encode()).hexdigest())
    model = cache.get(ident)
    if model is None:
        model = cache[ident] = _new_provider_model(spec, key)
        while len(cache) > MAX_MODELS_PER_LOOP:
            cache.popitem(last=False)
    cache.move_to_end(ident)
    return model


def _new_provider_model(spec: AgentSpec, key: str | None) -> Model:
    base_url = str(spec.config["base_url"]).rstrip("/")
    if _provider(spec) == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel  # the anthropic SDK: only for its agents
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(str(spec.config["model"]), provider=AnthropicProvider(api_key=key or "none",
                                                                                    base_url=base_url))
    from pydantic_ai.models.openai import OpenAIChatModel  # the openai SDK: only for its agents
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(str(spec.config["model"]), provider=OpenAIProvider(base_url=base_url,
                                                                              api_key=key or "none"))


def _settings(spec: AgentSpec) -> ModelSettings:
    settings: ModelSettings = {"timeout": float(spec.limits.timeout_s)}
    if spec.config.get("max_tokens") is not None:
        settings["max_tokens"] = int(spec.config["max_tokens"])
    return settings


def _http_failure(exc: ModelHTTPError, redactor: Redactor) -> JobFailure:
    body = redactor.text(str(exc.body or ""))[:200].replace("\n", " ")
    status = exc.status_code
    what = f"the model endpoint answered HTTP {status}" + (f": {body}" if body else "")
    if status in (401, 403):
        return JobFailure("Misconfigured", f"the model endpoint refused the credentials (HTTP {status})")
    if status in (408, 425, 429) or status >= 500:
        return JobFailure("Unavailable", what)
    return JobFailure("Rejected", what)


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out
