"""The console in a real headless Chromium: fill a run form, read the card, stay inert under hostile data.

Uses Debian's chromium (installed by `make test`) through playwright's driver; playwright's own browser
download is never used. Screenshots of every card form land in the test's temporary folder.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from console_plugin import EXAMPLE_CARDS, HOSTILE, ROWS_OUT, ConsoleThread, installed_runtime
from paths import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="no chromium: `make test` installs Debian's chromium with apt-get")


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    runtime = installed_runtime(tmp_path_factory.mktemp("browser") / "home")
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, console):
    """A fresh page that records every dialog, every request and every CSP report it sees."""
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.dialogs, page.requests, page.problems = [], [], []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.set_default_timeout(15_000)
    yield page
    context.close()


def run_from_form(page, console, agent: str, fill) -> None:
    page.goto(f"{console.url}/agents/{agent}")
    fill(page)
    with page.expect_navigation():
        page.click("button[type=submit]:has-text('Run')")
    page.wait_for_selector("#job-status")


def test_fill_a_run_form_and_see_a_table_card_with_the_right_columns(page, console, tmp_path):
    page.goto(console.url)
    page.click("a[href='/agents/deploys']")
    assert page.locator("label[for=f-environment] abbr.required").count() == 1
    page.select_option("#f-environment", label="production")
    page.fill("#f-service", "checkout")
    page.fill("#f-limit", "5")
    page.select_option("#f-include_failed", label="true")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.inner_text("#job-status") == "succeeded"
    headers = page.locator("#card table.oz0-table thead th").all_inner_texts()
    assert headers == ["service", "status", "version", "environment"]
    rows = page.locator("#card table.oz0-table tbody tr")
    assert rows.count() == 5
    assert rows.nth(0).locator("td").all_inner_texts() == ["checkout", "ok", "1.0.0", "production"]
    with page.expect_navigation():
        page.click("a.previews-link")
    page.click("#payload-slack summary")
    slack = json.loads(page.inner_text("#payload-slack pre"))
    assert slack["blocks"][0]["text"]["text"] == "deploys"
    page.click("#payload-discord summary")
    assert json.loads(page.inner_text("#payload-discord pre"))["allowed_mentions"] == {"parse": []}
    page.screenshot(path=str(tmp_path / "table-run.png"), full_page=True)
    assert not page.dialogs and not page.problems


def test_a_hostile_result_renders_inert(page, console, tmp_path):
    run_from_form(page, console, "hostile", lambda p: p.fill("#f-text", "go"))
    assert page.inner_text("#job-status") == "succeeded"
    cells = page.locator("#card table.oz0-table tbody tr td:first-child").all_inner_texts()
    for hostile in HOSTILE[:14]:  # drawn as text, character for character (after whitespace folding)
        assert " ".join(hostile.split()) in cells
    for tag in ("script", "img", "iframe", "svg", "form", "style", "meta", "object", "embed"):
        assert page.locator(f"#card {tag}").count() == 0, tag
    assert page.locator("#card [onerror], #card [onload], #card [style]").count() == 0
    with page.expect_navigation():
        page.click("a.previews-link")
    for summary in ("#payload-slack summary", "#payload-discord summary", "#raw-output summary"):
        page.click(summary)
    page.wait_for_timeout(300)
    page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
    assert page.dialogs == []
    foreign = [u for u in page.requests if not u.startswith(console.url)]
    assert foreign == []


def test_hostile_markdown_input_stays_text(page, console):
    attack = "<img src=x onerror=alert(1)> [go](javascript:alert(2)) ![p](http://127.0.0.1:9/p.png) <script>alert(3)</script>"
    run_from_form(page, console, "echo", lambda p: p.fill("#f-text", attack))
    card = page.locator("#card")
    assert "alert(1)" in card.inner_text() and "<script>alert(3)</script>" in card.inner_text()
    assert card.locator("a[href^='javascript']").count() == 0 and card.locator("img, script").count() == 0
    page.goto(f"{console.url}/jobs")
    assert page.locator("td code.clip").first.inner_text().startswith("<img src=x")
    page.wait_for_timeout(200)
    assert page.dialogs == []
    assert [u for u in page.requests if not u.startswith(console.url)] == []


def test_a_screenshot_of_each_card_form(page, console, tmp_path):
    shots = {}
    run_from_form(page, console, "deploys", lambda p: (p.select_option("#f-environment", label="staging"),
                                                       p.fill("#f-service", "api")))
    shots["table"] = page.locator("#card .oz0-card")
    shots["table"].screenshot(path=str(tmp_path / "card-table.png"))
    for name, form in EXAMPLE_CARDS.items():
        run_from_form(page, console, f"ex-{name}", lambda p: p.fill("#f-text", "show"))
        card = page.locator("#card .oz0-card")
        assert f"oz0-card--{form}" in card.get_attribute("class"), name
        card.screenshot(path=str(tmp_path / f"card-{form}-{name}.png"))
    run_from_form(page, console, "grumpy", lambda p: p.fill("#f-text", "x"))
    assert page.locator("#card .oz0-card--failure").count() == 1
    page.locator("#card .oz0-card").screenshot(path=str(tmp_path / "card-failure.png"))
    saved = sorted(p.name for p in tmp_path.glob("card-*.png"))
    assert saved == sorted(["card-table.png", "card-failure.png",
                            *(f"card-{f}-{n}.png" for n, f in EXAMPLE_CARDS.items())])
    assert all((tmp_path / n).stat().st_size > 1000 for n in saved)
    assert page.dialogs == []


@pytest.fixture
def leak_server():
    """A real loopback HTTP server that counts every request: the proof that nothing left the page."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("content-type", "image/png")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


