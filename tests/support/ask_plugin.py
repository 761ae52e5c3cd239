"""A plugin whose agent asks a person (`ctx.ask_person`), for the chat channels' question tests.

`approve KIND [ANSWERERS]` asks with the answer schema KIND (`bool`: one boolean, `enum`: one enum of
three values, `form`: three fields) and, when given, the comma-separated user ids who may answer;
it answers with what it was told, so a test reads the answer in the final card."""

from __future__ import annotations

from pathlib import Path

from plugin_kit import make_plugin

from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

__all__ = ["FORM", "install_ask_plugin"]

FORM = {"type": "object", "required": ["reason", "count"],
        "properties": {"reason": {"type": "string", "minLength": 3, "description": "Why"},
                       "count": {"type": "integer", "minimum": 1},
                       "urgent": {"type": "boolean"}}}
SCHEMAS = {  # the answer schemas the agent's file declares under `asks:`, the same the code passes
    "bool": {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]},
    "enum": {"type": "object", "properties": {"env": {"type": "string", "enum": ["prod", "staging", "dev"]}},
             "required": ["env"]},
    "form": FORM,
}

IMPL = f"""
    import json

    SCHEMAS = {{
        "bool": {{"type": "object", "properties": {{"approved": {{"type": "boolean"}}}}, "required": ["approved"]}},
        "enum": {{"type": "object", "properties": {{"env": {{"type": "string", "enum": ["prod", "staging", "dev"]}}}},
                 "required": ["env"]}},
        "form": {FORM!r},
    }}

    async def approve(text, ctx):
        kind, _, who = text.partition(" ")
        step = "approve" if kind == "bool" else kind
        answer = await ctx.ask_person(f"Merge <!here> #12 & ship? ({{kind}})", SCHEMAS[kind], step=step,
                                      answerers={{"users": who.split(",")}} if who else None, timeout_s=30)
        return f"{{answer.action}} {{json.dumps(answer.content, sort_keys=True)}} by {{answer.by}}"
    """


def install_ask_plugin(runtime: Runtime, where: Path) -> None:
    asks = {step: {"answer_schema": f"schemas/{kind}.json"} for step, kind in
            (("approve", "bool"), ("enum", "enum"), ("form", "form"))}
    make_plugin(where, name="asktest", files={"impl.py": IMPL, **{f"schemas/{k}.json": s for k, s in SCHEMAS.items()}},
                agents={"approve": {"description": "Asks a person before it answers", "kind": "python",
                                    "entry": "impl:approve", "input": "text", "output": "text",
                                    "limits": {"timeout_s": 60}, "asks": asks}})
    install_plugin(runtime, load_plugin(where), actor="test")
