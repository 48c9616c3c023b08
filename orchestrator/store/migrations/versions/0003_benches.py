"""Bench outcomes: a verdict, or `nothing measured` when no kernel changed (issue 28).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "benches",
        sa.Column("bench_id", sa.String(64), primary_key=True),
        sa.Column("started", sa.String(40), nullable=False, index=True),
        sa.Column("baseline", sa.String(255), nullable=False),
        sa.Column("candidate", sa.String(255), nullable=False),
        sa.Column("llvm_commit", sa.String(64), index=True),
        sa.Column("system", sa.String(255), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("headline", sa.Text, nullable=False),
        sa.Column("changed_kernels", sa.Integer),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("elapsed_seconds", sa.Float, nullable=False),
        sa.Column("baseline_group", sa.String(255)),
        sa.Column("candidate_group", sa.String(255)),
    )


def downgrade() -> None:
    op.drop_table("benches")
