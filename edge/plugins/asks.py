"""`asks:` in a python agent's file: the person steps its code takes with `ctx.ask_person`, each with
its answer schema.

A flow declares its person steps in its file; a python agent asks from its code, so without this key
its answer schemas would be declared nowhere: not linted, not in the OpenAPI document callers read
(`x-oz0-person-steps`), not in the contract hash the upgrade check compares. Declared here they are,
and an ask the file does not declare is refused when the code makes it, naming the key to add.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oz0.edge.contracts.schema import ContractError, load_contract
from oz0.edge.errors import Oz0Error
from oz0.edge.model.agent import PersonAsk

__all__ = ["AskDeclarationError", "PersonAsk", "asks_of", "declared_ask"]


class AskDeclarationError(Oz0Error, ValueError):
    """An `asks:` entry that cannot be used: what is wrong, and its path in the agent file."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


def asks_of(root: Path, data: Mapping[str, Any]) -> tuple[PersonAsk, ...]:
    """The file's `asks:` (shape checked by the agent manifest schema), each schema loaded; raises
    AskDeclarationError naming the key when a schema is outside the plugin or unusable."""
    out = []
    for step, ask in (data.get("asks") or {}).items():
        where = f"$.asks.{step}.answer_schema"
        ref = ask["answer_schema"]
        target = (root / ref).resolve()
        if not target.is_relative_to(root.resolve()):
            raise AskDeclarationError(f"{ref!r} is outside the plugin folder", where)
        try:
            contract = load_contract(target, source=str(root / ref))
        except ContractError as exc:
            raise AskDeclarationError(f"answer_schema: {exc}", where) from None
        out.append(PersonAsk(step, contract, ref, str(ask.get("description", ""))))
    return tuple(out)


def declared_ask(agent: str, file: str, asks: tuple[PersonAsk, ...], step: str | None,
                 answer_schema: Mapping[str, Any] | None) -> PersonAsk | str:
    """The declared ask that `ctx.ask_person(message, answer_schema, step=step)` makes, or why it is
    refused (a sentence naming the file key to add). With no step, the one ask whose schema is
    `answer_schema` (or the only one declared); with no schema, the step's declared one."""
    where = f"agents/{Path(file).name}" if file else f"agent {agent!r}'s file"
    given = load_contract(dict(answer_schema)) if answer_schema is not None else None
    if step is None:
        found = [a for a in asks if given is not None and a.answer_schema.digest == given.digest]
        if not found and given is None and len(asks) == 1:
            found = list(asks)
        if found:
            return found[0]
        return (f"agent {agent!r} asked a person (ctx.ask_person) without a step its file declares; "
                f"declare it in {where}: `asks: {{NAME: {{answer_schema: schemas/NAME.json}}}}`, "
                'and pass step="NAME"')
    ask = next((a for a in asks if a.step == step), None)
    if ask is None:
        return (f"agent {agent!r} asked a person (ctx.ask_person, step {step!r}) with an answer schema its file "
                f"does not declare; add to {where}: `asks: {{{step}: {{answer_schema: schemas/{step}.json}}}}`")
    if given is not None and given.digest != ask.answer_schema.digest:
        return (f"agent {agent!r} asked a person (step {step!r}) with an answer schema that is not the one "
                f"{where} declares at asks.{step}.answer_schema ({ask.answer_schema_file}); pass that schema, "
                "or none (the declared one is used)")
    return ask
