"""The bundled example agents: small, deterministic, and each drawn as a different card."""

from __future__ import annotations

import hashlib
from typing import Any

from oz0.edge.model.job import JobFailure
from oz0.edge.runtime.context import RunContext

_DEPLOYS = [
    {"service": "api", "version": "2.14.0", "status": "ok", "started": "2026-11-30T09:12:00Z", "by": "mara"},
    {"service": "billing", "version": "1.9.3", "status": "rolling", "started": "2026-11-30T09:40:00Z",
     "by": "deploy-bot"},
    {"service": "search", "version": "0.31.1", "status": "failed", "started": "2026-11-30T10:02:00Z", "by": "li"},
    {"service": "api", "version": "2.13.2", "status": "ok", "started": "2026-11-29T16:30:00Z", "by": "mara"},
    {"service": "checkout", "version": "5.0.0", "status": "ok", "started": "2026-11-29T11:05:00Z", "by": "sam"},
]

_INCIDENTS = {
    "INC-4711": {"id": "INC-4711", "severity": "sev2", "status": "mitigated", "title": "Checkout latency above 2 s",
                 "owner": "@oncall-payments", "opened": "2026-11-30T08:55:00Z", "services": ["checkout", "payments"],
                 "runbook": "https://runbooks.example.com/checkout-latency"},
    "INC-4712": {"id": "INC-4712", "severity": "sev1", "status": "open", "title": "Search returns no results",
                 "owner": "@oncall-search", "opened": "2026-11-30T10:04:00Z", "services": ["search"],
                 "runbook": "https://runbooks.example.com/search-empty"},
}

_CONFIGS = {
    "deploy/nginx.conf": {
        "author": "mara",
        "old": "worker_processes 2;\nevents {\n  worker_connections 512;\n}\nhttp {\n  gzip off;\n"
               "  keepalive_timeout 65;\n}\n",
        "new": "worker_processes auto;\nevents {\n  worker_connections 2048;\n}\nhttp {\n  gzip on;\n"
               "  keepalive_timeout 65;\n}\n",
    },
    "deploy/api.env": {
        "author": "li",
        "old": "LOG_LEVEL=info\nPOOL_SIZE=10\nFEATURE_CACHE=off\n",
        "new": "LOG_LEVEL=info\nPOOL_SIZE=25\nFEATURE_CACHE=on\nCACHE_TTL=300\n",
    },
}

_FLAGS = {
    "checkout": {
        "staging": {"new_cart": True, "fast_refunds": True, "legacy_tax": False, "max_items": 50},
        "production": {"new_cart": False, "legacy_tax": False, "max_items": 100, "dark_mode": True},
    },
    "search": {
        "staging": {"semantic_ranking": True, "typo_tolerance": 2},
        "production": {"semantic_ranking": False, "typo_tolerance": 2},
    },
}

_NOTES = {
    "2.14": ("# Release 2.14\n\nThis release makes **checkout** faster and fixes `refund` rounding.\n\n"
             "- Cart loads in *half* the time\n- Refunds round to the cent "
             "([details](https://example.com/notes/2.14))\n\n```\noz0 run deploys api\n```\n"),
    "2.13": ("# Release 2.13\n\n- **Search** accepts quoted phrases\n- The `billing` export is a CSV file\n\n"
             "> Upgrade note: run the `billing` migration before deploying.\n"),
}


def deploys(text: str) -> dict[str, Any]:
    """Recent deploys, newest first; a service name filters them, "all" (or nothing) shows every one."""
    wanted = text.strip().lower()
    rows = [d for d in _DEPLOYS if wanted in ("", "all") or d["service"] == wanted]
    return {"deploys": rows}


def incident(text: str) -> dict[str, Any]:
    key = text.strip().upper() or "INC-4711"
    if key not in _INCIDENTS:
        raise JobFailure("IncidentNotFound", f"no incident {text.strip()!r}; known: {', '.join(_INCIDENTS)}")
    return dict(_INCIDENTS[key])


def config_change(text: str) -> dict[str, Any]:
    path = text.strip() or "deploy/nginx.conf"
    if path not in _CONFIGS:
        raise JobFailure("FileNotTracked", f"{path!r} is not a tracked config file; try one of: "
                                           f"{', '.join(_CONFIGS)}")
    return {"path": path, **_CONFIGS[path]}


def feature_flags(text: str) -> dict[str, Any]:
    service = text.strip().lower() or "checkout"
    flags = _FLAGS.get(service, {"staging": {}, "production": {}})
    return {"service": service, **flags}


def release_notes(text: str) -> str:
    version = text.strip().lstrip("v") or "2.14"
    if version in _NOTES:
        return _NOTES[version]
    known = ", ".join(sorted(_NOTES))
    return f"# Release {version}\n\nThere are no notes for **{version}** yet. Notes exist for: {known}.\n"


async def review(request: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """A pretend review, the same for the same pull request every time."""
    repo, pr = request["repo"], request["pr"]
    if pr > 100_000:
        raise JobFailure("PullRequestNotFound", f"{repo} has no pull request #{pr}")
    ctx.progress(f"reading {repo}#{pr}")
    seed = hashlib.sha256(f"{repo}#{pr}".encode()).digest()
    risk = ("low", "medium", "high")[seed[0] % 3]
    verdict = {"low": "approve", "medium": "comment", "high": "request changes"}[risk]
    files = 1 + seed[1] % 24
    passing = 3 - (1 if risk == "high" else 0)
    summary = {
        "low": "Small, well-tested change; nothing blocks it.",
        "medium": "Reads well; two functions lack tests for their error paths.",
        "high": "Touches the auth middleware without tests; one check fails.",
    }[risk]
    out: dict[str, Any] = {"repo": repo, "pr": pr, "verdict": verdict, "risk": risk, "summary": summary,
                           "files_changed": files, "checks": f"{passing} of 3 passing"}
    if "focus" in request:
        out["focus"] = request["focus"]
    return out
