"""The console as a channel of `oz0 serve`: `configured(env)` (always true: the console is the embedded
default) and `serve(runtime, env=, stop=)`, which runs the app (adapters/console/app.py) under uvicorn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import uvicorn

from oz0.adapters.console.app import ConsoleSettings, create_app
from oz0.adapters.console.security import ConsoleConfigError
from oz0.edge import ServeRuntime

__all__ = ["ConsoleServer", "configured", "serve"]

log = logging.getLogger("oz0.console")


def configured(env: Mapping[str, str]) -> bool:
    """The console always runs under `oz0 serve`: it is the embedded default and needs no token on loopback."""
    return True


async def serve(runtime: ServeRuntime, *, env: Mapping[str, str], stop: asyncio.Event) -> None:
    """Run the console until `stop` is set; logs the address it listens on."""
    server = ConsoleServer(runtime, ConsoleSettings.from_env(env))
    for url in await server.start():
        log.info("console listening on %s%s", url, " (token required)" if server.settings.token else "")
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({server.task, stopper}, return_when=asyncio.FIRST_COMPLETED)  # type: ignore[arg-type]
    stopper.cancel()
    await server.stop()
    log.info("console stopped")


class ConsoleServer:
    """The console app under uvicorn on the settings' address: `start` returns the URLs it listens on."""

    def __init__(self, runtime: ServeRuntime, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.app = create_app(runtime, settings=settings)
        config = uvicorn.Config(self.app, host=settings.host, port=settings.port, lifespan="off",
                                log_config=None, log_level="warning", access_log=False, server_header=False)
        self.server = _Server(config)
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> list[str]:
        self.task = asyncio.create_task(self.server.serve(), name="oz0-console")
        while not self.server.started and not self.task.done():
            await asyncio.sleep(0.01)
        if self.task.done():
            self.task.result()
            raise ConsoleConfigError(f"the console could not listen on {self.settings.host}:{self.settings.port}")
        urls = []
        for sock in (s for srv in self.server.servers for s in srv.sockets):
            host, port = sock.getsockname()[:2]
            urls.append(f"http://{f'[{host}]' if ':' in host else host}:{port}")
        return urls

    async def stop(self) -> None:
        self.server.should_exit = True
        if self.task is not None:
            await self.task


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: `oz0 serve` owns SIGINT/SIGTERM and sets the stop event."""

    def capture_signals(self):  # type: ignore[override]
        import contextlib

        return contextlib.nullcontext()

    async def startup(self, sockets: Any = None) -> None:
        try:
            await super().startup(sockets=sockets)
        except SystemExit:  # uvicorn logs the OSError and exits; here it becomes one clear error
            raise ConsoleConfigError(f"the console could not listen on {self.config.host}:{self.config.port} "
                                     "(is the port in use? set OZ0_CONSOLE_PORT)") from None
