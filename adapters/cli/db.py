"""`oz0 db upgrade`: bring the database (SQLite under OZ0_HOME, or OZ0_DATABASE_URL) to the newest schema.

Opening the store migrates it already (every `oz0` command and `oz0 serve` at start); this command
does it on purpose and says what it did, for a deploy step that runs before the replicas (the
Kubernetes migration Job, `docker compose run migrate`).
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(parser: argparse.ArgumentParser) -> None:
    """Fill in `oz0 db`: `upgrade` and `prune`."""
    parser.description = "Manage the database of the journal, plugin store and audit log."
    actions = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = actions.add_parser(
        "upgrade", help="apply the schema migrations (Alembic) up to the newest revision",
        description="Apply the schema migrations up to the newest revision shipped with this oz0. A database "
                    "made before migrations existed is stamped at the baseline first and keeps its rows. "
                    "Safe to run on several replicas at once: one migrates, the others wait for it.")
    upgrade.set_defaults(func=_upgrade)
    prune = actions.add_parser(
        "prune", help="remove jobs and audit records past retention (OZ0_RETENTION_JOBS_DAYS, _AUDIT_DAYS)",
        description="Remove finished jobs older than OZ0_RETENTION_JOBS_DAYS (default 90) with their questions "
                    "and per-job budget rows, and audit records older than OZ0_RETENTION_AUDIT_DAYS (default "
                    "365), 1,000 rows per transaction. oz0 serve does this daily.")
    prune.add_argument("--dry-run", action="store_true", help="only count what would be removed, per table")
    prune.set_defaults(func=_prune)


def _upgrade(args: argparse.Namespace) -> int:
    from oz0.adapters.cli.errors import CommandError
    from oz0.adapters.cli.plugin import open_runtime
    from oz0.edge.runtime.migrate import HEAD

    runtime = open_runtime()
    try:
        where = runtime.store.engine.url.render_as_string(hide_password=True)
        change = runtime.store.schema
    finally:
        runtime.close()
    if change.after != HEAD:
        raise CommandError(f"the database {where} is at schema revision {change.after}, newer than this oz0 "
                           f"knows (its newest is {HEAD}): upgrade oz0 rather than the database", code=1)
    if not change.changed:
        print(f"{where}: schema already at the newest revision, {HEAD}")
    elif change.stamped:
        print(f"{where}: tables made before migrations, stamped at the baseline, now at revision {change.after}")
    else:
        print(f"{where}: schema upgraded from {change.before or 'an empty database'} to revision {change.after}")
    return 0


def _prune(args: argparse.Namespace) -> int:
    import os

    from oz0.adapters.cli.errors import CommandError
    from oz0.adapters.cli.plugin import open_runtime
    from oz0.edge.runtime.retention import Retention, RetentionError, count, prune

    try:
        policy = Retention.from_env(os.environ)
    except RetentionError as exc:
        raise CommandError(str(exc)) from None
    runtime = open_runtime()
    try:
        counts = (count if args.dry_run else prune)(runtime.store.engine, policy)
    finally:
        runtime.close()
    verb = "would remove" if args.dry_run else "removed"
    print(f"Retention: jobs {policy.jobs_days:g} days, audit {policy.audit_days:g} days; {verb}:")
    for table, rows in counts.items():
        print(f"  {table}: {rows:,} row{'s' * (rows != 1)}")
    return 0
