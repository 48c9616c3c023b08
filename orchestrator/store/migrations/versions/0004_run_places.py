"""A run's repeat number, role and bench as columns (records said them only in tags).

Revision ID: 0004
Revises: 0003

Rows indexed before are filled from their tags as `store.records` reads such records:
`<tag>-r<N>` is repeat N, `kernel-baseline-<bench tag>` a bench's baseline. The rules are
spelled here, not imported: a migration stays what it was when it was written.
"""

import re

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_REPEAT = re.compile(r"-r(\d+)$")
_BASELINE = "kernel-baseline-"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("repeat", sa.Integer))
        batch.add_column(sa.Column("role", sa.String(16)))
        batch.add_column(sa.Column("bench", sa.String(255)))
    runs = sa.table(
        "runs",
        sa.column("run_id", sa.String),
        sa.column("tag", sa.String),
        sa.column("repeat", sa.Integer),
        sa.column("role", sa.String),
        sa.column("bench", sa.String),
    )
    conn = op.get_bind()
    rows = conn.execute(sa.select(runs.c.run_id, runs.c.tag)).all()
    for run_id, tag in rows:
        match = _REPEAT.search(tag)
        stem = tag[: match.start()] if match else tag
        baseline = stem.startswith(_BASELINE)
        conn.execute(
            runs.update()
            .where(runs.c.run_id == run_id)
            .values(
                repeat=int(match[1]) if match else None,
                role="baseline" if baseline else None,
                bench=stem.removeprefix(_BASELINE) if baseline else None,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for column in ("bench", "role", "repeat"):
            batch.drop_column(column)
