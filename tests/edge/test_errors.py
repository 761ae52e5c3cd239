"""The edge's one exception tree (edge/errors.py): every public error class of the edge is an Oz0Error,
keeps its built-in base, and carries no HTTP status (adapters choose those)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import oz0.edge
from oz0.edge.errors import Oz0Error

TREE = {  # class -> its parent in the tree (built-in bases kept beside Oz0Error are not drawn)
    "ContractError": "Oz0Error", "JsonDataError": "Oz0Error", "PointerError": "Oz0Error",
    "SchemaDepthError": "Oz0Error", "CompatError": "Oz0Error",
    "JobFailure": "Oz0Error", "McpFailure": "JobFailure", "UnknownAgent": "Oz0Error",
    "BudgetDeclarationError": "Oz0Error", "ReplyRefError": "Oz0Error",
    "InputError": "Oz0Error",
    "PluginError": "Oz0Error", "VersionReused": "PluginError", "ArchiveError": "Oz0Error", "ExpressionError": "Oz0Error",
    "ToolsError": "Oz0Error", "AskDeclarationError": "Oz0Error", "YamlLimitError": "Oz0Error",
    "UpgradeRefused": "Oz0Error",
    "AccessError": "Oz0Error", "AnswerRefused": "Oz0Error", "EngineError": "Oz0Error",
    "RetentionError": "Oz0Error", "SearchError": "Oz0Error", "PluginStateError": "Oz0Error",
    "CancelRefused": "Oz0Error", "ScheduleError": "Oz0Error", "ConversationBusy": "Oz0Error",
    "ScaffoldError": "Oz0Error",
}


def _edge_errors() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(oz0.edge.__path__, "oz0.edge."):
        if ".migrations" in info.name or info.name.endswith(".durable") or "flows.durable" in info.name:
            continue  # migrations run under Alembic; the durable modules import DBOS (their errors are DBOS's)
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name
                    and not name.startswith("_")):
                found[name] = value
    return found


def test_every_public_edge_error_is_in_the_tree():
    errors = _edge_errors()
    assert sorted(errors) == sorted([*TREE, "Oz0Error"])
    for name, cls in errors.items():
        assert issubclass(cls, Oz0Error), name
        if name != "Oz0Error":
            parent = next(b for b in cls.__mro__[1:] if b.__module__.startswith("oz0."))
            assert parent.__name__ == TREE[name], (name, parent)


def test_the_docstring_draws_each_error():
    doc = importlib.import_module("oz0.edge.errors").__doc__ or ""
    for name in TREE:
        assert f"── {name} " in doc, name


@pytest.mark.parametrize(("name", "base"), [("ContractError", ValueError), ("PointerError", LookupError),
                                            ("EngineError", RuntimeError), ("PluginError", ValueError)])
def test_a_re_parented_error_keeps_its_builtin_base(name, base):
    assert issubclass(_edge_errors()[name], base)


def test_no_edge_error_carries_an_http_status():
    for name, cls in _edge_errors().items():
        params = inspect.signature(cls.__init__).parameters
        assert not {"status", "status_code", "http_status"} & set(params), name
    from oz0.edge.runtime.questions import AnswerRefused

    refused = AnswerRefused("not_waiting", "already answered")
    assert refused.why == "not_waiting" and not hasattr(refused, "status")


def test_the_console_chooses_the_status_of_a_refused_answer():
    from oz0.adapters.console.answers import REFUSED_STATUS

    assert REFUSED_STATUS == {"not_answerer": (403, "forbidden"), "not_waiting": (409, "already_answered"),
                              "invalid": (422, "invalid_answer")}
