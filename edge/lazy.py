"""A package face whose names load on first use (PEP 562), so importing the package stays cheap: the
`oz0` command line parses its arguments before anything loads a validator, an SDK or the engine."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(package: str, namespace: dict[str, Any], homes: Mapping[str, str],
              exported: Iterable[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: a name of `homes` is imported from its module when
    first read and kept in `namespace` (the package's globals), so the next read is a plain lookup."""
    names = frozenset(exported)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