def test_no_inline_script_or_style_runs_even_if_markup_got_through(page, console, leak_server):
    """The CSP is the second wall: inject markup into the live page and watch it do nothing."""
    leak, hits = leak_server
    page.goto(console.url)
    page.evaluate("""(leak) => {
        const div = document.createElement('div');
        div.innerHTML = `<img src="${leak}/img.png" onerror="alert(1)"><a id="x" style="color:red">x</a>`
                      + `<link rel="stylesheet" href="${leak}/x.css">`;
        document.body.appendChild(div);
        const s = document.createElement('script'); s.textContent = 'alert(2)'; document.body.appendChild(s);
        const r = document.createElement('script'); r.src = leak + '/x.js'; document.body.appendChild(r);
        try { fetch(leak + '/fetch'); } catch (e) {}
    }""", leak)
    page.wait_for_timeout(500)
    assert page.dialogs == []
    assert hits == []
    assert page.evaluate("getComputedStyle(document.getElementById('x')).color") != "rgb(255, 0, 0)"


def test_diff_lines_are_single_spaced(page, console):
    """Each diff line sits right under the one before: no empty line between them (a block span and
    the newline after it used to make two lines of each), and the lines still copy as lines."""
    run_from_form(page, console, "ex-config-change", lambda p: p.fill("#f-text", "show"))
    spans = page.locator("#card pre.oz0-diff code > span")
    assert spans.count() > 5
    boxes = [spans.nth(i).bounding_box() for i in range(spans.count())]
    for above, below in zip(boxes, boxes[1:]):
        assert abs(below["y"] - (above["y"] + above["height"])) < 1.5, (above, below)
    text = page.inner_text("#card pre.oz0-diff")
    assert "\n\n" not in text
    assert text.splitlines()[:3] == ["--- old", "+++ new", "@@ -1,8 +1,8 @@"]


WORD = re.compile(r"[^\W_]+")
FENCE = re.compile(r"^\s*```.*$", re.M)
LIST_MARK = re.compile(r"^\s*\d+[.)]\s", re.M)


def slack_words(payload: dict) -> list[str]:
    """Every word of the texts in the Slack blocks (not the notification fallback `text`)."""
    words: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    words.extend(WORD.findall(value))
                elif key != "column_settings":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(payload["blocks"])
    return words


