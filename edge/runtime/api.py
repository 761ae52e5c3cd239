"""The runtime as its callers see it: the Protocols the CLI, the console and its API, and the chat
wires type against, so no adapter holds the runtime as `Any` and each says which part it uses.

    RuntimeFace            what every caller may read: agents, jobs, their cards and events
    └── ConsoleRuntime     + submit, run, answer person steps, the journal (console pages and API)
        └── ServeRuntime   + the engine's life: launch, recover, close (`oz0 serve`)
    ChatRuntime            the chat ask flow and its wires (Slack, Discord): submit, deliver, answer

`edge.runtime.runner.Runtime` is the one implementation; the check at the bottom of this module makes
mypy prove that it satisfies each face.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from oz0.edge.cards.model import Card
    from oz0.edge.model.agent import AgentSpec
    from oz0.edge.model.installed import InstalledVersion
    from oz0.edge.model.job import Job
    from oz0.edge.model.progress import Progress, ProgressSink
    from oz0.edge.model.reply_ref import ReplyRef
    from oz0.edge.runtime.backlog import Backlog
    from oz0.edge.runtime.budgets import Budgets
    from oz0.edge.runtime.cancel import JobStops
    from oz0.edge.runtime.conversations import Conversations
    from oz0.edge.runtime.event_stream import JobEvents
    from oz0.edge.runtime.events import JobEvent
    from oz0.edge.runtime.input_check import Checked
    from oz0.edge.runtime.people import People
    from oz0.edge.runtime.question_book import Questions
    from oz0.edge.runtime.questions import Answer, Question
    from oz0.edge.runtime.schedules import Schedules
    from oz0.edge.runtime.store import AuditRecord, Store

__all__ = ["ChatRuntime", "ConsoleRuntime", "RuntimeFace", "ServeRuntime"]


class RuntimeFace(Protocol):
    """What every caller may read: the installed agents and flows, jobs, their cards and events."""

    @property
    def home(self) -> Path: ...
    @property
    def store(self) -> Store: ...
    @property
    def budgets(self) -> Budgets: ...

    def agent(self, name: str) -> AgentSpec: ...
    def agents(self) -> list[AgentSpec]: ...
    def flows(self) -> list[AgentSpec]: ...
    def installed(self) -> list[InstalledVersion]: ...
    def job(self, job_id: str) -> Job | None: ...
    def jobs(self, *, limit: int = 50) -> list[Job]: ...
    def children(self, job_id: str) -> list[Job]: ...
    def card(self, job: Job) -> Card: ...
    def events(self, job_id: str) -> AsyncIterator[JobEvent]: ...


class ConsoleRuntime(RuntimeFace, Protocol):
    """The console's pages and its HTTP API: ask, run, answer a person step, read the journal."""

    @property
    def questions(self) -> Questions: ...
    @property
    def stream(self) -> JobEvents: ...
    @property
    def stops(self) -> JobStops: ...  # stopping a job (edge.runtime.cancel)
    @property
    def schedules(self) -> Schedules: ...  # the plugins' schedules (edge.runtime.schedules)
    @property
    def people(self) -> People: ...  # display names the channels learned (edge.runtime.people)

    def submit(self, agent: str, text: str, *, requester: str = "cli", channel: str = "cli",
               dedupe_key: str | None = None, reply_to: ReplyRef | None = None, workspace: str | None = None,
               channel_id: str | None = None, parent_id: str | None = None,
               checked: Checked | None = None, job_id: str | None = None) -> tuple[Job, bool]: ...
    async def execute(self, job_id: str, *, on_progress: ProgressSink | None = None) -> Job: ...
    def question(self, job_id: str) -> Question | None: ...
    def answer(self, job_id: str, step: str, *, action: str, content: dict[str, Any] | None, by: str,
               groups: tuple[str, ...] = (), roles: tuple[str, ...] = (), via: str | None = None) -> Answer: ...
    def can_ask(self, platform: str) -> bool: ...
    def shows_questions(self, platform: str) -> None: ...
    def audit_log(self, *, limit: int = 100) -> list[AuditRecord]: ...


class ChatRuntime(Protocol):
    """What the chat ask flow (`oz0.adapters.chat.flow`) and its wires need, and nothing more (and
    `home`, where a channel reads access.yaml)."""

    @property
    def home(self) -> Path: ...
    @property
    def conversations(self) -> Conversations: ...
    @property
    def people(self) -> People: ...  # display names the channels learned (edge.runtime.people)
    @property
    def backlog(self) -> Backlog: ...  # the queued jobs' bounds (edge.runtime.backlog)
    @property
    def stopping(self) -> bool: ...  # a stop began: asks are turned away (Runtime.drain)
    @property
    def stops(self) -> JobStops: ...  # stopping a job (edge.runtime.cancel)

    def agents(self) -> list[AgentSpec]: ...

    def submit(self, agent: str, text: str, *, requester: str, channel: str, dedupe_key: str | None,
               reply_to: ReplyRef | None, workspace: str | None, channel_id: str | None,
               job_id: str | None = None) -> tuple[Job, bool]: ...

    def execute(self, job_id: str, *, on_progress: Callable[[Progress], Any] | None = None) -> Awaitable[Job]: ...

    def job(self, job_id: str) -> Job | None: ...

    def card(self, job: Job) -> Card: ...

    def set_reply_to(self, job_id: str, reply_to: ReplyRef) -> None: ...

    def set_question_shown(self, job_id: str, shown: Mapping[str, Any] | None) -> None: ...

    def audit(self, action: str, *, actor: str, detail: Mapping[str, Any]) -> None: ...

    def claim(self, key: str) -> bool: ...

    def deliver_with(self, platform: str, deliver: Callable[[Job], Awaitable[None]]) -> None: ...

    def delivers(self, platform: str) -> bool: ...

    def question(self, job_id: str) -> Question | None: ...

    def answer(self, job_id: str, step: str, *, action: str, content: dict[str, Any] | None, by: str,
               groups: tuple[str, ...] = (), roles: tuple[str, ...] = (), via: str | None = None) -> Answer: ...

    def shows_questions(self, platform: str) -> None: ...

    def events(self, job_id: str) -> AsyncIterator[JobEvent]: ...


class ServeRuntime(ConsoleRuntime, Protocol):
    """`oz0 serve`: the console and the chat wires, plus the engine's life."""

    def launch_engine(self, *, env: Mapping[str, str] | None = None) -> None: ...
    def recover_interrupted(self) -> list[Job]: ...
    def drain(self, timeout_s: float) -> None: ...
    def close(self) -> None: ...


if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

    def _runtime_is_each_face(runtime: Runtime) -> tuple[RuntimeFace, ConsoleRuntime, ServeRuntime, ChatRuntime]:
        return runtime, runtime, runtime, runtime
