"""Alembic environment: migrations run on the connection the app hands over (sync, in a thread)."""

from alembic import context

from smartapp.core.tables import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
