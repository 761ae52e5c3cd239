"""Chat channels: the ask flow written once, and Slack and Discord as wire translation.

The names below are this package's face (what other packages import); the modules behind it are
private to it. A channel's own module (`oz0.adapters.chat.slack`, `.discord`) is imported by name where
that channel is served, so its SDK loads only then; the names here load on first use (PEP 562).

    AskFlow                                 the ask flow (flow.py), one for every channel
    Restarts, report_interrupted            jobs a restart cut short, told once (restarts.py)
    ChatWire, ChatRuntime, Ask, AnswerClick,
    ShareClick, ButtonClick, Reply, RateLimited,
    WireRefused, Syntax                      what a wire translates and what it may raise (wire.py)
    ChannelTasks, JobLoop                    a channel's own loop and tasks (tasks.py)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oz0.edge.lazy import lazy_face

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow
    from oz0.adapters.chat.restarts import Restarts, report_interrupted
    from oz0.adapters.chat.tasks import ChannelTasks, JobLoop
    from oz0.adapters.chat.wire import (
        AnswerClick,
        Ask,
        ButtonClick,
        ChatRuntime,
        ChatWire,
        RateLimited,
        Reply,
        ShareClick,
        Syntax,
        WireRefused,
    )

__all__ = [
    "AnswerClick",
    "Ask",
    "AskFlow",
    "ButtonClick",
    "ChannelTasks",
    "ChatRuntime",
    "ChatWire",
    "JobLoop",
    "RateLimited",
    "Reply",
    "Restarts",
    "ShareClick",
    "Syntax",
    "WireRefused",
    "report_interrupted",
]

_HOMES: dict[str, str] = {
    "AskFlow": "oz0.adapters.chat.flow",
    **dict.fromkeys(("Restarts", "report_interrupted"), "oz0.adapters.chat.restarts"),
    **dict.fromkeys(("ChannelTasks", "JobLoop"), "oz0.adapters.chat.tasks"),
    **dict.fromkeys(("AnswerClick", "Ask", "ButtonClick", "ChatRuntime", "ChatWire", "RateLimited", "Reply", "ShareClick", "Syntax",
                     "WireRefused"), "oz0.adapters.chat.wire"),
}


__getattr__, __dir__ = lazy_face(__name__, globals(), _HOMES, __all__)