def discord_words(payload: dict) -> list[str]:
    """Every word of the Discord components' texts: markdown content (a fence's info line and an
    ordered list's numbers are markup), button labels and file names."""
    words: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == 10:
                words.extend(WORD.findall(LIST_MARK.sub(" ", FENCE.sub(" ", node["content"]))))
            if node.get("type") == 2:
                words.extend(WORD.findall(node.get("label", "")))
            if node.get("type") == 13:
                words.extend(WORD.findall(node["file"]["url"].removeprefix("attachment://")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(payload["components"])
    return words


MANY_PLUGIN = {
    "plugin.yaml": "name: previews\nversion: 1.0.0\n",
    "agent.py": "def many(text):\n    return [{'name': f'n{i}', 'value': 'v' * 20} for i in range(300)]\n",
    "agents/many.yaml": "kind: python\nentry: agent:many\ninput: text\noutput_schema: rows.json\n",
    "rows.json": json.dumps(ROWS_OUT),
}


def test_channel_previews_show_the_payloads_text_with_cuts_and_uploads_marked(page, console, tmp_path):
    from collections import Counter

    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.renderers import render

    folder = tmp_path / "previews"
    for name, text in MANY_PLUGIN.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    install_plugin(console.runtime, load_plugin(folder), actor="test")
    runs = [("deploys", lambda p: (p.select_option("#f-environment", label="production"), p.fill("#f-service", "api"))),
            *((f"ex-{n}", lambda p: p.fill("#f-text", "show")) for n in EXAMPLE_CARDS),
            ("grumpy", lambda p: p.fill("#f-text", "x")), ("hostile", lambda p: p.fill("#f-text", "go")),
            ("many", lambda p: p.fill("#f-text", "go"))]
    for agent, fill in runs:
        run_from_form(page, console, agent, fill)
        card = console.runtime.card(console.runtime.job(page.url.rsplit("/", 1)[1]))
        page.goto(page.url + "?previews=1")
        for key, words in (("slack", slack_words), ("discord", discord_words)):
            payload = json.loads(page.text_content(f"#payload-{key} pre"))
            preview = page.locator(f"#preview-{key} .pv-message")
            seen = WORD.findall(preview.inner_text())
            assert Counter(seen) == Counter(words(payload)), (agent, key)
            assert len(seen) > 1, (agent, key)
            rendered = render(card, key)
            assert rendered.payload == payload
            cuts = page.locator(f"#preview-{key} .pv-cuts li").all_inner_texts()
            assert cuts == list(rendered.cuts), (agent, key)
            uploads = page.locator(f"#preview-{key} .pv-uploads .pv-file-name").all_inner_texts()
            assert uploads == [u.filename for u in rendered.uploads], (agent, key)
            box = page.locator(f"#preview-{key}")
            assert box.locator("script, img, a, iframe, style, [style], [onerror], [href]").count() == 0
        if agent == "many":
            assert page.locator("#preview-slack .pv-cuts li").first.inner_text().startswith("… 201 more rows")
            assert page.locator("#preview-discord .pv-container .pv-file-name").all_inner_texts() == ["result.json"]
        if agent == "grumpy":
            assert "pv-accent--red" in page.locator("#preview-discord .pv-container").get_attribute("class")
        if agent == "ex-config-change":
            assert page.locator("#preview-slack pre.pv-pre").count() == 1
            assert page.locator("#preview-discord pre code").count() == 1
            page.locator(".drawn").screenshot(path=str(tmp_path / "previews-diff.png"))
        if agent == "deploys":
            headers = page.locator("#preview-slack table.pv-table thead th").all_inner_texts()
            assert headers == ["service", "status", "version", "environment"]
            assert page.locator("#preview-slack .pv-slack-header").inner_text() == "deploys"
    assert page.dialogs == [] and not page.problems
    assert [u for u in page.requests if not u.startswith(console.url)] == []


# Every word of a cell on one line: a Range over each word (a run of letters and digits, joined by
# hyphens: a date, an id, a version) of the cell's text lies on one line (a word split across two lines
# spans two). Returns the words that are split; a line may still break between words, at a space.
SPLIT_WORDS = """(root) => {
  const split = [];
  for (const cell of root.querySelectorAll('td, th')) {
    const text = [];
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.data.length; i++) text.push([node, i]);
    }
    const data = text.map(([node, i]) => node.data[i]).join('');
    for (const m of data.matchAll(/[\\p{L}\\p{N}_]+(?:-[\\p{L}\\p{N}_]+)*/gu)) {
      if (m[0].length > 64) continue;  // a longer run may wrap where it must
      const [first, from] = text[m.index];
      const [last, to] = text[m.index + m[0].length - 1];
      const range = document.createRange();
      range.setStart(first, from);
      range.setEnd(last, to + 1);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) split.push(m[0]);
    }
  }
  return split;
}"""

# Each line of a code block drawn on one line (none wrapped): one client rect top per line.
WRAPPED_LINES = """(pre) => {
  const wrapped = [];
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    let start = 0;
    for (const line of node.data.split('\\n')) {
      if (line.trim()) {
        const range = document.createRange();
        range.setStart(node, start);
        range.setEnd(node, start + line.length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) wrapped.push(line);
      }
      start += line.length + 1;
    }
  }
  return wrapped;
}"""


@pytest.fixture(scope="module")
def example_console(tmp_path_factory):
    """A console with the example plugin (`oz0 plugin install --example`) installed."""
    from oz0.edge.flows.engine import FLOW_ENGINE
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.edge.runtime.runner import Runtime

    runtime = Runtime(tmp_path_factory.mktemp("example") / "home", flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(ROOT / "edge" / "example_plugin"),
                   actor="test")
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


@pytest.mark.parametrize("width", [1300, 800])
def test_tables_keep_words_whole_and_discord_code_blocks_scroll(chromium, example_console, tmp_path, width):
    """The example deploys table in the card and the Slack preview wraps between words only (a wide
    table scrolls sideways), and the Discord preview's code block keeps each line whole, scrolling
    sideways as Discord does."""
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        run_from_form(page, example_console, "deploys", lambda p: p.fill("#f-text", "all"))
        page.goto(page.url + "?previews=1")
        page.screenshot(path=str(tmp_path / f"job-{width}.png"), full_page=True)
        for where in ("#card", "#preview-slack"):
            table = page.locator(f"{where} table").first
            assert table.count() == 1, where
            assert table.evaluate(SPLIT_WORDS) == [], (where, width)
        blocks = page.locator("#preview-discord pre")
        assert blocks.count() >= 1
        for i in range(blocks.count()):
            pre = blocks.nth(i)
            assert pre.evaluate(WRAPPED_LINES) == [], width
            style = pre.evaluate("p => [getComputedStyle(p).whiteSpace, getComputedStyle(p).overflowX]")
            assert style[0] == "pre" and style[1] in ("auto", "scroll"), style
    finally:
        context.close()
