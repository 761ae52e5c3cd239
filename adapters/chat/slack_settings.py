"""The Slack channel's settings, from the environment (names as in docs/reference/configuration.md), and its Web API client."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["DEFAULT_PORT", "SlackConfigError", "SlackSettings", "configured", "web_client"]

DEFAULT_PORT = 3000


class SlackConfigError(ValueError):
    """The Slack environment cannot start a channel: names the variable and what to set."""


@dataclass(frozen=True)
class SlackSettings:
    """The channel's settings, from the environment (names as in docs/reference/configuration.md)."""

    bot_token: str
    app_token: str | None = None
    signing_secret: str | None = None
    api_url: str = "https://slack.com/api/"
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT

    @property
    def socket_mode(self) -> bool:
        return bool(self.app_token)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SlackSettings:
        token = env.get("SLACK_BOT_TOKEN", "").strip()
        if not token:
            raise SlackConfigError("SLACK_BOT_TOKEN is not set: the Slack channel needs the bot token (xoxb-...)")
        app_token = env.get("SLACK_APP_TOKEN", "").strip() or None
        if app_token and not app_token.startswith("xapp-"):
            raise SlackConfigError("SLACK_APP_TOKEN must be an app-level token (xapp-...) with connections:write")
        secret = env.get("SLACK_SIGNING_SECRET", "").strip() or None
        if not app_token and not secret:
            raise SlackConfigError(
                "SLACK_SIGNING_SECRET is not set: HTTP events are verified with it (Basic Information > "
                "App Credentials). Set it, or set SLACK_APP_TOKEN to use Socket Mode instead")
        raw_port = env.get("OZ0_SLACK_PORT", "").strip() or str(DEFAULT_PORT)
        if not raw_port.isdigit() or int(raw_port) > 65535:
            raise SlackConfigError(f"OZ0_SLACK_PORT must be a port number from 0 to 65535, not {raw_port!r}")
        api_url = env.get("SLACK_API_URL", "").strip() or "https://slack.com/api/"
        if not api_url.startswith(("http://", "https://")):
            raise SlackConfigError(f"SLACK_API_URL must be an http(s) URL, not {api_url!r}")
        return cls(bot_token=token, app_token=app_token, signing_secret=secret,
                   api_url=api_url.rstrip("/") + "/", host=env.get("OZ0_SLACK_HOST", "").strip() or "0.0.0.0",
                   port=int(raw_port))


def configured(env: Mapping[str, str]) -> bool:
    """Whether `oz0 serve` should start the Slack channel: a bot token is set."""
    return bool(env.get("SLACK_BOT_TOKEN", "").strip())


def web_client(settings: SlackSettings) -> AsyncWebClient:
    """A Web API client that honours 429 Retry-After and retries dropped connections."""
    return AsyncWebClient(
        token=settings.bot_token,
        base_url=settings.api_url,
        retry_handlers=[AsyncConnectionErrorRetryHandler(max_retry_count=2),
                        AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
    )
