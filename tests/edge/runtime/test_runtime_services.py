"""The runtime as composed services (issue 23 §2): each service works built alone with the services
it names in its constructor, no service holds the Runtime, and the durable flow reaches no private
name of the engine or the runtime."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from paths import ROOT

from oz0.edge.runtime.budget_book import BudgetBook
from oz0.edge.runtime.budgets import ALLOW_SCHEMA
from oz0.edge.runtime.catalog import Catalog
from oz0.edge.runtime.event_stream import open_events
from oz0.edge.runtime.events import Answered, JobEnded, JobEvent, QuestionAsked
from oz0.edge.runtime.jobs import MAX_REASON_CHARS, Jobs
from oz0.edge.runtime.plugin_cache import PluginCache
from oz0.edge.runtime.plugin_store import PluginStore
from oz0.edge.runtime.question_book import Questions
from oz0.edge.runtime.questions import AnswerRefused, Question
from oz0.edge.runtime.recovery import Recovery
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.store import Store


def _events(stream, job_id: str, n: int) -> list[JobEvent]:
    async def read() -> list[JobEvent]:
        seen: list[JobEvent] = []
        async for event in stream.events(job_id):
            seen.append(event)
            if len(seen) == n or isinstance(event, JobEnded):
                break
        return seen

    return asyncio.run(asyncio.wait_for(read(), 10))


def test_the_journal_and_person_steps_work_built_alone_over_one_store(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'oz0.db'}")
    stream = open_events(store)
    jobs = Jobs(store, Catalog(store, PluginCache(tmp_path / 'cache', PluginStore(store))), stream, BudgetBook(store))
    questions = Questions(store, jobs, stream)

    job, created = jobs.submit("nobody", "hello", requester="slack:U1", dedupe_key="d1")
    assert created and job.status == "queued" and job.plugin is None  # an unknown agent is journaled anyway
    assert jobs.submit("nobody", "hello again", dedupe_key="d1") == (job, False)

    assert questions.ask(Question(job.id, "go", "Go on?", ALLOW_SCHEMA, {}, None)) is True
    assert questions.ask(Question(job.id, "go", "Go on?", ALLOW_SCHEMA, {}, None)) is False
    assert jobs.job(job.id).status == "waiting"
    assert isinstance(_events(stream, job.id, 1)[0], QuestionAsked)  # the stream reads the open question itself
    with pytest.raises(AnswerRefused) as refused:
        questions.answer(job.id, "go", action="accept", content={"allow": True}, by="slack:U2")
    assert refused.value.why == "not_answerer"
    answer = questions.answer(job.id, "go", action="accept", content={"allow": True}, by="slack:U1")
    assert answer.content == {"allow": True} and jobs.job(job.id).status == "running"
    with pytest.raises(AnswerRefused) as late:
        questions.answer(job.id, "go", action="decline", content=None, by="slack:U1")
    assert late.value.why == "not_waiting" and "the first answer stands" in str(late.value)

    ended = jobs.end(job.id, "failed", attempts=1, kind="Boom", reason="x" * (MAX_REASON_CHARS + 50))
    assert ended.status == "failed" and ended.failure_kind == "Boom"
    assert len(ended.failure_reason or "") == MAX_REASON_CHARS and (ended.failure_reason or "").endswith("…")
    assert _events(stream, job.id, 1) == [JobEnded("failed", "Boom")]
    assert [a for a in store.audit_log(limit=10) if a.action == "access.denied"]  # the refused answerer, audited
    stream.close()
    store.close()


def test_recovery_built_alone_ends_a_dead_runners_job_unless_the_engine_resumes_it(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'oz0.db'}")
    stream = open_events(store)
    jobs = Jobs(store, Catalog(store, PluginCache(tmp_path / 'cache', PluginStore(store))), stream, BudgetBook(store))
    recovery = Recovery(store, jobs, Questions(store, jobs, stream))
    kept, _ = jobs.submit("nobody", "a")
    lost, _ = jobs.submit("nobody", "b")
    for job in (kept, lost):  # a runner on this host whose process is gone
        store.update_job(job.id, status="running", started=1.0, runner=f"{_host()}:999999999:gone")
    recovered = recovery.recover_interrupted(resumes=lambda row: row["id"] == kept.id)
    assert [j.id for j in recovered] == [lost.id]
    assert jobs.job(lost.id).status == "interrupted" and "ask again to rerun it" in (jobs.job(lost.id).failure_reason or "")
    assert jobs.job(kept.id).status == "running"
    stream.close()
    store.close()


def _host() -> str:
    from oz0.edge.runtime.recovery import runner_id

    return runner_id().split(":", 1)[0]


def test_the_engine_composes_its_lease_rather_than_inheriting_it(tmp_path: Path) -> None:
    from oz0.edge.runtime.durable import Engine  # imports DBOS (about a second)

    assert Engine.__mro__ == (Engine, object)  # no mixins
    runtime = Runtime(tmp_path)
    try:
        assert Engine(runtime, env={"OZ0_REPLICA_ID": "solo"}).lease is None  # SQLite: one process, no lease
    finally:
        runtime.close()


def test_the_runtime_composes_services_none_of_which_holds_it(tmp_path: Path) -> None:
    runtime = Runtime(tmp_path)
    try:
        assert Runtime.__mro__ == (Runtime, object)  # no mixins
        services = [runtime.catalog, runtime.journal, runtime.questions, runtime.budgets, runtime.tree,
                    runtime.cards, runtime.runs, runtime.recovery, runtime.attempts]
        for service in services:
            held = [name for name, value in vars(service).items() if value is runtime]
            assert held == [], f"{type(service).__name__} holds the runtime as {held}"
        # the services share the store and stream the runtime built, not copies of them
        assert runtime.journal.store is runtime.store and runtime.questions.stream is runtime.stream
        assert runtime.budgets.book is runtime.journal.book and runtime.cards.checked is runtime.attempts.checked
        job, _ = runtime.submit("nobody", "hi")
        ended = asyncio.run(runtime.execute(job.id))
        assert ended.failure_kind == "UnknownAgent" and runtime.card(ended).status.success is False
        assert [type(e) for e in _events(runtime.stream, job.id, 1)] == [JobEnded]
    finally:
        runtime.close()


def _private_reaches(path: Path) -> list[str]:
    """`x._name` on anything but self, and `from oz0... import _name`, in one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("oz0"):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name.startswith("_")]
    return found


