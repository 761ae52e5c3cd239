"""Where an MCP server is and what it offers: `ServerSpec`, `ToolInfo`, and `McpFailure`, the one
failure every MCP problem becomes (a kind, and for stdio the tail of the server's stderr)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from oz0.edge.contracts.schema import Contract, load_contract
from oz0.edge.model.job import JobFailure
from oz0.edge.model.secrets import ENV_REF, env_secrets

__all__ = [
    "ELICIT_OPTIONS",
    "REASON_TAIL_LINES",
    "McpFailure",
    "ServerSpec",
    "ToolInfo",
]

ELICIT_OPTIONS = {"mode": "legacy"}  # the elicitation handshake: the server has a back-channel to ask

REASON_TAIL_LINES = 5

class McpFailure(JobFailure):
    """A typed failure of an MCP server or call: a JobFailure of a built-in kind, so the runtime reports it.

    Unavailable (cannot start or reach the server), Crashed (it died during the call, or answered
    something unreadable), Timeout, Misconfigured (no such tool, an unusable tool schema, a missing
    setting), InvalidInput, AgentError (the tool answered isError, or a result that is not complete),
    Rejected (the server refused the request with a protocol error). `summary` is the reason without
    the server's stderr; `reason` adds its last lines.
    """

    def __init__(self, kind: str, reason: str, *, stderr_tail: str = "", partial_output: Any = None) -> None:
        self.summary = reason
        self.stderr_tail = stderr_tail
        if stderr_tail:
            lines = stderr_tail.splitlines()[-REASON_TAIL_LINES:]
            reason = f"{reason}. The server's stderr ended with: " + " | ".join(ln.strip() for ln in lines)
        super().__init__(kind, reason, partial_output=partial_output)

    def __str__(self) -> str:
        return self.reason


def _expand_env(value: str, *, what: str) -> str:
    """`${NAME}` replaced by the environment variable; a missing one is an error naming it (never its value)."""
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise McpFailure("Misconfigured", f"{what} names the environment variable ${{{name}}}, which is not set")
        return os.environ[name]
    return ENV_REF.sub(sub, value)


@dataclass(frozen=True)
class ServerSpec:
    """Where an MCP server is: a command to start (stdio) or a URL (streamable HTTP).

    Header and env values may name environment variables as `${NAME}`; they are read when the server
    is reached, so secrets stay in the environment and out of agent files and messages.
    """

    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise McpFailure("Misconfigured", "an MCP server is named by a command (stdio) or by a url "
                                              "(streamable HTTP): exactly one of the two")
        if self.url and urlsplit(self.url).scheme not in ("http", "https"):
            raise McpFailure("Misconfigured", f"an MCP server url must start with http:// or https://, "
                                              f"not {self.label()!r}")

    @classmethod
    def from_command_line(cls, text: str, *, cwd: str | None = None,
                          env: Mapping[str, str] | None = None) -> ServerSpec:
        """A command given as one shell-quoted string (`python server.py --verbose`), split as a shell would."""
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise McpFailure("Misconfigured", f"cannot split the server command {text!r}: {exc}") from None
        if not argv:
            raise McpFailure("Misconfigured", "the server command is empty")
        return cls(command=tuple(argv), cwd=cwd, env=tuple(sorted((env or {}).items())))

    @classmethod
    def from_url(cls, url: str, *, headers: Mapping[str, str] | None = None) -> ServerSpec:
        return cls(url=url, headers=tuple(sorted((headers or {}).items())))

    @classmethod
    def from_config(cls, server: Mapping[str, Any], *, cwd: str | None = None) -> ServerSpec:
        """The `server:` block of an agent file: `command` and `args`, or `url` and `headers`."""
        if not isinstance(server, Mapping):
            raise McpFailure("Misconfigured", "an mcp agent's `server` must be a mapping with command/args or url")
        if server.get("command") and server.get("url"):
            raise McpFailure("Misconfigured", "an mcp agent's `server` has both command and url; name one")
        if server.get("url"):
            return cls(url=str(server["url"]), headers=tuple(sorted(dict(server.get("headers") or {}).items())))
        if not server.get("command"):
            raise McpFailure("Misconfigured", "an mcp agent's `server` needs `command` (stdio) or `url` (HTTP)")
        argv = (str(server["command"]), *(str(a) for a in server.get("args") or ()))
        return cls(command=argv, cwd=cwd, env=tuple(sorted(dict(server.get("env") or {}).items())))

    @property
    def is_stdio(self) -> bool:
        return bool(self.command)

    def label(self) -> str:
        """How messages name the server: the command line, or the URL without credentials or query."""
        if self.command:
            return shlex.join(self.command)
        parts = urlsplit(self.url or "")
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    def secrets(self) -> list[str]:
        """What this server's configuration reads from the environment (`${NAME}` in its env, headers
        and URL): hidden by the job's Redactor wherever the server's words go."""
        return env_secrets(*(v for _, v in self.env), *(v for _, v in self.headers), self.url or "")

    def resolved_env(self) -> dict[str, str]:
        return {k: _expand_env(v, what=f"server env {k}") for k, v in self.env}

    def resolved_headers(self) -> dict[str, str]:
        return {k: _expand_env(v, what=f"header {k}") for k, v in self.headers}


@dataclass(frozen=True)
class ToolInfo:
    """One tool as its server lists it, with its schemas as the wire carries them."""

    name: str
    description: str = ""
    title: str | None = None
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None  # title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint

    def input_contract(self) -> Contract | None:
        """The tool's inputSchema as a contract; ContractError names the tool (e.g. a remote $ref)."""
        return self._contract(self.input_schema, "inputSchema")

    def output_contract(self) -> Contract | None:
        return self._contract(self.output_schema, "outputSchema")

    def _contract(self, schema: Mapping[str, Any] | None, which: str) -> Contract | None:
        if schema is None:
            return None
        return load_contract(dict(schema), source=f"tool {self.name!r} {which}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out
