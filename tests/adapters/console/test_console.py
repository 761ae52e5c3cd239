"""Console pages over real HTTP on loopback: agents, run forms, CSRF, job history, login, headers."""

from __future__ import annotations

import re

import httpx
import pytest
from console_plugin import ConsoleThread, installed_runtime

from oz0.adapters.console.security import CSP

TOKEN = "console-test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    runtime = installed_runtime(tmp_path_factory.mktemp("console") / "home")
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


@pytest.fixture
def browser(console):
    with httpx.Client(base_url=console.url, timeout=20) as client:
        yield client


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def test_agents_page_lists_name_plugin_version_contracts_and_failure_kinds(browser):
    r = browser.get("/")
    assert r.status_code == 200 and r.headers["content-security-policy"] == CSP
    row = re.search(r"<tr>\s*<td><a href=\"/agents/deploys\">deploys</a>.*?</tr>", r.text, re.S).group(0)
    assert "console-test" in row and "1.2.3" in row
    assert "schemas/deploys.in.json" in row and "schemas/deploys.out.json" in row
    assert ">InvalidInput<" in row and ">Upstream<" in row
    assert "style=" not in r.text and "<script>" not in r.text


def test_the_run_form_follows_the_input_schema_and_starts_from_the_example(browser):
    html = browser.get("/agents/deploys").text
    names = re.findall(r'<label for="f-([a-z_]+)">', html)
    assert names == ["environment", "service", "limit", "include_failed", "note"]
    assert re.search(r'<label for="f-environment">environment <abbr class="required"', html)
    assert not re.search(r'<label for="f-limit">limit <abbr', html)
    assert '<input type="number" step="1" id="f-limit" name="f-limit" value="3">' in html
    assert '<option value="&#34;staging&#34;" selected>staging</option>' in html
    assert re.search(r'<textarea id="f-note"', html)


def test_a_form_run_redirects_to_the_job_with_its_card_and_channel_payloads(browser):
    page = browser.get("/agents/deploys")
    r = browser.post("/agents/deploys/runs", data={"csrf": csrf_of(page.text), "f-service": "web",
                                                   "f-environment": '"production"', "f-limit": "2"})
    assert r.status_code == 303
    job = browser.get(r.headers["location"])
    assert job.status_code == 200
    assert '<span class="status status-succeeded" id="job-status">succeeded</span>' in job.text
    assert '<section class="oz0-card oz0-card--table' in job.text
    assert re.findall(r'<th scope="col">([^<]+)</th>', job.text)[:4] == ["service", "status", "version",
                                                                         "environment"]
    assert "Slack payload" not in job.text and 'id="preview-slack"' not in job.text  # drawn only when asked
    assert f'href="{r.headers["location"]}?previews=1#card"' in job.text
    job = browser.get(r.headers["location"] + "?previews=1")
    assert '<summary>Slack payload</summary>' in job.text and '<summary>Discord payload</summary>' in job.text
    assert "&#34;blocks&#34;" in job.text and "allowed_mentions" in job.text
    assert 'id="preview-slack"' in job.text and 'id="preview-discord"' in job.text
    assert '<summary>Teams payload</summary>' in job.text and 'id="preview-teams"' in job.text
    assert "application/vnd.microsoft.card.adaptive" in job.text


def test_a_form_without_its_csrf_token_is_refused_and_runs_nothing(browser, console):
    browser.get("/agents/echo")
    before = len(console.runtime.jobs(limit=1000))
    r = browser.post("/agents/echo/runs", data={"f-text": "sneaky"})
    assert r.status_code == 403 and "CSRF" in r.text
    r = browser.post("/agents/echo/runs", data={"csrf": "forged.0000", "f-text": "sneaky"})
    assert r.status_code == 403
    assert len(console.runtime.jobs(limit=1000)) == before


def test_invalid_input_comes_back_on_the_form_with_the_path_and_the_values_kept(browser, console):
    page = browser.get("/agents/deploys")
    before = len(console.runtime.jobs(limit=1000))
    r = browser.post("/agents/deploys/runs", data={"csrf": csrf_of(page.text), "f-service": "api",
                                                   "f-environment": '"staging"', "f-limit": "99"})
    assert r.status_code == 422
    assert "<code>$.limit</code>" in r.text and "maximum" in r.text
    assert 'name="f-limit" value="99"' in r.text
    r = browser.post("/agents/deploys/runs", data={"csrf": csrf_of(page.text), "f-service": "api",
                                                   "f-environment": '"staging"', "f-limit": "lots"})
    assert r.status_code == 422 and "limit: &#39;lots&#39; is not a whole number" in r.text
    assert len(console.runtime.jobs(limit=1000)) == before


