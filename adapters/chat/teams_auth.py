"""Teams: who may post to the messaging endpoint, and the bot's own token for the connector.

Inbound, every request carries `Authorization: Bearer <JWT>` signed by the Bot Framework. It is
accepted only when (the Bot Framework's documented checks): its signing key is one the OpenID
metadata's `jwks_uri` lists (RS256), its issuer is the metadata's `issuer`, its audience is the
bot's app id, it has not expired (5 minutes' clock skew), and its `serviceUrl` claim is the
activity's `serviceUrl` (so a token for one connector cannot send the bot's replies elsewhere).
The metadata URL is a setting (`TEAMS_OPENID_METADATA_URL`, Microsoft's by default), so a sovereign
cloud or a test can point it elsewhere. The SDK's own validator (`microsoft_agents.hosting.core`
JwtTokenValidator) is not used because it fixes the key URLs to Microsoft's hosts and does not check
the `serviceUrl` claim; PyJWT (its dependency) does the signature and claim checks here.

Outbound, the bot gets an access token for `https://api.botframework.com/.default` with the OAuth 2.0
client-credentials grant at `TEAMS_TOKEN_URL` (the tenant's Entra endpoint by default): with the
client secret (`TEAMS_APP_PASSWORD`), or with a certificate as a signed client assertion (RFC 7523,
`x5t` thumbprint header) as Entra takes it. MSAL is not used because it accepts only https
authorities with Entra's discovery documents; the grant is one form POST. The token is cached until
five minutes before it expires.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import jwt

from oz0.adapters.chat.teams_settings import BOT_SCOPE, TeamsSettings

__all__ = ["InboundAuth", "KeysUnavailable", "TokenSource", "Unauthorized"]

SKEW_S = 300
METADATA_TTL_S = 24 * 3600
TOKEN_MARGIN_S = 300


class Unauthorized(Exception):
    """A request the endpoint refuses with 401, and why (for the log; never the token)."""


class KeysUnavailable(Exception):
    """The OpenID metadata or its keys could not be read: no token can be checked (503, not 401)."""


@dataclass
class _Keys:
    issuer: str
    client: jwt.PyJWKClient
    fetched: float


class InboundAuth:
    """Checks the Bearer token of each request to the messaging endpoint."""

    def __init__(self, settings: TeamsSettings, session: aiohttp.ClientSession) -> None:
        self.settings = settings
        self.session = session
        self._keys: _Keys | None = None
        self._lock = asyncio.Lock()

    async def _metadata(self) -> _Keys:
        async with self._lock:
            if self._keys is None or time.monotonic() - self._keys.fetched > METADATA_TTL_S:
                url = self.settings.openid_metadata_url
                try:
                    async with self.session.get(url) as response:
                        response.raise_for_status()
                        doc = await response.json(content_type=None)
                    issuer, jwks_uri = str(doc["issuer"]), str(doc["jwks_uri"])
                except (aiohttp.ClientError, ValueError, KeyError, TypeError) as exc:
                    raise KeysUnavailable(f"the OpenID metadata at {url} could not be read ({type(exc).__name__})") \
                        from None
                self._keys = _Keys(issuer, jwt.PyJWKClient(jwks_uri, cache_keys=True), time.monotonic())
            return self._keys

    async def check(self, authorization: str | None, activity: Mapping[str, Any]) -> dict[str, Any]:
        """The token's claims; Unauthorized naming what is wrong."""
        if not authorization or not authorization.startswith("Bearer "):
            raise Unauthorized("no Bearer token")
        token = authorization[len("Bearer "):].strip()
        keys = await self._metadata()
        try:
            key = await asyncio.to_thread(keys.client.get_signing_key_from_jwt, token)
            claims: dict[str, Any] = jwt.decode(token, key.key, algorithms=["RS256"], audience=self.settings.app_id,
                                                issuer=keys.issuer, leeway=SKEW_S,
                                                options={"require": ["exp", "iss", "aud"]})
        except jwt.PyJWKClientConnectionError as exc:
            raise KeysUnavailable(f"the signing keys could not be read ({exc})") from None
        except jwt.PyJWKClientError as exc:
            raise Unauthorized(f"its signing key is not the issuer's ({exc})") from None
        except jwt.InvalidTokenError as exc:
            raise Unauthorized(f"its token is not valid: {exc}") from None
        claimed = claims.get("serviceUrl")
        if not isinstance(claimed, str):
            raise Unauthorized("its token has no serviceUrl claim")
        if claimed.rstrip("/") != str(activity.get("serviceUrl") or "").rstrip("/"):
            raise Unauthorized("its token's serviceUrl claim is not the activity's serviceUrl")
        return claims


class TokenSource:
    """The bot's access token for `scope` (the Bot Framework connector's by default; Microsoft Graph's for
    group membership), fetched once and renewed before it expires."""

    def __init__(self, settings: TeamsSettings, session: aiohttp.ClientSession, *, scope: str = BOT_SCOPE) -> None:
        self.settings = settings
        self.session = session
        self.scope = scope
        self._token: str | None = None
        self._until = 0.0
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        async with self._lock:
            if self._token is None or time.monotonic() > self._until:
                form = {"grant_type": "client_credentials", "client_id": self.settings.app_id, "scope": self.scope}
                form.update(self._credential())
                async with self.session.post(self.settings.token_url, data=form) as response:
                    body = await response.json(content_type=None)
                    if response.status != 200 or "access_token" not in body:
                        raise PermissionError(f"the token endpoint refused the bot's credentials "
                                              f"({response.status} {str(body.get('error', ''))[:80]})")
                self._token = str(body["access_token"])
                self._until = time.monotonic() + max(60.0, float(body.get("expires_in", 3600)) - TOKEN_MARGIN_S)
            return self._token

    def _credential(self) -> dict[str, str]:
        if self.settings.password:
            return {"client_secret": self.settings.password}
        assert self.settings.certificate is not None
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization

        pem = self.settings.certificate.read_bytes()
        cert = x509.load_pem_x509_certificate(pem)
        key = serialization.load_pem_private_key(pem, password=None)
        thumb = base64.urlsafe_b64encode(cert.fingerprint(hashes.SHA1())).rstrip(b"=").decode()
        now = int(time.time())
        assertion = jwt.encode({"aud": self.settings.token_url, "iss": self.settings.app_id, "sub": self.settings.app_id,
                                "jti": str(uuid.uuid4()), "nbf": now, "exp": now + 600}, key,  # type: ignore[arg-type]
                               algorithm="RS256", headers={"x5t": thumb})
        return {"client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion}

