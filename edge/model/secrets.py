"""How agent files name credentials: `${NAME}`, an environment variable read when the agent is
reached (an http agent's URL and headers, a model's key, an MCP server's env, headers and URL).

The values such references take are what each agent's Redactor (edge.runtime.redact) hides.
"""

from __future__ import annotations

import os
import re

__all__ = ["ENV_REF", "env_secrets"]

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def env_secrets(*texts: str) -> list[str]:
    """The values of the `${NAME}` references in these texts that are set: credentials, as a rule."""
    return [os.environ[m.group(1)] for t in texts for m in ENV_REF.finditer(t) if m.group(1) in os.environ]
