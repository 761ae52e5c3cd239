"""Alembic's environment for oz0: runs on the connection oz0.edge.runtime.migrate hands it (with its lock held).

Not a module to import: Alembic executes it. SQLite gets batch mode, so a later revision that alters
a column works there too (SQLite cannot ALTER most things in place).
"""

from alembic import context

from oz0.edge.runtime.store import metadata

__all__: list[str] = []

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run oz0's migrations with `oz0 db upgrade`, not the alembic command: "
                       "oz0 passes the database connection and holds the migration lock")
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite", compare_type=True)
with context.begin_transaction():
    context.run_migrations()
