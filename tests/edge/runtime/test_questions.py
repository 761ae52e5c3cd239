"""Person steps in the runtime: a real plugin whose python agents ask a person (ctx.ask_person), a real
SQLite journal, answers checked (answerer, state, content), the first answer winning across two
runtimes on one database, timeouts, listeners, and a restart while a step waits."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from plugin_kit import make_plugin

from oz0.edge.contracts.answer_schema import check_answer_schema
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime import recovery
from oz0.edge.runtime.events import Answered, JobEnded, QuestionAsked
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.questions import Answer, AnswerRefused, Question
from oz0.edge.runtime.runner import Runtime

APPROVE = {"type": "object", "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
           "required": ["approved"]}

IMPL = """
    APPROVE = {"type": "object", "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
               "required": ["approved"]}

    async def merge(text, ctx):
        answer = await ctx.ask_person(f"Merge {text}?", APPROVE, step="approve",
                                      answerers={"users": ["U1"], "groups": ["ONCALL"]})
        return f"{answer.action} {answer.content} by {answer.by}"

    async def mine(text, ctx):
        answer = await ctx.ask_person("Sure?", APPROVE, timeout_s=float(text or 30))
        return f"{answer.action} by {answer.by}"

    def blocking(text, ctx):
        answer = ctx.ask_person_sync("Go on?", APPROVE, step="go")
        return f"{answer.action} {answer.content}"
    """


def agent(entry: str, step: str) -> dict:
    return {"description": f"asks a person ({entry})", "kind": "python", "entry": f"impl:{entry}",
            "input": "text", "output": "text", "asks": {step: {"answer_schema": "schemas/approve.json"}}}


@pytest.fixture
def runtime(oz0_home: Path, tmp_path: Path) -> Runtime:
    rt = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    make_plugin(tmp_path / "asks", name="asks", agents={"merge": agent("merge", "approve"),
                                                         "mine": agent("mine", "ask-1"),
                                                         "blocking": agent("blocking", "go")},
                files={"impl.py": IMPL, "schemas/approve.json": APPROVE})
    install_plugin(rt, load_plugin(tmp_path / "asks"), actor="test")
    yield rt
    rt.close()


async def until_waiting(rt: Runtime, job_id: str) -> Question:
    for _ in range(400):
        question = rt.question(job_id)
        if question is not None and rt.job(job_id).status == "waiting":
            return question
        await asyncio.sleep(0.01)
    raise AssertionError(f"job {job_id} never waited; it is {rt.job(job_id).status}")


def audited(rt: Runtime, action: str) -> list:
    return [r for r in rt.audit_log() if r.action == action]


def test_a_job_waits_then_the_first_answerer_decides(runtime: Runtime) -> None:
    async def scenario() -> None:
        job, _ = runtime.submit("merge", "acme#12", requester="slack:U9")
        run = asyncio.create_task(runtime.execute(job.id))
        question = await until_waiting(runtime, job.id)
        assert question.to_dict() == {"step": "approve", "message": "Merge acme#12?", "answer_schema": APPROVE,
                                      "answerers": {"users": ["U1"], "groups": ["ONCALL"]},
                                      "expires": question.expires_at, "source": None}
        assert question.expires_at is not None

        with pytest.raises(AnswerRefused) as refused:
            runtime.answer(job.id, "approve", action="accept", content={"approved": True}, by="slack:U9")
        assert refused.value.why == "not_answerer"
        assert audited(runtime, "access.denied")[0].detail == {
            "job": job.id, "step": "approve", "reason": "not among the question's answerers"}

        with pytest.raises(AnswerRefused) as invalid:
            runtime.answer(job.id, "approve", action="accept", content={"approved": "yes"}, by="slack:U1")
        assert invalid.value.why == "invalid"
        assert "$.approved" in invalid.value.message and "boolean" in invalid.value.message
        assert runtime.job(job.id).status == "waiting"

        answer = runtime.answer(job.id, "approve", action="accept", content={"approved": True, "note": "ok"},
                                by="discord:R7", groups=("ONCALL",))
        assert answer.by == "discord:R7"
        done = await asyncio.wait_for(run, 10)
        assert done.status == "succeeded"
        assert done.output == "accept {'approved': True, 'note': 'ok'} by discord:R7"

        with pytest.raises(AnswerRefused) as twice:
            runtime.answer(job.id, "approve", action="decline", content=None, by="slack:U1")
        assert twice.value.why == "not_waiting" and "already answered (accept) by discord:R7" in twice.value.message
        record = audited(runtime, "flow.answered")
        assert len(record) == 1 and record[0].actor == "discord:R7"
        assert record[0].detail == {"job": job.id, "step": "approve", "action": "accept",
                                    "answer": {"approved": True, "note": "ok"}}
        assert runtime.question(job.id) is None
    asyncio.run(scenario())


def test_the_asker_answers_by_default_and_a_decline_carries_no_content(runtime: Runtime) -> None:
    async def scenario() -> None:
        job, _ = runtime.submit("mine", "", requester="console:maria")
        run = asyncio.create_task(runtime.execute(job.id))
        question = await until_waiting(runtime, job.id)
        assert question.step == "ask-1" and question.answerers == {}
        with pytest.raises(AnswerRefused) as other:
            runtime.answer(job.id, "ask-1", action="accept", content={"approved": True}, by="console:bob")
        assert other.value.why == "not_answerer"
        with pytest.raises(AnswerRefused) as content:
            runtime.answer(job.id, "ask-1", action="decline", content={"approved": False}, by="console:maria")
        assert content.value.why == "invalid"
        runtime.answer(job.id, "ask-1", action="decline", content=None, by="console:maria")
        assert (await asyncio.wait_for(run, 10)).output == "decline by console:maria"
    asyncio.run(scenario())


def test_an_unanswered_question_times_out_and_a_late_answer_is_refused(runtime: Runtime) -> None:
    async def scenario() -> None:
        job, _ = runtime.submit("mine", "0.3", requester="console:maria")
        done = await asyncio.wait_for(runtime.execute(job.id), 10)
        assert done.output == "timeout by timeout"
        with pytest.raises(AnswerRefused) as late:
            runtime.answer(job.id, "ask-1", action="accept", content={"approved": True}, by="console:maria")
        assert late.value.why == "not_waiting"
    asyncio.run(scenario())


def test_a_sync_agent_blocks_its_thread_until_answered(runtime: Runtime) -> None:
    async def scenario() -> None:
        job, _ = runtime.submit("blocking", "", requester="cli:me")
        run = asyncio.create_task(runtime.execute(job.id))
        await until_waiting(runtime, job.id)
        runtime.answer(job.id, "go", action="accept", content={"approved": False}, by="cli:me")
        assert (await asyncio.wait_for(run, 10)).output == "accept {'approved': False}"
    asyncio.run(scenario())


def test_the_jobs_event_stream_shows_the_question_the_answer_and_the_end(runtime: Runtime) -> None:
    async def scenario() -> None:
        assert not runtime.can_ask("slack")
        runtime.shows_questions("slack")
        assert runtime.can_ask("slack") and not runtime.can_ask("console")
        job, _ = runtime.submit("merge", "x", requester="slack:U1", reply_to=ReplyRef("slack", 1, {"channel": "C1"}))
        seen: list[tuple] = []

        async def read() -> None:
            async for event in runtime.events(job.id):
                if isinstance(event, QuestionAsked):
                    seen.append(("asked", event.question.step))
                    runtime.answer(job.id, "approve", action="cancel", content=None, by="slack:U1")
                elif isinstance(event, Answered):
                    seen.append(("answered", event.step, event.answer.action, event.answer.by))
                elif isinstance(event, JobEnded):
                    seen.append(("ended", event.status))

        reader = asyncio.create_task(read())
        await asyncio.sleep(0)
        await asyncio.wait_for(runtime.execute(job.id), 10)
        await asyncio.wait_for(reader, 5)
        assert seen == [("asked", "approve"), ("answered", "approve", "cancel", "slack:U1"), ("ended", "succeeded")]
        late = [e async for e in runtime.events(job.id)]  # a late reader gets the end at once
        assert late == [JobEnded("succeeded", None)]
    asyncio.run(scenario())


def test_asking_twice_is_a_no_op(runtime: Runtime) -> None:
    async def scenario() -> None:
        job, _ = runtime.submit("merge", "x", requester="cli:me")
        first = Question(job.id, "s", "one?", APPROVE, {}, None)
        assert runtime.questions.ask(first) is True
        assert runtime.questions.ask(Question(job.id, "s", "two?", APPROVE, {}, None)) is False
        assert runtime.question(job.id).message == "one?"
        assert runtime.job(job.id).status == "waiting"
    asyncio.run(scenario())


def test_the_first_answer_wins_across_two_runtimes_on_one_database(runtime: Runtime, oz0_home: Path) -> None:
    other = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        job, _ = runtime.submit("merge", "x", requester="cli:me")
        runtime.ask(Question(job.id, "go", "go?", APPROVE, {}, None))
        results: list = []
        barrier = threading.Barrier(8)

        def give(rt: Runtime, n: int) -> None:
            barrier.wait()
            try:
                results.append(rt.answer(job.id, "go", action="accept", content={"approved": n % 2 == 0},
                                         by="cli:me"))
            except AnswerRefused as exc:
                results.append(exc.why)

        threads = [threading.Thread(target=give, args=(rt, n)) for n, rt in enumerate([runtime, other] * 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r if isinstance(r, str) else "" for r in results) == [""] + ["not_waiting"] * 7
        assert len(audited(runtime, "flow.answered")) == 1
        assert runtime.job(job.id).status == "running"
    finally:
        other.close()


def test_a_restart_ends_a_waiting_job_interrupted_and_closes_its_question(runtime: Runtime,
                                                                              oz0_home: Path) -> None:
    async def scenario() -> None:
        job, _ = runtime.submit("merge", "x", requester="cli:me")
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)  # a process that died, on this host
        runtime.store.update_job(job.id, status="running", runner=f"{recovery._HOST}:{gone.stdout.strip()}:dead")
        runtime.ask(Question(job.id, "approve", "go?", APPROVE, {}, None))
        later = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
        try:
            recovered = later.recover_interrupted()
            assert [j.id for j in recovered] == [job.id]
            ended = later.job(job.id)
            assert ended.status == "interrupted" and "waiting for an answer" in ended.failure_reason
            assert later.recover_interrupted() == []
            with pytest.raises(AnswerRefused) as gone:
                later.answer(job.id, "approve", action="accept", content={"approved": True}, by="cli:me")
            assert gone.value.why == "not_waiting"
        finally:
            later.close()
    asyncio.run(scenario())


@pytest.mark.parametrize("schema, says", [
    ({"type": "array"}, "an answer schema is an object"),
    ({"type": "object", "properties": {}}, "at least one field"),
    ({"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(21)}}, "the limit is 20"),
])
def test_an_answer_schema_is_an_object_of_primitive_fields(schema: dict, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        check_answer_schema(schema)


def test_answer_round_trips_as_data() -> None:
    answer = Answer("accept", {"a": 1}, "slack:U1", 12.5)
    assert Answer(**answer.to_dict()) == answer
