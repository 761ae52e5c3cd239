"""`oz0 serve`: the console and every configured chat channel, in one asyncio loop, until Ctrl-C.

The channels are an explicit table of module names, imported when `serve` starts: a channel whose
module is missing (not written yet, or left out of a build) is one log line, not a crash. Each module
exposes `configured(env)` and `serve(runtime, env=, stop=)`, and may define `report_interrupted(jobs)`
to tell its threads about jobs a crash left unfinished (found once, here, at start).

This module owns SIGINT and SIGTERM. The first is a graceful stop: /readyz answers 503 at once (a
load balancer drains this replica), asks are turned away (Slack's events with a 5xx, so Slack
resends them; others "ask again"), the jobs running here may finish for OZ0_SHUTDOWN_S (default 25 s,
under Kubernetes' 30) with the channels still up to post their cards, the rest are left to resume
at the next start or on another replica; then every channel winds down and the process exits 0. A
second signal cancels what is still running.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import os
import signal
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.runtime import open_runtime
from oz0.adapters.readiness import channel_states
from oz0.edge import ServeRuntime

__all__ = ["CHANNELS", "DEFAULT_SHUTDOWN_S", "SHUTDOWN_GRACE_S", "register", "run_serve", "serve_channels",
           "shutdown_s"]

log = logging.getLogger("oz0.serve")

CHANNELS: dict[str, str] = {
    "console": "oz0.adapters.console.server",
    "slack": "oz0.adapters.chat.slack",
    "discord": "oz0.adapters.chat.discord",
    "teams": "oz0.adapters.chat.teams",
}
SHUTDOWN_GRACE_S = 10.0
DEFAULT_SHUTDOWN_S = 25.0   # OZ0_SHUTDOWN_S: how long running jobs may finish after a stop signal


def shutdown_s(env: Mapping[str, str]) -> float:
    """OZ0_SHUTDOWN_S, seconds (0 to leave every running job to recovery at once); else a CommandError naming it."""
    raw = (env.get("OZ0_SHUTDOWN_S") or "").strip()
    if not raw:
        return DEFAULT_SHUTDOWN_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise CommandError(f"OZ0_SHUTDOWN_S must be a number of seconds from 0 to 3600, not {raw!r}", code=2)
    return value


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Run the web console (http://127.0.0.1:8470 by default) and each chat channel whose "
                          "tokens are set (Slack, Discord, Teams), in one process, until Ctrl-C or SIGTERM.")
    parser.add_argument("--host", help="console address (default: OZ0_CONSOLE_HOST or 127.0.0.1); any "
                                       "non-loopback address needs OZ0_CONSOLE_TOKEN")
    parser.add_argument("--port", type=int, help="console port (default: OZ0_CONSOLE_PORT or 8470; 0 picks a free one)")
    parser.add_argument("--home", help="state folder (default: OZ0_HOME or ~/.oz0)")
    parser.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """The `oz0 serve` command: 0 after a clean stop, 1 when a channel failed, 2 for bad settings."""
    from oz0.adapters.console.app import ConsoleSettings
    from oz0.adapters.console.security import ConsoleConfigError, Guard

    _configure_logging()
    env = dict(os.environ)
    if args.host:
        env["OZ0_CONSOLE_HOST"] = args.host
    if args.port is not None:
        env["OZ0_CONSOLE_PORT"] = str(args.port)
    try:
        settings = ConsoleSettings.from_env(env)
        Guard(settings.host, settings.token, settings.admin_token)
    except ConsoleConfigError as exc:
        raise CommandError(str(exc), code=2) from None
    shutdown_s(env)
    runtime = open_runtime(args.home or env.get("OZ0_HOME") or None)  # opening the store runs the migrations
    schema = runtime.store.schema
    log.info("database schema at revision %s%s", schema.after,
             f" (upgraded from {schema.before or 'an empty database'})" if schema.changed else "")
    from oz0.edge.runtime.plugin_sync import sync_plugins

    watch = sync_plugins(runtime, env)  # old installs imported, OZ0_PREINSTALL installed, the cache kept filled
    try:
        _launch_engine(runtime, env)
        return asyncio.run(serve_channels(runtime, env=env))
    finally:
        watch.stop()
        runtime.close()


def _launch_engine(runtime: ServeRuntime, env: Mapping[str, str]) -> None:
    """Jobs run as durable workflows (edge.runtime.durable), launched before the event loop so that
    they run on the engine's own loop thread."""
    from oz0.adapters.cli.errors import CommandError
    from oz0.edge.runtime.leases import EngineError

    try:
        runtime.launch_engine(env=env)
    except EngineError as exc:
        raise CommandError(str(exc), code=2) from None


