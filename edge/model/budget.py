"""Budgets and prices as declared: `budget:` on an agent or flow file (and in access.yaml), `price:` and
`max_tokens` on an agent. The one reader of these keys and the one owner of how an amount of money is
written, stored and shown.

Money is kept exactly, as integer micro-units (one millionth of the currency unit): an amount in a file
has at most 6 decimal places, and cost arithmetic is integer arithmetic rounded up, never a float.
The shapes are checked by the manifest schemas (`$defs/budget`, `$defs/price`); this module adds the
rules a schema cannot say (decimal places, which keys a kind takes) and builds the frozen values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from oz0.edge.errors import Oz0Error

__all__ = [
    "BUDGET_DIMENSIONS",
    "MICRO",
    "Budget",
    "BudgetDeclarationError",
    "Price",
    "amount_text",
    "budget_findings",
    "format_amount",
    "format_dimension",
    "parse_amount",
    "parse_budget",
    "parse_price",
]

MICRO = 1_000_000  # micro-units per currency unit: 6 decimal places kept exactly
BUDGET_DIMENSIONS = ("tokens", "cost", "calls")
PERIODS = ("job", "day")
ON_EXHAUSTED = ("fail", "ask")


class BudgetDeclarationError(Oz0Error, ValueError):
    """A budget or price that cannot be used: names the JSON path and what is wrong."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Budget:
    """Limits on what a job (per: job) or a day (per: day, UTC) may spend; None: not limited.
    `cost` is in micro-units. `on_exhausted`: fail the job, or ask its asker to allow more."""

    tokens: int | None = None
    cost: int | None = None
    calls: int | None = None
    per: str = "job"
    on_exhausted: str = "fail"

    def limit(self, dimension: str) -> int | None:
        value: int | None = getattr(self, dimension)
        return value

    def describe(self) -> str:
        """`$1.00, 10,000 tokens, 5 calls`: what the budget allows, for messages."""
        return ", ".join(format_dimension(d, n) for d in BUDGET_DIMENSIONS if (n := self.limit(d)) is not None)

    def as_json(self) -> dict[str, Any]:
        """The budget as declared, for JSON: its limited dimensions (cost a decimal string), per, on_exhausted."""
        return {**{d: amount_text(n) if d == "cost" else n for d in BUDGET_DIMENSIONS
                   if (n := self.limit(d)) is not None}, "per": self.per, "on_exhausted": self.on_exhausted}


