"""`oz0 render` and `oz0 demo`: a result and its schema in, the chosen card out."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from typing import Any

from oz0.edge import choose_card, load_contract, load_json_file
from oz0.edge.cards.model import Card
from oz0.renderers import RENDERERS

__all__ = ["register_demo", "register_render", "render_payload"]

_TARGETS = ("text", "card")


def render_payload(card: Card, target: str) -> str:
    """The card drawn for `target` as the text printed: JSON for card and platform payloads (the body
    the channel is sent, as it is sent; the files uploaded beside it are not printed)."""
    if target == "card":
        return json.dumps(card.to_dict(), indent=2, ensure_ascii=False, default=_default)
    payload = RENDERERS[target](card).payload
    return payload if isinstance(payload, str) else json.dumps(payload, indent=2, ensure_ascii=False)


def _default(value: Any) -> Any:
    return str(value)


def register_render(sub: argparse._SubParsersAction) -> None:
    targets = ["card", *RENDERERS]
    p = sub.add_parser(
        "render",
        help="draw a result as a card",
        description=("Read a result and the schema its agent or tool declared, choose a card "
                     "(table, key-values, diff or text) and print it. A result that breaks its schema "
                     "or is over 64 KiB of JSON is not drawn; the card says why (exit code 0)."),
        epilog="Exit codes: 0 drawn or explained, 2 unreadable input, invalid JSON or an unusable schema.",
    )
    p.add_argument("result", metavar="RESULT", help="the result: a JSON file, or - for stdin")
    p.add_argument("--schema", metavar="SCHEMA",
                   help="the JSON Schema the agent or tool declared for its output (for an MCP "
                        "CallToolResult: the tool's outputSchema); its $refs must stay inside the file")
    p.add_argument("--to", choices=targets, default="text", metavar="|".join(targets),
                   help="text: the card for a terminal (default); card: the neutral card as JSON; "
                        "slack, discord, html: the payload that channel is sent")
    p.add_argument("--mcp", action="store_true",
                   help="read the result as an MCP CallToolResult (detected automatically when it has "
                        "that shape)")
    p.set_defaults(func=_render)


def _render(args: argparse.Namespace) -> int:
    contract = load_contract(args.schema) if args.schema else None
    result = load_json_file(args.result, what="result")
    card = choose_card(result, contract, source="mcp" if args.mcp else "auto")
    sys.stdout.write(render_payload(card, args.to).rstrip("\n") + "\n")
    return 0


def register_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="draw every bundled example result",
                       description="Draw each bundled example result with its schema, one card of each form.")
    p.add_argument("--to", choices=["card", *RENDERERS], default="text", help="what to draw (default: text)")
    p.set_defaults(func=_demo)


def examples() -> list[dict[str, Any]]:
    """The bundled examples, with the paths of their result and schema files."""
    folder = resources.files("oz0.edge") / "examples"
    index = json.loads((folder / "index.json").read_text())
    for entry in index:
        entry["result"] = str(folder / f"{entry['name']}.result.json")
        schema = folder / f"{entry['name']}.schema.json"
        entry["schema"] = str(schema) if schema.is_file() else None
    return index


def _demo(args: argparse.Namespace) -> int:
    for entry in examples():
        contract = load_contract(entry["schema"]) if entry["schema"] else None
        card = choose_card(load_json_file(entry["result"]), contract, title=entry["name"])
        print(f"━━ {entry['name']}: {entry['about']}")
        print(render_payload(card, args.to).rstrip("\n"))
        print()
    return 0
