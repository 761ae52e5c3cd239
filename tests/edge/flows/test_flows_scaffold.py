"""`oz0 plugin new NAME --flow`: a plugin with a complete example flow that lints without a finding,
whose own tests pass, and that runs in the console: started from its run form, it waits on its
person step, is answered on the job page and ends with its report."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import httpx
from console_plugin import ConsoleThread

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def test_plugin_new_flow_writes_a_flow_that_lints_clean_and_passes_its_tests(tmp_path):
    target = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env["OZ0_HOME"] = str(tmp_path / "home")
    done = subprocess.run([*OZ0, "plugin", "new", "demo", str(target), "--flow"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"{target}/flows/demo-release.yaml" in done.stdout
    assert lint_plugin(target).findings == ()
    plugin = load_plugin(target)
    flow = plugin.flow("demo-release")
    assert [(s.id, bool(s.agent), s.is_ask, s.condition) for s in flow.steps] == [
        ("review", True, False, None), ("approve", False, True, None),
        ("ship", True, False, "steps.approve.answer.approved"), ("report", True, False, None)]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target / "tests")],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "6 passed" in tests.stdout


def test_the_example_flow_runs_from_the_console_form_and_is_answered_on_the_job_page(tmp_path):
    from oz0.edge.flows.scaffold import scaffold_plugin

    scaffold_plugin("demo", tmp_path / "demo", flow=True)
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(tmp_path / "demo"), actor="test")
    with ConsoleThread(runtime) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        form = client.get("/flows/demo-release")
        assert form.status_code == 200 and "asks: Ship {input.title}?" in form.text
        token = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
        started = client.post("/flows/demo-release/runs", data={"csrf": token, "f-title": "Faster search",
                                                                "f-lines": "120"})
        assert started.status_code in (200, 303), started.text[:2000]
        page = client.get(started.headers["location"]) if started.status_code == 303 else started
        job_id = re.search(r"/jobs/([0-9a-f]{12})", str(page.url) + page.text).group(1)
        job = client.get(f"/v1/jobs/{job_id}").json()["job"]
        assert job["status"] == "waiting"
        assert job["question"]["message"] == ("Ship Faster search? The review says approve: 120 lines, small "
                                              "enough")
        answered = client.post(f"/jobs/{job_id}/answer", data={"csrf": token, "f-approved": "on",
                                                                "f-comment": "go", "action": "accept", "step": "approve"})
        assert answered.status_code in (200, 303), answered.text[:2000]
        for _ in range(200):
            job = client.get(f"/v1/jobs/{job_id}").json()
            if job["job"]["status"] == "succeeded":
                break
            time.sleep(0.05)
        assert job["output"] == "**Faster search**: shipped (the review said _approve_)."
        assert job["card"]["notes"][-1] == ("steps: review succeeded; approve answered by console-local; "
                                            "ship succeeded; report succeeded")
    runtime.close()