@dataclass(frozen=True)
class Price:
    """What an agent's calls cost, in micro-units: per 1,000 prompt and answer tokens (a model) and
    per call (any kind that calls out: model, http, mcp)."""

    input_per_1k: int = 0
    output_per_1k: int = 0
    per_call: int = 0

    def cost(self, *, prompt_tokens: int, completion_tokens: int, calls: int = 1) -> int:
        """The cost of a call in micro-units, rounded up (a reservation never falls short)."""
        return (_ceil_div(prompt_tokens * self.input_per_1k, 1000)
                + _ceil_div(completion_tokens * self.output_per_1k, 1000) + calls * self.per_call)

    def as_json(self) -> dict[str, str]:
        """The price as declared, for JSON: each amount a decimal string."""
        return {k: amount_text(getattr(self, k)) for k in ("input_per_1k", "output_per_1k", "per_call")}

    def describe(self) -> str:
        """`$0.0005 per 1k prompt tokens, $0.0015 per 1k answer tokens`: for people (a free price: `$0.00 a call`)."""
        parts = [f"{format_amount(n)} {what}" for n, what in (
            (self.input_per_1k, "per 1k prompt tokens"), (self.output_per_1k, "per 1k answer tokens"),
            (self.per_call, "a call")) if n]
        return ", ".join(parts) or f"{format_amount(0)} a call"


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def parse_amount(value: Any, path: str) -> int:
    """An amount of money (`1`, `0.25`, `"0.000125"`) as micro-units; more than 6 decimal places, a
    negative amount or anything but a number is refused, naming `path`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BudgetDeclarationError(path, f"an amount is a number such as 1.25, not {type(value).__name__}")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise BudgetDeclarationError(path, f"{value!r} is not an amount; write a number such as 1.25") from None
    if not amount.is_finite() or amount < 0:
        raise BudgetDeclarationError(path, f"{value!r} is not an amount of 0 or more")
    micro = amount * MICRO
    if micro != micro.to_integral_value():
        raise BudgetDeclarationError(path, f"{value!r} has more than 6 decimal places; amounts are kept to "
                                           "a millionth")
    return int(micro)


def format_amount(micro: int) -> str:
    """Micro-units as money for people: `$1.00`, `$0.12`, `$0.000125`."""
    sign = "-" if micro < 0 else ""
    text = f"{Decimal(abs(micro)) / MICRO:.6f}".rstrip("0")
    whole, _, cents = text.partition(".")
    return f"{sign}${whole}.{cents.ljust(2, '0')}"


def amount_text(micro: int) -> str:
    """Micro-units as an exact decimal string for JSON (`"0.5"`, `"0.000125"`, `"0"`), never a float."""
    return str(Decimal(micro) / MICRO)


def format_dimension(dimension: str, value: int) -> str:
    """One amount of a budget dimension for people: `$0.12`, `1,200 tokens`, `1 call`."""
    if dimension == "cost":
        return format_amount(value)
    unit = "token" if dimension == "tokens" else "call"
    return f"{value:,} {unit}{'' if value == 1 else 's'}"


def parse_budget(data: Any, path: str, *, default_per: str = "job") -> Budget | None:
    """A `budget:` mapping (shape already checked by a schema, or not: this refuses what it cannot use)."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise BudgetDeclarationError(path, "a budget is a mapping of tokens, cost, calls, per, on_exhausted")
    unknown = sorted(set(data) - {*BUDGET_DIMENSIONS, "per", "on_exhausted"})
    if unknown:
        raise BudgetDeclarationError(f"{path}.{unknown[0]}", "unknown key; a budget takes tokens, cost, calls, "
                                                              "per and on_exhausted")
    limits: dict[str, int | None] = {}
    for key in ("tokens", "calls"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise BudgetDeclarationError(f"{path}.{key}", f"{key} is a whole number of 1 or more, not {value!r}")
        limits[key] = value
    limits["cost"] = parse_amount(data["cost"], f"{path}.cost") if data.get("cost") is not None else None
    if all(v is None for v in limits.values()):
        raise BudgetDeclarationError(path, "a budget limits at least one of tokens, cost or calls")
    per = data.get("per", default_per)
    if per not in PERIODS:
        raise BudgetDeclarationError(f"{path}.per", f"per is job or day, not {per!r}")
    on_exhausted = data.get("on_exhausted", "fail")
    if on_exhausted not in ON_EXHAUSTED:
        raise BudgetDeclarationError(f"{path}.on_exhausted", f"on_exhausted is fail or ask, not {on_exhausted!r}")
    return Budget(tokens=limits["tokens"], cost=limits["cost"], calls=limits["calls"], per=per,
                  on_exhausted=on_exhausted)


def parse_price(data: Any, path: str) -> Price | None:
    """A `price:` mapping: input_per_1k, output_per_1k, per_call, each an amount."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise BudgetDeclarationError(path, "a price is a mapping of input_per_1k, output_per_1k, per_call")
    keys = ("input_per_1k", "output_per_1k", "per_call")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise BudgetDeclarationError(f"{path}.{unknown[0]}", "unknown key; a price takes " + ", ".join(keys))
    return Price(**{k: parse_amount(data[k], f"{path}.{k}") for k in keys if data.get(k) is not None})


Add = Callable[[str, str, str], None]  # (JSON path, message, fix)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def budget_findings(data: Mapping[str, Any], *, kind: str | None, add: Add) -> None:
    """What lint says about a file's budget, price and max_tokens beyond their schema (which checks
    their shapes): a number with more than 6 decimal places, keys the kind does not take, a budget a
    model agent could not reserve."""
    budget = _mapping(data.get("budget"))
    price = _mapping(data.get("price"))
    amounts = [("$.budget.cost", budget.get("cost"))] + [(f"$.price.{k}", v) for k, v in price.items()]
    for path, value in amounts:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            try:
                parse_amount(value, path)
            except BudgetDeclarationError as exc:
                add(exc.path, exc.message, "write the amount with at most 6 decimal places, such as 0.000125")
    if kind == "flow":
        return
    if "max_tokens" in data and kind != "model":
        add("$.max_tokens", f"only a model agent takes max_tokens (this one is {kind})", "remove max_tokens")
    if kind != "model" and ("input_per_1k" in price or "output_per_1k" in price):
        add("$.price", f"only a model agent has token prices (this one is {kind})",
            "keep `per_call:` alone, or remove the token prices")
    if kind != "model" or not budget:
        return
    if ("tokens" in budget or "cost" in budget) and "max_tokens" not in data:
        add("$.max_tokens", "the agent has a token or cost budget but no max_tokens, so a call's answer has "
                            "no bound to reserve", "add `max_tokens: N` (it is sent to the endpoint)")
    if "cost" in budget and not price:
        add("$.price", "the agent has a cost budget but no price, so its calls cannot be costed",
            "add `price: {input_per_1k: ..., output_per_1k: ...}`")
