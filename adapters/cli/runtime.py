"""The runtime opener every command that uses OZ0_HOME shares (`plugin install|list`, `run`, `jobs`,
`audit`, `serve`). It imports no command, so any command module may import it at its top."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oz0.adapters.cli.errors import CommandError

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["open_runtime"]


def open_runtime(home: str | Path | None = None) -> Runtime:
    """The Runtime under `home` (default OZ0_HOME or ~/.oz0), or a CommandError saying why it cannot open.

    The runtime (SQLAlchemy, the agent kinds, MCP) is imported here, when a command opens it, not
    when the command line starts."""
    from oz0.edge.flows.engine import FLOW_ENGINE
    from oz0.edge.runtime.runner import Runtime, default_home

    try:
        return Runtime(home, flow_engine=FLOW_ENGINE)
    except OSError as exc:
        where = Path(home).expanduser() if home is not None else default_home()
        raise CommandError(f"cannot use OZ0_HOME {where}: {exc.strerror or exc}", code=1) from None
    except Exception as exc:  # SQLAlchemy's errors for a bad URL or an unreachable database
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
        raise CommandError(f"cannot open the oz0 database: {type(exc).__name__}: {first}", code=1) from None
