"""How each kind of agent is run: the explicit AGENT_KINDS table and one function per kind.

A kind function takes the agent's declaration, its checked input (text, or parsed JSON) and a
RunContext, and returns the agent's answer or raises JobFailure. Limits that only the kind can
enforce live here (a command's stdout cap, its process group killed on timeout); the runtime
enforces the rest (the timeout around every kind, the output size and contract).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from oz0.edge.contracts.json_data import loads_exact
from oz0.edge.mcp.kind import run_mcp_agent, server_for_agent
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import JobFailure
from oz0.edge.model.secrets import ENV_REF, env_secrets
from oz0.edge.runtime.budgets import budget_call, call_need, model_need
from oz0.edge.runtime.context import RunContext
from oz0.edge.runtime.model_stream import is_event_stream, read_chat_stream, usage_pair
from oz0.edge.runtime.python_kind import run_python
from oz0.edge.runtime.redact import Redactor
from oz0.edge.runtime.text_out import TextOut

__all__ = [
    "AGENT_KINDS",
    "MAX_MODEL_TRIES",
    "MAX_PROGRESS_CHARS",
    "AgentKind",
    "command_argv",
    "expand_env",
    "model_api_key",
    "run_command",
    "run_http",
    "run_model",
]

AgentKind = Callable[[AgentSpec, Any, RunContext], Awaitable[Any]]

MAX_MODEL_TRIES = 3
MAX_PROGRESS_CHARS = 1000
_STDERR_TAIL_LINES = 5
TERM_GRACE_S = 2.0   # how long a stopped command's process group has between SIGTERM and SIGKILL


def _input_bytes(value: Any) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else orjson.dumps(value)


# command --------------------------------------------------------------------------------------

def command_argv(spec: AgentSpec, plugin_path: Path) -> list[str]:
    """The argv to start: `python`/`python3` is this interpreter; a relative program path is looked up
    in the plugin folder, a bare name on PATH."""
    argv = [str(a) for a in spec.config.get("command", ())]
    if not argv:
        raise JobFailure("Misconfigured", "command is empty: give the program and its arguments as a list")
    program = argv[0]
    if program in ("python", "python3"):
        argv[0] = sys.executable
    elif "/" in program and not os.path.isabs(program):
        target = (plugin_path / program).resolve()
        if not target.is_file():
            raise JobFailure("Misconfigured", f"command {program!r} is not a file in the plugin folder {plugin_path}")
        argv[0] = str(target)
    elif "/" not in program and shutil.which(program) is None:
        raise JobFailure("Misconfigured", f"command {program!r} is not on PATH; install it or give its path")
    return argv


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """A stopped job's command (edge.runtime.cancel): its process group sent SIGTERM, given
    TERM_GRACE_S to exit, then SIGKILL, so nothing it started is left behind."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        await asyncio.wait_for(proc.wait(), TERM_GRACE_S)
    except TimeoutError:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def run_command(spec: AgentSpec, value: Any, ctx: RunContext) -> Any:
    """argv in its own process group; the input on stdin (text, or JSON); stdout capped at
    limits.max_output_bytes is the answer (one JSON document when the agent has an output schema,
    or a QZX result); stderr lines are progress. Killed with its children on timeout or cancel."""
    argv = command_argv(spec, ctx.plugin_path)
    cap = spec.limits.max_output_bytes
    env = dict(os.environ, OZ0_JOB_ID=ctx.job_id, OZ0_AGENT=spec.name, OZ0_ATTEMPT=str(ctx.attempt),
               PYTHONUNBUFFERED="1")
    if spec.history:  # the conversation's earlier turns, as a JSON list of {role, content}
        env["OZ0_HISTORY"] = json.dumps([dict(m) for m in ctx.history], ensure_ascii=False)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=str(ctx.plugin_path), env=env, start_new_session=True)
    except OSError as exc:
        raise JobFailure("Misconfigured", f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    tail: list[str] = []
    out = bytearray()
    flooded = False

    async def feed() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(_input_bytes(value))
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the command does not read its input: allowed
        finally:
            try:
                proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass

    async def read_out() -> None:
        nonlocal flooded
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            out.extend(chunk)
            if len(out) > cap:
                flooded = True
                _kill_group(proc)
                return

    async def read_err() -> None:
        assert proc.stderr is not None
        while True:
            try:
                raw = await proc.stderr.readline()
            except ValueError:  # a line over the stream limit: read what is there
                raw = await proc.stderr.read(65536)
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\r\n")[:MAX_PROGRESS_CHARS]
            tail.append(line)
            del tail[:-_STDERR_TAIL_LINES]
            if line.strip():
                ctx.progress(line)

    try:
        await asyncio.gather(feed(), read_out(), read_err())
        code = await proc.wait()
    except asyncio.CancelledError:
        await _stop_group(proc)
        raise
    finally:
        _kill_group(proc)
    if flooded:
        raise JobFailure("OutputTooLarge", f"the command wrote more than {cap:,} bytes to stdout "
                                           f"(limits.max_output_bytes is {cap:,}); it was stopped")
    text = out.decode("utf-8", "replace")
    parsed: Any = None
    parse_error = ""
    if text.strip():
        try:
            parsed = loads_exact(bytes(out))
        except orjson.JSONDecodeError as exc:
            parse_error = str(exc)
    is_qzx = isinstance(parsed, dict) and isinstance(parsed.get("success"), bool)
    if code != 0 and not is_qzx:
        how = f"was killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        last = next((ln for ln in reversed(tail) if ln.strip()), "")
        raise JobFailure("Crashed", f"the command {how}" + (f"; its last words on stderr: {last}" if last else ""))
    if is_qzx:
        return parsed
    if spec.output is not None:
        if not text.strip():
            raise JobFailure("InvalidOutput", "the command wrote nothing to stdout; it must write one JSON "
                                              "document matching its output schema")
        if parse_error:
            raise JobFailure("InvalidOutput", f"the command's stdout is not one JSON document ({parse_error}); "
                                              "write progress to stderr, the answer alone to stdout")
        return parsed
    return text.rstrip("\n")


# http -----------------------------------------------------------------------------------------

def expand_env(value: str, *, what: str) -> str:
    """`${NAME}` in a header or URL from the environment; a name that is not set is Misconfigured
    (its value is never quoted in the reason)."""
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise JobFailure("Misconfigured", f"{what} names ${{{name}}}, which is not set in the environment "
                                              "of the bot")
        return os.environ[name]
    return ENV_REF.sub(sub, value)


async def _read_capped(response: httpx.Response, cap: int, what: str) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > cap:
            raise JobFailure("OutputTooLarge", f"{what} answered more than {cap:,} bytes "
                                               f"(limits.max_output_bytes is {cap:,})")
    return bytes(body)


def _http_failure(status: int, what: str, body: bytes, redactor: Redactor) -> JobFailure:
    snippet = redactor.text(body.decode("utf-8", "replace"))[:200].strip().replace("\n", " ")
    detail = f": {snippet}" if snippet else ""
    if status in (401, 403):
        return JobFailure("Misconfigured", f"{what} refused the credentials (HTTP {status}){detail}")
    if status in (408, 425, 429) or status >= 500:
        return JobFailure("Unavailable", f"{what} answered HTTP {status}{detail}")
    return JobFailure("Rejected", f"{what} answered HTTP {status}{detail}")


async def run_http(spec: AgentSpec, value: Any, ctx: RunContext) -> Any:
    """POST the input as JSON (a text input as a JSON string) to `url`; headers may name environment
    variables as ${NAME}. A JSON answer is parsed; any other answer is text."""
    raw_headers = {str(k): str(v) for k, v in (spec.config.get("headers") or {}).items()}
    redactor = Redactor(env_secrets(str(spec.config["url"]), *raw_headers.values()))
    return await redactor.run(_post_http(spec, value, redactor.context(ctx), raw_headers, redactor))


async def _post_http(spec: AgentSpec, value: Any, ctx: RunContext, raw_headers: dict[str, str],
                     redactor: Redactor) -> Any:
    url = expand_env(str(spec.config["url"]), what="url")
    headers = {k: expand_env(v, what=f"header {k}") for k, v in raw_headers.items()}
    headers.setdefault("X-Oz0-Job", ctx.job_id)
    headers.setdefault("Idempotency-Key", ctx.job_id)  # a job can run again after a crash: the same key each time
    what = f"the agent's URL {spec.config['url']}"
    try:
        async with budget_call(ctx, call_need(spec)):  # reserved first; a refusal never reaches the URL
            async with httpx.AsyncClient(timeout=spec.limits.timeout_s, follow_redirects=False) as client:
                body_json = {"input": value, "history": [dict(m) for m in ctx.history]} if spec.history else value
                async with client.stream("POST", url, json=body_json, headers=headers) as response:
                    body = await _read_capped(response, spec.limits.max_output_bytes, what)
    except httpx.HTTPError as exc:
        raise JobFailure("Unavailable", f"cannot reach {what}: {type(exc).__name__}: {exc}") from None
    parsed: Any = None
    is_json = "json" in response.headers.get("content-type", "")
    if is_json:
        try:
            parsed = loads_exact(body)
        except orjson.JSONDecodeError as exc:
            raise JobFailure("InvalidOutput", f"{what} said it answered JSON but it does not parse: {exc}") from None
    if response.status_code >= 400:
        if isinstance(parsed, dict) and isinstance(parsed.get("success"), bool):
            return parsed
        raise _http_failure(response.status_code, what, body, redactor)
    return parsed if is_json else body.decode("utf-8", "replace")


# model ----------------------------------------------------------------------------------------

def model_api_key(spec: AgentSpec) -> str | None:
    """The model's API key from `api_key_env` (Misconfigured when it is named and not set)."""
    key_env = spec.config.get("api_key_env")
    if not key_env:
        return None
    key = os.environ.get(str(key_env))
    if not key:
        raise JobFailure("Misconfigured", f"the model's API key is read from ${key_env}, which is not set "
                                          "in the environment of the bot")
    return key


def _schema_name(agent: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", agent)[:64] or "answer"


async def run_model(spec: AgentSpec, value: Any, ctx: RunContext) -> Any:
    """An OpenAI-compatible chat-completions endpoint. With an output schema the model is asked for
    that structure (`response_format` json_schema); an answer that does not match goes back with the
    reason, at most twice, then the job fails quoting the last reason. A model agent with tools (or an
    anthropic one) runs the tool loop instead (edge.runtime.tool_loop)."""
    key = model_api_key(spec)
    secrets = [key] if key else []
    if spec.loops:
        from oz0.edge.runtime.tool_loop import run_tool_loop  # imports pydantic-ai: only for a loop

        return await run_tool_loop(spec, value, ctx, key=key, secrets=secrets)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    redactor = Redactor(secrets)
    return await redactor.run(_ask_model(spec, value, redactor.context(ctx), headers, redactor))


async def _ask_model(spec: AgentSpec, value: Any, ctx: RunContext, headers: dict[str, str],
                     redactor: Redactor) -> Any:
    base_url = str(spec.config["base_url"]).rstrip("/")
    url = f"{base_url}/chat/completions"
    messages: list[dict[str, str]] = []
    if spec.config.get("system"):
        messages.append({"role": "system", "content": str(spec.config["system"])})
    messages.extend({"role": str(m["role"]), "content": str(m["content"])} for m in ctx.history)
    content = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    messages.append({"role": "user", "content": content})
    request: dict[str, Any] = {"model": spec.config["model"], "messages": messages}
    if spec.config.get("max_tokens") is not None:
        request["max_tokens"] = int(spec.config["max_tokens"])
    if spec.output is not None:
        request["response_format"] = {"type": "json_schema", "json_schema": {
            "name": _schema_name(spec.name), "schema": spec.output.schema, "strict": False}}
    # a text answer streams (edge.runtime.model_stream); the budget's estimate is of the request alone
    streaming = {"stream": True, "stream_options": {"include_usage": True}} \
        if spec.output is None and ctx.on_text is not None else {}
    what = f"the model endpoint {base_url}"
    reason = ""
    async with httpx.AsyncClient(timeout=spec.limits.timeout_s) as client:
        for attempt in range(1, MAX_MODEL_TRIES + 1):  # every try is a call, reserved against the budgets
            payload = orjson.dumps(request)
            size = len(payload)
            if streaming:
                payload = orjson.dumps({**request, **streaming})
            async with budget_call(ctx, model_need(spec, size)) as meter:
                try:
                    async with client.stream("POST", url, content=payload, headers=headers) as response:
                        if response.status_code < 400 and is_event_stream(response):
                            streamed = await read_chat_stream(response, spec.limits.max_output_bytes, what,
                                                              TextOut(ctx.on_text, redactor))
                            if streamed.usage is not None:
                                meter.used(prompt_tokens=streamed.usage[0], completion_tokens=streamed.usage[1])
                            return streamed.text
                        body = await _read_capped(response, spec.limits.max_output_bytes, what)
                except httpx.HTTPError as exc:
                    raise JobFailure("Unavailable", f"cannot reach {what}: {type(exc).__name__}: {exc}") from None
                usage = _usage(body)
                if usage is not None:
                    meter.used(prompt_tokens=usage[0], completion_tokens=usage[1])
                if response.status_code >= 400:
                    raise _http_failure(response.status_code, what, body, redactor)
            answer = _answer_text(body, what, redactor)
            if spec.output is None:
                return answer
            try:
                parsed = loads_exact(answer)
            except orjson.JSONDecodeError as exc:
                reason = f"the answer is not JSON ({exc})"
                parsed = None
            else:
                violations = spec.output.validate(parsed)
                if not violations:
                    return parsed
                reason = "; ".join(v.describe() for v in violations[:3])
            ctx.progress(f"answer {attempt} of {MAX_MODEL_TRIES} does not match the output schema: {reason}")
            messages.append({"role": "assistant", "content": answer})
            messages.append({"role": "user", "content": (
                f"Your answer does not match the required JSON schema: {reason}. "
                "Answer again with only a JSON document that matches the schema.")})
    raise JobFailure("InvalidOutput", f"the model's answer did not match the output schema after "
                                      f"{MAX_MODEL_TRIES} tries; the last reason: {reason}")


def _usage(body: bytes) -> tuple[int, int] | None:
    """The provider's reported `usage` (prompt_tokens, completion_tokens) of a chat completion, if any."""
    try:
        data = loads_exact(body)
    except orjson.JSONDecodeError:
        return None
    return usage_pair(data.get("usage")) if isinstance(data, dict) else None


def _answer_text(body: bytes, what: str, redactor: Redactor) -> str:
    try:
        data = loads_exact(body)
        content = data["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        snippet = redactor.text(body.decode("utf-8", "replace"))[:200]
        raise JobFailure("InvalidOutput", f"{what} did not answer a chat completion "
                                          f"(no choices[0].message.content): {snippet}") from None
    if not isinstance(content, str):
        raise JobFailure("InvalidOutput", f"{what} answered a message without text content")
    return content


def mcp_redacted(spec: AgentSpec, failure: JobFailure) -> JobFailure:
    """A failure of an mcp agent's job before its call (listing its tool, reading its annotations)
    with its server's secrets hidden, as `run_mcp` hides them in the call's: its reason quotes the
    server's stderr."""
    if spec.kind != "mcp":
        return failure
    try:
        redactor = Redactor(server_for_agent(spec).secrets())
    except JobFailure:  # a server the agent file cannot name has no secrets to hide
        return failure
    return redactor.failure(failure) if redactor else failure


async def run_mcp(spec: AgentSpec, value: Any, ctx: RunContext | None = None) -> Any:
    """An `mcp` agent's job (edge.mcp.kind), its tool call reserved against the job's budgets first.
    What its server configuration reads from the environment (`${NAME}` in its env, headers, URL) is
    hidden by the one Redactor, as for http and model agents: the answer, a failure's reason (the
    server's stderr too), progress lines and an elicitation's question."""
    redactor = Redactor(server_for_agent(spec).secrets())
    ctx = redactor.context(ctx) if ctx is not None else None
    work = run_mcp_agent(spec, value, ctx, reserve=lambda: budget_call(ctx, call_need(spec)), redactor=redactor)
    return await (redactor.run(work) if redactor else work)  # without secrets, its McpFailure kept whole


# the table ------------------------------------------------------------------------------------

AGENT_KINDS: dict[str, AgentKind] = {
    "python": run_python,
    "command": run_command,
    "http": run_http,
    "model": run_model,
    "mcp": run_mcp,
}
