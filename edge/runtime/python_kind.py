"""The `python` agent kind: `entry: module:function` from the plugin folder (or an importable module),
sync in a daemon thread of its own or async on the job's loop."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import JobFailure
from oz0.edge.runtime.context import RunContext

__all__ = ["load_entry", "run_python"]

_entry_lock = threading.Lock()
_entries: dict[tuple[str, str], Callable[..., Any]] = {}


def _plugin_package(plugin_path: Path) -> str:
    """A synthetic package whose __path__ is the plugin folder, so plugin modules import as its
    submodules (relative imports work) and two plugins' `agent.py` never collide."""
    digest = format(abs(hash(str(plugin_path.resolve()))), "x")
    name = f"oz0_plugins.p{digest}"
    if "oz0_plugins" not in sys.modules:
        root = types.ModuleType("oz0_plugins")
        root.__path__ = []
        sys.modules["oz0_plugins"] = root
    if name not in sys.modules:
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(plugin_path)]
        pkg.__package__ = name
        sys.modules[name] = pkg
    return name


def load_entry(spec: AgentSpec, plugin_path: Path) -> Callable[..., Any]:
    """The function `entry: module:function` names: the module from the plugin folder first, else
    an importable module. Raises JobFailure("Misconfigured") naming what is missing."""
    entry = str(spec.config.get("entry", ""))
    key = (str(plugin_path), entry)
    with _entry_lock:
        if key in _entries:
            return _entries[key]
        module_name, _, func_name = entry.partition(":")
        relative = Path(*module_name.split("."))
        local = (plugin_path / relative.with_suffix(".py")).is_file() or (plugin_path / relative).is_dir()
        try:
            if local:
                module = importlib.import_module(f"{_plugin_package(plugin_path)}.{module_name}")
            else:
                module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise JobFailure("Misconfigured", f"entry {entry!r}: module {exc.name!r} not found in the plugin "
                                              f"folder {plugin_path} or on the Python path") from None
        except Exception as exc:
            raise JobFailure("Crashed", f"entry {entry!r}: importing the module raised "
                                        f"{type(exc).__name__}: {exc}") from None
        func = getattr(module, func_name, None)
        if not callable(func):
            raise JobFailure("Misconfigured", f"entry {entry!r}: module {module_name!r} has no function "
                                              f"{func_name!r}")
        entry_fn: Callable[..., Any] = func
        _entries[key] = entry_fn
        return entry_fn


def _wants_context(func: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


async def _in_thread(func: Callable[..., Any], *args: Any) -> Any:
    """Run a sync agent in its own daemon thread: it cannot block the loop, and one that hangs past
    its timeout is abandoned without holding a shared pool or the process's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def target() -> None:
        try:
            result = func(*args)
            ok, value = True, result
        except BaseException as exc:  # handed to the awaiting job, which types it
            ok, value = False, exc
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:
            pass  # the loop is gone: the job already ended (timed out) and nobody waits

    threading.Thread(target=target, name="oz0-agent", daemon=True).start()
    return await future


async def run_python(spec: AgentSpec, value: Any, ctx: RunContext) -> Any:
    """`entry: module:function`, sync (in a thread) or async; it gets the input, and the RunContext
    too when it takes a second argument."""
    func = load_entry(spec, ctx.plugin_path)
    args = (value, ctx) if _wants_context(func) else (value,)
    if inspect.iscoroutinefunction(func):
        result = await func(*args)
    else:
        result = await _in_thread(func, *args)
    if inspect.isawaitable(result):
        result = await result
    return result
