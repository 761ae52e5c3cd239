"""A plain model agent's streamed chat completion (`"stream": true`): its text as it arrives.

The OpenAI chat-completions stream is server-sent events, one JSON chunk a `data:` line
(`choices[0].delta.content`), `usage` in the last chunk when `stream_options.include_usage` asked for
it, and `data: [DONE]` at the end. A provider that ignores `stream` answers one JSON completion
instead (`is_event_stream` is False): the kind reads it as before. The whole answer stays bounded by
`limits.max_output_bytes`, counted on the bytes received, as for an unstreamed answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import orjson

from oz0.edge.contracts.json_data import loads_exact
from oz0.edge.model.job import JobFailure
from oz0.edge.runtime.text_out import TextOut

__all__ = ["Streamed", "is_event_stream", "read_chat_stream", "usage_pair"]


@dataclass(frozen=True)
class Streamed:
    text: str
    usage: tuple[int, int] | None


def is_event_stream(response: httpx.Response) -> bool:
    kind: str = response.headers.get("content-type", "")
    return kind.split(";")[0].strip().lower() == "text/event-stream"


async def read_chat_stream(response: httpx.Response, cap: int, what: str, out: TextOut) -> Streamed:
    """The streamed answer's whole text (each piece given to `out` as it comes) and its usage.
    JobFailure InvalidOutput for a chunk that is not a chat-completion chunk, OutputTooLarge past `cap`."""
    parts: list[str] = []
    usage: tuple[int, int] | None = None
    received = 0
    async for line in response.aiter_lines():
        received += len(line) + 1
        if received > cap:
            raise JobFailure("OutputTooLarge", f"{what} answered more than {cap:,} bytes "
                                               f"(limits.max_output_bytes is {cap:,})")
        if not line.startswith("data:"):
            continue   # an event name, an id, a comment (": keep-alive") or the blank line between events
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunk = loads_exact(data)
        except orjson.JSONDecodeError:
            raise JobFailure("InvalidOutput", f"{what} streamed a chunk that is not JSON: {data[:200]}") from None
        if not isinstance(chunk, dict):
            raise JobFailure("InvalidOutput", f"{what} streamed a chunk that is not an object: {data[:200]}")
        if chunk.get("error") is not None:
            raise JobFailure("Unavailable", f"{what} failed while answering: {str(chunk['error'])[:200]}")
        usage = _chunk_usage(chunk) or usage
        piece = _chunk_text(chunk)
        if piece:
            parts.append(piece)
            out.add(piece)
    out.end()
    return Streamed("".join(parts), usage)


def _chunk_text(chunk: dict[str, object]) -> str:
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    delta = choices[0].get("delta")
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


def _chunk_usage(chunk: dict[str, object]) -> tuple[int, int] | None:
    return usage_pair(chunk.get("usage"))


def usage_pair(usage: object) -> tuple[int, int] | None:
    """A chat completion's `usage` as (prompt_tokens, completion_tokens), when it reports both."""
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int) and not isinstance(prompt, bool) \
            and not isinstance(completion, bool) and prompt >= 0 and completion >= 0:
        return prompt, completion
    return None
