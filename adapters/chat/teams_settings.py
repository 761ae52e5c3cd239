"""The Teams channel's settings, from the environment (names as in docs/how-to/teams.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GRAPH_SCOPE", "GRAPH_URL", "OPENID_METADATA_URL", "TeamsConfigError", "TeamsSettings", "configured", "token_url_for"]

OPENID_METADATA_URL = "https://login.botframework.com/v1/.well-known/openidconfiguration"
BOT_SCOPE = "https://api.botframework.com/.default"
GRAPH_URL = "https://graph.microsoft.com"
GRAPH_SCOPE = "https://graph.microsoft.com/.default"
DEFAULT_PORT = 3978
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class TeamsConfigError(ValueError):
    """The Teams settings in the environment cannot work: names the variable and what it needs."""


def token_url_for(tenant_id: str) -> str:
    """Microsoft Entra's token endpoint of a single-tenant bot's tenant."""
    return f"https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token"


@dataclass(frozen=True)
class TeamsSettings:
    """Who the bot is (its Entra app registration), how it proves it, and where it listens."""

    app_id: str
    tenant_id: str
    password: str | None = field(default=None, repr=False)
    certificate: Path | None = None          # a PEM file holding the private key and its certificate
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    openid_metadata_url: str = OPENID_METADATA_URL
    token_url: str = ""
    public_url: str | None = None
    graph_url: str = GRAPH_URL                # Microsoft Graph, asked for Entra group membership

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TeamsSettings:
        app_id = env.get("TEAMS_APP_ID", "").strip()
        tenant = env.get("TEAMS_TENANT_ID", "").strip()
        password = env.get("TEAMS_APP_PASSWORD", "").strip() or None
        cert = env.get("TEAMS_APP_CERTIFICATE", "").strip() or None
        if not app_id:
            raise TeamsConfigError("TEAMS_APP_ID is not set: the Teams channel needs the bot's Application "
                                   "(client) ID (Azure portal > App registrations > your app > Overview)")
        if not _GUID.fullmatch(app_id):
            raise TeamsConfigError("TEAMS_APP_ID must be the Application (client) ID, a GUID such as "
                                   "00000000-0000-0000-0000-000000000000")
        if not tenant:
            raise TeamsConfigError("TEAMS_TENANT_ID is not set: the Teams channel needs the Directory (tenant) ID "
                                   "of the app registration")
        if not password and not cert:
            raise TeamsConfigError("set TEAMS_APP_PASSWORD (a client secret) or TEAMS_APP_CERTIFICATE (a PEM file "
                                   "with the private key and certificate): the bot proves who it is with one")
        certificate = Path(cert) if cert else None
        if certificate is not None and not certificate.is_file():
            raise TeamsConfigError(f"TEAMS_APP_CERTIFICATE names {certificate}, which is not a file")
        port_text = env.get("OZ0_TEAMS_PORT", "").strip() or str(DEFAULT_PORT)
        if not port_text.isdigit() or int(port_text) > 65535:
            raise TeamsConfigError(f"OZ0_TEAMS_PORT must be a port number (0-65535), not {port_text!r}")
        urls = {}
        for name, default in (("TEAMS_OPENID_METADATA_URL", OPENID_METADATA_URL),
                              ("TEAMS_TOKEN_URL", token_url_for(tenant)), ("TEAMS_GRAPH_URL", GRAPH_URL)):
            url = env.get(name, "").strip() or default
            if not url.startswith(("https://", "http://127.0.0.1", "http://localhost")):
                raise TeamsConfigError(f"{name} must be an https URL (http only on loopback), not {url!r}")
            urls[name] = url
        return cls(app_id=app_id, tenant_id=tenant, password=password, certificate=certificate,
                   host=env.get("OZ0_TEAMS_HOST", "").strip() or "0.0.0.0", port=int(port_text),
                   openid_metadata_url=urls["TEAMS_OPENID_METADATA_URL"], token_url=urls["TEAMS_TOKEN_URL"],
                   graph_url=urls["TEAMS_GRAPH_URL"].rstrip("/"),
                   public_url=env.get("OZ0_PUBLIC_URL", "").strip().rstrip("/") or None)


def configured(env: Mapping[str, str]) -> bool:
    """Whether `oz0 serve` should start the Teams channel: the app id and a credential are set."""
    return bool(env.get("TEAMS_APP_ID", "").strip()) and bool(
        env.get("TEAMS_APP_PASSWORD", "").strip() or env.get("TEAMS_APP_CERTIFICATE", "").strip())
