"""The Teams preview's rules: an Adaptive Card (rich text blocks of text runs, fact sets, tables, inputs,
`Action.Execute` buttons) as HTML, every text escaped, links as inert text (see adapters/console/preview.py).
TextRuns are shown as written, as Teams shows them: no markdown."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from oz0.adapters.console.preview import draw, esc

__all__ = ["ELEMENT_RULES", "message"]

_COLOURS = {"Good": "good", "Attention": "attention", "Warning": "warning", "Accent": "accent"}


def _run(run: Any) -> str:
    if isinstance(run, str):
        return esc(run)
    classes = ["pv-run"]
    if run.get("weight") == "Bolder":
        classes.append("pv-run--bold")
    if run.get("italic"):
        classes.append("pv-run--italic")
    if run.get("strikethrough"):
        classes.append("pv-run--strike")
    if run.get("fontType") == "Monospace":
        classes.append("pv-run--mono")
    if run.get("isSubtle"):
        classes.append("pv-subtext")
    if run.get("color") in _COLOURS:
        classes.append(f"pv-run--{_COLOURS[run['color']]}")
    if run.get("selectAction"):
        classes.append("pv-link")
    return f'<span class="{" ".join(classes)}">{esc(run.get("text", ""))}</span>'


def _rich(el: Mapping[str, Any]) -> str:
    return f'<div class="pv-rt-section">{"".join(_run(r) for r in el.get("inlines") or ())}</div>'


def _facts(el: Mapping[str, Any]) -> str:
    rows = "".join(f"<dt>{esc(f.get('title'))}</dt><dd>{esc(f.get('value'))}</dd>" for f in el.get("facts") or ())
    return f'<dl class="pv-fields">{rows}</dl>'


def _cell(cell: Mapping[str, Any], tag: str) -> str:
    return f"<{tag}>{draw(ELEMENT_RULES, cell.get('items') or (), kind='element')}</{tag}>"


def _table(el: Mapping[str, Any]) -> str:
    rows = []
    for i, row in enumerate(el.get("rows") or ()):
        tag = "th" if i == 0 and el.get("firstRowAsHeader") else "td"
        rows.append("<tr>" + "".join(_cell(c, tag) for c in row.get("cells") or ()) + "</tr>")
    return f'<div class="pv-table-wrap"><table class="pv-table">{"".join(rows)}</table></div>'


def _input(el: Mapping[str, Any]) -> str:
    error = f'<div class="pv-cuts">{esc(el["errorMessage"])}</div>' if el.get("errorMessage") else ""
    return (f'<div class="pv-section"><span class="pv-mark">{esc(el.get("label") or el.get("id"))}</span> '
            f'<span class="muted">({esc(el.get("type"))})</span>{error}</div>')


ELEMENT_RULES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "RichTextBlock": _rich,
    "FactSet": _facts,
    "Table": _table,
    "Input.Text": _input,
    "Input.Number": _input,
    "Input.Toggle": _input,
    "Input.ChoiceSet": _input,
}


def _action(action: Mapping[str, Any]) -> str:
    style = {"positive": " pv-button--primary", "destructive": " pv-button--danger"}.get(action.get("style"), "")
    disabled = " pv-button--disabled" if action.get("isEnabled") is False else ""
    return f'<span class="pv-button{style}{disabled}">{esc(action.get("title"))}</span>'


def message(payload: Mapping[str, Any]) -> str:
    """A message activity's Adaptive Card as HTML."""
    out = []
    for attachment in payload.get("attachments") or ():
        card = attachment.get("content") or {}
        out.append(f'<div class="pv-container">{draw(ELEMENT_RULES, card.get("body") or (), kind="element")}')
        if card.get("actions"):
            out.append(f'<div class="pv-actions">{"".join(_action(a) for a in card["actions"])}</div>')
        out.append("</div>")
    return "".join(out)