# DBOS's recovery of another executor's workflows: what its admin API's POST /dbos-workflow-recovery runs,
# with no public Python name (DBOS 3.4); `resume_workflow` is no substitute, as it would requeue a workflow a
# live peer already took over. The one private name the engine reaches, and only in `_recover`.
_DBOS_RECOVERY = "._recover_pending_workflows"


@pytest.mark.parametrize("module", ["edge/flows/durable.py", "edge/runtime/durable.py", "edge/flows/runner.py"])
def test_the_durable_flow_and_the_engine_use_public_names_of_each_other_only(module: str) -> None:
    reaches = _private_reaches(ROOT / module)
    if module == "edge/runtime/durable.py":
        assert [r for r in reaches if r.endswith(_DBOS_RECOVERY)] != [], "DBOS's recovery moved: update this test"
        reaches = [r for r in reaches if not r.endswith(_DBOS_RECOVERY)]
    assert reaches == []


def test_answered_event_type_is_published_by_the_person_steps_service(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'oz0.db'}")
    stream = open_events(store)
    jobs = Jobs(store, Catalog(store, PluginCache(tmp_path / 'cache', PluginStore(store))), stream, BudgetBook(store))
    questions = Questions(store, jobs, stream)
    job, _ = jobs.submit("nobody", "hi")
    questions.ask(Question(job.id, "go", "Go?", ALLOW_SCHEMA, {}, None))

    async def scenario() -> list[JobEvent]:
        seen: list[JobEvent] = []

        async def read() -> None:
            async for event in stream.events(job.id):
                seen.append(event)
                if isinstance(event, Answered):
                    return

        reader = asyncio.ensure_future(read())
        await asyncio.sleep(0.05)
        questions.answer(job.id, "go", action="accept", content={"allow": True}, by=job.requester, via="console")
        await asyncio.wait_for(reader, 10)
        return seen

    seen = asyncio.run(scenario())
    assert isinstance(seen[0], QuestionAsked) and isinstance(seen[-1], Answered)
    assert seen[-1].via == "console" and seen[-1].answer.content == {"allow": True}
    stream.close()
    store.close()
