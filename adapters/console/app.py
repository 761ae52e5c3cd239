"""The local web console: agents, a run form per agent, job history, and the runtime API beside them.

Pages are rendered on the server with Jinja2 (autoescape on); a card is the HTML renderer's escaped
fragment, drawn on every view of the job page. One click away (`?previews=1`, drawn only then) are
previews of how Slack, Discord and Teams show it (adapters/console/preview.py, from the very payloads) and
those payloads, so a plugin author sees exactly what the channels will get. The JSON API lives in adapters/console/api.py; the guards (token,
CSRF, Content-Security-Policy) in adapters/console/security.py; what the templates show in
adapters/console/views.py; the server `oz0 serve` runs in adapters/console/server.py.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from oz0.adapters.console import (
    answers,
    api_doc,
    follow_ups,
    plugin_actions,
    plugin_admin_api,
    plugin_pages,
    plugins_api,
    probes,
    schedules_api,
)
from oz0.adapters.console import api as console_api
from oz0.adapters.console.forms import FormError, fields_for, form_input
from oz0.adapters.console.input_refusal import Refusal, check_input
from oz0.adapters.console.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    ConsoleConfigError,
    Guard,
    GuardMiddleware,
    SecurityHeaders,
    cookie_options,
)
from oz0.adapters.console.streamed import StreamedTexts
from oz0.adapters.console.views import agent_view, budget_rows, channel_payloads, drawn_card, example_values, job_view
from oz0.edge import ConsoleRuntime
from oz0.edge.runtime.feedback import FEEDBACK_VALUES, feedback_counts
from oz0.edge.runtime.loop_trace import read_trace, trace_lines
from oz0.edge.runtime.questions import AnswerRefused
from oz0.edge.runtime.transient import RETRY_AFTER_S, UNAVAILABLE, is_transient, unavailable_reason

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ConsoleSettings",
    "create_app",
]

log = logging.getLogger("oz0.console")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8470
MAX_FORM_BYTES = 1_048_576
JOBS_SHOWN = 100
MAX_LOGIN_NAME = 80         # characters of the name a login may give (one line)
SAFE_DOWNLOAD_TYPES = ("application/json", "text/plain", "text/markdown", "text/csv")


@dataclass(frozen=True)
class ConsoleSettings:
    """Where the console listens and the token that guards it, read from the environment."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    admin_token: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ConsoleSettings:
        host = env.get("OZ0_CONSOLE_HOST", "").strip() or DEFAULT_HOST
        raw_port = env.get("OZ0_CONSOLE_PORT", "").strip() or str(DEFAULT_PORT)
        try:
            port = int(raw_port)
        except ValueError:
            raise ConsoleConfigError(f"OZ0_CONSOLE_PORT={raw_port!r} is not a port number (0 to 65535)") from None
        if not 0 <= port <= 65535:
            raise ConsoleConfigError(f"OZ0_CONSOLE_PORT={port} is not a port number (0 to 65535)")
        return cls(host, port, env.get("OZ0_CONSOLE_TOKEN") or None, env.get("OZ0_ADMIN_TOKEN") or None)


def create_app(runtime: ConsoleRuntime, *, settings: ConsoleSettings | None = None, guard: Guard | None = None) -> Starlette:
    """The console and runtime API as one ASGI app over `runtime` (ConsoleConfigError if unsafe to start)."""
    settings = settings or ConsoleSettings()
    guard = guard or Guard(settings.host, settings.token, settings.admin_token)
    pages = _Pages(runtime, guard)
    answers.register(runtime)
    routes = [
        Route("/", pages.agents, methods=["GET"]),
        Route("/agents/{name}", pages.agent, methods=["GET"]),
        Route("/agents/{name}/runs", pages.run, methods=["POST"]),
        Route("/flows/{name}", pages.agent, methods=["GET"]),
        Route("/flows/{name}/runs", pages.run, methods=["POST"]),
        Route("/jobs", pages.jobs, methods=["GET"]),
        Route("/jobs/{job_id}", pages.job, methods=["GET"]),
        Route("/jobs/{job_id}/answer", pages.answer, methods=["POST"]),
        Route("/jobs/{job_id}/result", pages.attachment, methods=["GET"]),
        Route("/jobs/{job_id}/files/{name}", pages.job_file, methods=["GET"]),
        *plugin_pages.routes(runtime, pages.page, pages.error),
        *plugin_actions.routes(runtime, guard, pages.checked_form, pages.error),
        *schedules_api.routes(runtime, pages.page),
        Route("/login", pages.login_form, methods=["GET"]),
        Route("/login", pages.login, methods=["POST"]),
        Route("/logout", pages.logout, methods=["POST"]),
        Route("/favicon.ico", lambda request: Response(status_code=204), methods=["GET"]),
        *console_api.routes(runtime),
        *api_doc.routes(runtime),
        *probes.routes(runtime),
        *plugins_api.routes(runtime),
        *plugin_admin_api.routes(runtime),
        Mount("/static", StaticFiles(packages=[("oz0.adapters.console", "static")]), name="static"),
    ]
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=guard.allowed_hosts),
        Middleware(GuardMiddleware, guard=guard, open_paths=("/login", "/static/", *probes.OPEN_PATHS)),
    ]
    return Starlette(routes=routes, middleware=middleware,
                     exception_handlers={404: pages.not_found, 405: pages.not_allowed,
                                         SQLAlchemyError: pages.unavailable, OSError: pages.unavailable})


