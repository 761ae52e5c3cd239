"""Alembic's environment for the store: the connection the Store opened, our own version table."""

from alembic import context

from oz0.edge.runtime.migrations import VERSION_TABLE

context.configure(connection=context.config.attributes["connection"], target_metadata=None,
                  version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