def test_job_history_shows_input_status_and_failure(browser):
    page = browser.get("/agents/grumpy")
    browser.post("/agents/grumpy/runs", data={"csrf": csrf_of(page.text), "f-text": "<b>why</b>"})
    html = browser.get("/jobs").text
    row = re.search(r'<tr class="status-failed">.*?</tr>', html, re.S).group(0)
    assert "grumpy" in row and "&lt;b&gt;why&lt;/b&gt;" in row
    assert '<span class="kind">Upstream</span>' in row and "&lt;b&gt;twice&lt;/b&gt;" in row


def test_unknown_pages_say_so(browser):
    r = browser.get("/agents/nobody")
    assert r.status_code == 404 and "No installed agent is named &#39;nobody&#39;" in r.text
    assert browser.get("/jobs/nope").status_code == 404


def test_static_files_are_served_under_the_same_csp(browser):
    r = browser.get("/static/console.css")
    assert r.status_code == 200 and ".oz0-card" in r.text
    assert r.headers["content-security-policy"] == CSP and r.headers["x-content-type-options"] == "nosniff"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    runtime = installed_runtime(tmp_path_factory.mktemp("console-guarded") / "home")
    with ConsoleThread(runtime, host="0.0.0.0", token=TOKEN) as server:
        yield server.url.replace("0.0.0.0", "127.0.0.1")
    runtime.close()


def test_off_loopback_pages_ask_for_the_token_in_a_login_form(guarded):
    with httpx.Client(base_url=guarded, timeout=20) as client:
        r = client.get("/jobs")
        assert r.status_code == 303 and r.headers["location"] == "/login?next=/jobs"
        login = client.get("/login?next=/jobs")
        assert '<input type="password" id="token"' in login.text
        wrong = client.post("/login", data={"csrf": csrf_of(login.text), "token": "nope", "next": "/jobs"})
        assert wrong.status_code == 401 and "not the console" in wrong.text
        ok = client.post("/login", data={"csrf": csrf_of(login.text), "token": TOKEN, "next": "/jobs"})
        assert ok.status_code == 303 and ok.headers["location"] == "/jobs"
        assert TOKEN not in ok.headers["set-cookie"] and "HttpOnly" in ok.headers["set-cookie"]
        assert client.get("/jobs").status_code == 200
        out = client.post("/logout", data={"csrf": csrf_of(client.get("/").text)})
        assert out.status_code == 303 and client.get("/jobs").status_code == 303


def test_login_never_redirects_off_the_console(guarded):
    with httpx.Client(base_url=guarded, timeout=20) as client:
        login = client.get("/login")
        for target in ("https://evil.example/", "//evil.example", "/\\evil.example"):
            r = client.post("/login", data={"csrf": csrf_of(login.text), "token": TOKEN, "next": target})
            assert r.headers["location"] == "/"


def test_a_login_that_gives_its_name_signs_its_jobs_with_it(guarded):
    with httpx.Client(base_url=guarded, timeout=20) as client:
        login = client.get("/login?next=/agents/deploys")
        assert '<input type="text" id="name" name="name"' in login.text
        client.post("/login", data={"csrf": csrf_of(login.text), "token": TOKEN, "next": "/agents/deploys",
                                    "name": "  Ana   Lima <b>"})
        page = client.get("/agents/deploys")
        r = client.post("/agents/deploys/runs", data={"csrf": csrf_of(page.text), "f-service": "web",
                                                      "f-environment": '"staging"', "f-limit": "1"})
        assert r.status_code == 303
        job = client.get(r.headers["location"]).text
        assert 'by <span title="console:Ana Lima &lt;b&gt;">Ana Lima &lt;b&gt;</span> in console' in job
        assert "<b>" not in job.split("<main")[-1].split("Asked")[1][:200]
        data = client.get("/v1/jobs/" + r.headers["location"].rsplit("/", 1)[1],
                          headers={"authorization": f"Bearer {TOKEN}"}).json()
        assert data["job"]["requester"] == "console:Ana Lima <b>"     # the journal's id, for --json and the API
