"""Alembic's entry point: migrate on the connection `database.Database.migrate` passes in."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