async def serve_channels(runtime: ServeRuntime, *, env: Mapping[str, str],
                         channels: Mapping[str, str] = CHANNELS) -> int:
    """Run every configured channel until a stop signal, then wait for them to wind down."""
    stop = asyncio.Event()       # the channels wind down
    stopping = asyncio.Event()   # a stop signal: drain the jobs first, then stop the channels
    loop = asyncio.get_running_loop()
    signals = _own_signals(loop, stopping)
    try:
        modules = _load(channels, env)
        if not modules:
            log.error("no channel can run")
            return 1
        interrupted = runtime.recover_interrupted()
        if interrupted:
            log.warning("%d job(s) were left unfinished by an earlier stop and are now 'interrupted'",
                        len(interrupted))
            for name, module in modules.items():
                await _report(name, module, interrupted)
        agents = runtime.agents()
        log.info("%d agent(s) installed%s", len(agents),
                 (": " + ", ".join(a.name for a in agents)) if agents else "; add one with `oz0 plugin install`")
        states = channel_states(runtime)
        tasks = {}
        for name, module in modules.items():
            task = asyncio.create_task(module.serve(runtime, env=env, stop=stop), name=f"oz0-{name}")
            tasks[task] = name
            states.running(name)
            task.add_done_callback(lambda t, name=name: states.ended(
                name, failed=not t.cancelled() and t.exception() is not None))
        stopper = asyncio.create_task(stopping.wait())
        done, _ = await asyncio.wait({*tasks, stopper}, return_when=asyncio.FIRST_COMPLETED)
        states.stopping()  # /readyz answers 503 from here on, so a load balancer drains this replica
        failed = False
        for task in done - {stopper}:
            failed |= _ended(tasks[task], task)
        stopper.cancel()
        await _drain(runtime, shutdown_s(env))
        if not stopping.is_set():
            log.info("stopping the other channels")
        stop.set()
        log.info("stopping")
        remaining = {t for t in tasks if not t.done()}
        if remaining:
            _, pending = await asyncio.wait(remaining, timeout=SHUTDOWN_GRACE_S)
            for task in pending:
                log.warning("%s did not stop within %.0f s; cancelling it", tasks[task], SHUTDOWN_GRACE_S)
                task.cancel()
            if pending:
                await asyncio.wait(pending)
            for task in remaining:
                failed |= _ended(tasks[task], task)
        log.info("stopped")
        return 1 if failed else 0
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


async def _drain(runtime: ServeRuntime, timeout_s: float) -> None:
    """Turn asks away and let the running jobs finish (their cards posted) for up to `timeout_s`."""
    drain = getattr(runtime, "drain", None)
    if drain is None:
        return
    log.info("finishing the running jobs (at most %.0f s; OZ0_SHUTDOWN_S); the rest resume at the next start",
             timeout_s)
    await asyncio.to_thread(drain, timeout_s)


def _own_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> list[int]:
    installed = []
    current = asyncio.current_task()

    def on_signal(sig: int) -> None:
        if not stop.is_set():
            log.info("%s received: stopping cleanly (again to force)", signal.Signals(sig).name)
            stop.set()
        elif current is not None:
            log.warning("%s received again: cancelling", signal.Signals(sig).name)
            current.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals on this platform
            log.debug("cannot own %s here", sig)
    return installed


def _load(channels: Mapping[str, str], env: Mapping[str, str]) -> dict[str, ModuleType]:
    modules = {}
    for name, module_name in channels.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            log.warning("%s: channel module %s is not available; skipped", name, module_name)
            continue
        if module.configured(env):
            modules[name] = module
        else:
            log.info("%s: not configured (its tokens are not set); skipped", name)
    return modules


async def _report(name: str, module: ModuleType, jobs: list[Any]) -> None:
    hook = getattr(module, "report_interrupted", None)
    if hook is None:
        return
    try:
        result = hook(jobs)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("%s: could not report the interrupted jobs", name)


def _ended(name: str, task: asyncio.Task[Any]) -> bool:
    """Log how a channel ended; True when it failed."""
    if task.cancelled():
        return False
    exc = task.exception()
    if exc is None:
        return False
    if os.environ.get("OZ0_DEBUG"):
        log.error("%s failed", name, exc_info=exc)
    else:
        log.error("%s failed: %s: %s (set OZ0_DEBUG=1 for the traceback)", name, type(exc).__name__, exc)
    return True


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        from oz0.edge.runtime.json_logs import JsonFormatter, wants_json  # the journal's modules: not at --help

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter() if wants_json() else
                             logging.Formatter("%(asctime)s oz0 %(name)s: %(message)s", "%H:%M:%S"))
        root.addHandler(handler)
        root.setLevel(logging.INFO if not os.environ.get("OZ0_DEBUG") else logging.DEBUG)
