"""The edge's one exception tree: every error the edge raises on purpose is an `Oz0Error`, so a caller
can catch the edge's refusals apart from bugs (a `TypeError` stays a bug). Each class lives beside the
check that raises it (its floor) and keeps the built-in base it had, so `except ValueError` still holds.

    Oz0Error
    ├── contracts/
    │   ├── ContractError          a schema or a value against it (edge.contracts.schema)
    │   ├── JsonDataError          JSON text beyond what the edge reads (edge.contracts.json_data)
    │   ├── PointerError           a JSON Pointer that names nothing (edge.contracts.pointer)
    │   ├── SchemaDepthError       a schema nested past the limit (edge.contracts.view)
    │   └── CompatError            two schemas the diff cannot compare (edge.contracts.changes)
    ├── model/
    │   ├── JobFailure             a job ended with a failure kind (edge.model.job)
    │   │   └── McpFailure         ... as an MCP server failed it (edge.mcp.spec)
    │   ├── UnknownAgent           no installed agent has the name (edge.model.job)
    │   ├── BudgetDeclarationError a budget or price written wrong (edge.model.budget)
    │   └── ReplyRefError          a journaled reply reference no wire reads (edge.model.reply_ref)
    ├── results/
    │   └── InputError             a QZX tool's input it refuses (edge.results.qzx)
    ├── plugins/
    │   ├── PluginError            a plugin, agent or flow file (edge.plugins.declared)
    │   │   └── VersionReused      ... a version installed before with other content (edge.runtime.install)
    │   ├── ArchiveError           a plugin archive (edge.plugins.archive)
    │   ├── ExpressionError        a flow's expression (edge.plugins.expressions)
    │   ├── ToolsError             an agent's `tools:` or `servers:` (edge.plugins.agent_tools)
    │   ├── AskDeclarationError    an agent's `asks:` entry (edge.plugins.asks)
    │   └── YamlLimitError         YAML past a limit, also a yaml.YAMLError (edge.plugins.yaml_safe)
    ├── documents/
    │   └── UpgradeRefused         an upgrade that breaks a contract (edge.documents.compat)
    ├── runtime/
    │   ├── AccessError            access.yaml written wrong (edge.runtime.access)
    │   ├── AnswerRefused          a person step's answer not taken, and why (edge.runtime.questions)
    │   ├── CancelRefused          a stop not made: no such job, not the asker's, or ended (edge.runtime.cancel)
    │   ├── ConversationBusy       a thread's turn not numbered in time: a burst of asks (edge.runtime.conversations)
    │   ├── EngineError            the durable engine cannot start (edge.runtime.engine_settings)
    │   ├── PluginStateError       an uninstall or rollback the installed state refuses (edge.runtime.plugin_admin)
    │   ├── RetentionError         retention settings written wrong (edge.runtime.retention)
    │   ├── ScheduleError          a schedule that cannot be run or steered (edge.runtime.schedules)
    │   └── SearchError            a job search's filter or cursor (edge.runtime.job_search)
    └── flows/
        └── ScaffoldError          a flow scaffold refused (edge.flows.scaffold)

Errors are data: an edge error carries what went wrong and where, never an HTTP status; each adapter
chooses its status from the error's own fields (the console's API maps `AnswerRefused.why`).
tests/edge/test_errors.py pins this tree.
"""

from __future__ import annotations

__all__ = ["Oz0Error"]


class Oz0Error(Exception):
    """The base of every error the edge raises on purpose (the tree above)."""