class _Pages:
    def __init__(self, runtime: ConsoleRuntime, guard: Guard) -> None:
        self.runtime = runtime
        self.guard = guard
        self.env = Environment(loader=PackageLoader("oz0.adapters.console", "templates"),
                               autoescape=select_autoescape(default=True, default_for_string=True))
        self.env.globals["static"] = lambda name: f"/static/{quote(name)}"
        self.starter = answers.JobStarter(runtime)
        self.texts = StreamedTexts(runtime)   # running jobs' text answers as they are written

    # rendering --------------------------------------------------------------------------------
    def page(self, request: Request, template: str, *, status_code: int = 200, **context: Any) -> HTMLResponse:
        csrf = request.cookies.get(CSRF_COOKIE)
        fresh = not self.guard.csrf_ok(csrf, csrf)
        if fresh:
            csrf = self.guard.new_csrf()
        html = self.env.get_template(template).render(
            csrf=csrf, logged_in=self.guard.needs_login and request.cookies.get(SESSION_COOKIE) is not None,
            **context)
        response = HTMLResponse(html, status_code=status_code)
        if fresh:
            response.set_cookie(CSRF_COOKIE, csrf, **cookie_options())
        return response

    def error(self, request: Request, title: str, message: str, status_code: int) -> HTMLResponse:
        return self.page(request, "error.html", title=title, message=message, status_code=status_code)

    async def not_found(self, request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/v1/"):
            return console_api.failure("not found", "not_found", status_code=404, command="oz0 console")
        return self.error(request, "Not found", f"Nothing lives at {request.url.path}.", 404)

    async def unavailable(self, request: Request, exc: Exception) -> Response:
        """The journal cannot be read or written (the database is down, the disk full): a 503 to try
        again later, a QZX result under /v1; any other database error is a 500, never a traceback."""
        transient = is_transient(exc)
        log.warning("%s %s: the journal failed (%s)", request.method, request.url.path, type(exc).__name__,
                    exc_info=not transient)
        status, code = (503, UNAVAILABLE) if transient else (500, "internal_error")
        message = (f"{unavailable_reason(exc)}; try again in a minute" if transient
                   else f"oz0 failed reading its journal ({type(exc).__name__}); the bot's log has the details")
        headers = {"Retry-After": str(RETRY_AFTER_S)} if transient else {}
        if request.url.path.startswith("/v1/"):
            return console_api.failure(message, code, status_code=status, command="oz0 console", headers=headers)
        response = self.error(request, "Unavailable" if transient else "Internal error", message, status)
        response.headers.update(headers)
        return response

    async def not_allowed(self, request: Request, exc: Exception) -> Response:
        return JSONResponse({"success": False, "message": f"{request.method} is not allowed here",
                             "error_code": "method_not_allowed"}, status_code=405)

    async def checked_form(self, request: Request) -> Mapping[str, str] | Response:
        size = int(request.headers.get("content-length") or 0)
        if size > MAX_FORM_BYTES:
            return self.error(request, "Too large", f"The form is {size:,} bytes; the limit is {MAX_FORM_BYTES:,}.", 413)
        form = await request.form(max_files=0, max_fields=1000, max_part_size=MAX_FORM_BYTES)
        values = {k: v for k, v in form.items() if isinstance(v, str)}
        if not self.guard.csrf_ok(request.cookies.get(CSRF_COOKIE), values.get(CSRF_FIELD)):
            return self.error(request, "Form expired",
                              "The form's security token is missing or stale (CSRF check). Reload the page and "
                              "send it again.", 403)
        return values

    # pages -----------------------------------------------------------------------------------
    async def agents(self, request: Request) -> Response:
        versions = console_api.plugin_versions(self.runtime)
        agents = [agent_view(a, versions) for a in (*self.runtime.agents(), *self.runtime.flows())]
        return self.page(request, "agents.html", nav="agents", agents=agents)

    async def agent(self, request: Request) -> Response:
        spec = self._spec(request.path_params["name"])
        if spec is None:
            return self._unknown_agent(request)
        view = agent_view(spec, console_api.plugin_versions(self.runtime))
        fields = fields_for(spec.input)
        chosen = request.query_params.get("example", "")
        if chosen.isdigit() and int(chosen) < len(spec.examples):  # an example's link fills the form
            values = example_values(spec, fields, spec.examples[int(chosen)].input_text)
        else:
            values = example_values(spec, fields, spec.example) if spec.example else {}
        counts = feedback_counts(self.runtime.store, agent=spec.name)
        feedback = {v: counts.get((spec.name, v), 0) for v in FEEDBACK_VALUES}
        return self.page(request, "agent.html", nav="agents", agent=view, fields=fields, values=values, error=None,
                         feedback=feedback)

    async def run(self, request: Request) -> Response:
        spec = self._spec(request.path_params["name"])
        if spec is None:
            return self._unknown_agent(request)
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        fields = fields_for(spec.input)
        view = agent_view(spec, console_api.plugin_versions(self.runtime))
        values = {f.html_id: form.get(f.html_id, "") for f in fields}
        try:
            value = form_input(fields, form)
        except FormError as exc:
            return self.page(request, "agent.html", nav="agents", agent=view, fields=fields, values=values,
                             status_code=422, error={"title": "This input cannot be read", "message": str(exc)})
        text = value if spec.input is None else json.dumps(value, ensure_ascii=False)
        asker = "console-token" if self.guard.needs_login else "console-local"   # what access rules check
        refusal = check_input(spec, text, home=self.runtime.home, asker_user=asker)
        if isinstance(refusal, Refusal):
            return self.page(request, "agent.html", nav="agents", agent=view, fields=fields, values=values,
                             status_code=refusal.status, error={"title": refusal.title, "message": refusal.message,
                                                                "violations": refusal.violations})
        requester = answers.operator(request, prefix="console")   # the login's name, when it gave one
        job = await self.starter.run(spec.name, text, requester=requester, channel="console", checked=refusal)
        return RedirectResponse(f"/jobs/{quote(job.id)}", status_code=303)

    async def jobs(self, request: Request) -> Response:
        """The Jobs page: a GET form of the search filters (edge.runtime.job_search), a page at a time."""
        from oz0.edge.runtime.job_search import SearchError, parse_query

        filters = {name: request.query_params.get(name, "") for name in console_api.SEARCH_PARAMS
                   if name not in ("limit", "cursor")}
        try:
            query = parse_query(**filters, limit=JOBS_SHOWN, cursor=request.query_params.get("cursor"))
        except SearchError as exc:
            return self.page(request, "jobs.html", nav="jobs", jobs=[], filters=filters, status_code=400,
                             error={"title": f"The filter {exc.param} cannot be read", "message": str(exc)})
        found, cursor = self.runtime.search_jobs(query)
        more = None if cursor is None else "/jobs?" + urlencode({**{k: v for k, v in filters.items() if v},
                                                                 "cursor": cursor})
        return self.page(request, "jobs.html", nav="jobs", jobs=[job_view(j) for j in found], filters=filters,
                         filtered=any(filters.values()), more=more)

    async def job(self, request: Request, *, answer_error: dict[str, Any] | None = None,
                  status_code: int = 200) -> Response:
        job = self.runtime.job(request.path_params["job_id"])
        if job is None:
            return self.error(request, "No such job", f"No job has the id {request.path_params['job_id']}.", 404)
        card_html = card_error = None
        payloads: list[dict[str, Any]] = []
        card = None
        if job.finished:
            try:
                card = self.runtime.card(job)
            except Exception as exc:
                log.exception("cannot build the card of job %s", job.id)
                card_error = f"The card of this job cannot be drawn: {type(exc).__name__}: {exc}"
        download = previews = False
        files: list[str] = []
        if card is not None:
            from oz0.renderers.attachments import files_for

            card_html, download = drawn_card(card)
            files = [f.filename for f in files_for(card)]
            previews = request.query_params.get("previews") == "1"
            if previews:
                payloads = channel_payloads(card)
        raw = None if job.output is None else json.dumps(job.output, ensure_ascii=False, indent=2, default=str)
        question = self.runtime.question(job.id) if job.status == "waiting" else None
        cid = self.runtime.conversations.of_job(job.id)
        conversation = follow_ups.conversation_json(self.runtime, cid) if cid is not None else None
        streamed = self.texts.shown(job.id) if job.status == "running" else None
        return self.page(request, "job.html", nav="jobs", job=job_view(job), card_html=card_html,
                         asked_by=self.runtime.people.shown(job.requester),
                         conversation=conversation, streamed_text=streamed,
                         card_error=card_error, payloads=payloads, previews=previews, raw_output=raw, download=download,
                         files=files,
                         question=question, answer_fields=answers.answer_fields(question) if question else (),
                         budgets=budget_rows(self.runtime.budgets.report(job)),
                         trace=trace_lines(read_trace(self.runtime.store, job.id)),
                         question_expires=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(question.expires_at))
                         if question and question.expires_at else None,
                         answer_error=answer_error, status_code=status_code)

    async def answer(self, request: Request) -> Response:
        """The job page's answer form: the answer, or the page again with why it was not taken."""
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        job = self.runtime.job(request.path_params["job_id"])
        question = self.runtime.question(job.id) if job is not None else None
        if job is None or question is None or form.get("step") != question.step:
            return self.error(request, "Nothing to answer", "This job is not waiting for that answer any more "
                              "(it was answered, or it ended).", 409)
        by = answers.operator(request, prefix="console")
        try:
            answers.answer_from_form(self.runtime, job, question, form, by=by)
        except FormError as exc:
            return await self.job(request, status_code=422, answer_error={
                "title": "This answer cannot be read", "message": str(exc)})
        except AnswerRefused as refused:
            return await self.job(request, status_code=answers.REFUSED_STATUS[refused.why][0], answer_error={
                "title": "The answer was not taken", "message": refused.message, "violations": refused.violations})
        return RedirectResponse(f"/jobs/{quote(job.id)}", status_code=303)

    async def attachment(self, request: Request) -> Response:
        """The full result of a job as a file: what a channel uploads beside a cut or undrawn card."""
        from oz0.renderers.attachments import attachment_for

        job = self.runtime.job(request.path_params["job_id"])
        if job is None or not job.finished:
            return self.error(request, "No such result", "This job has no finished result.", 404)
        file = attachment_for(self.runtime.card(job))
        media = file.content_type if file.content_type in SAFE_DOWNLOAD_TYPES else "application/octet-stream"
        name = "".join(c for c in file.filename if c.isalnum() or c in "._-")[:100] or "result.bin"
        return Response(file.data, media_type=media,
                        headers={"content-disposition": f'attachment; filename="{name}"'})

    async def job_file(self, request: Request) -> Response:
        """A file the job's card carries beside it (an MCP tool's image, audio clip or resource), by name,
        as a download (a type that could run in the page is sent as bytes)."""
        from oz0.renderers.attachments import files_for

        job = self.runtime.job(request.path_params["job_id"])
        found = next((f for f in files_for(self.runtime.card(job)) if f.filename == request.path_params["name"]),
                     None) if job is not None and job.finished else None
        if found is None:
            return self.error(request, "No such file", "This job's card carries no file of that name.", 404)
        media = found.content_type if found.content_type in SAFE_DOWNLOAD_TYPES else "application/octet-stream"
        return Response(found.data, media_type=media,
                        headers={"content-disposition": f'attachment; filename="{found.filename}"'})

    async def login_form(self, request: Request) -> Response:
        if not self.guard.needs_login:
            return RedirectResponse("/", status_code=303)
        return self.page(request, "login.html", next=_local_path(request.query_params.get("next", "/")), error=None)

    async def login(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        target = _local_path(form.get("next", "/"))
        if not self.guard.needs_login:
            return RedirectResponse(target, status_code=303)
        if not self.guard.token_matches(form.get("token", "")):
            log.warning("console login refused from %s", request.client.host if request.client else "?")
            return self.page(request, "login.html", next=target, error="That is not the console's token.",
                             status_code=401)
        response = RedirectResponse(target, status_code=303)
        name = " ".join(str(form.get("name", "")).split())[:MAX_LOGIN_NAME]
        response.set_cookie(SESSION_COOKIE, self.guard.new_session(name or None),
                            **cookie_options(max_age=int(self.guard.session_ttl_s)))
        return response

    async def logout(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        self.guard.end_session(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/login" if self.guard.needs_login else "/", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # helpers ---------------------------------------------------------------------------------
    def _spec(self, name: str) -> Any:
        try:
            return self.runtime.agent(name)
        except ValueError:
            return None

    def _unknown_agent(self, request: Request) -> Response:
        names = ", ".join(a.name for a in self.runtime.agents()) or "none installed"
        return self.error(request, "No such agent",
                          f"No installed agent is named {request.path_params['name']!r} (known: {names}).", 404)


def _local_path(target: str) -> str:
    """Only a path on this console (no scheme, no host, no `//`) may follow a login: no open redirect."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
