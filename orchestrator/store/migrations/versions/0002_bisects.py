"""Bisects and their steps.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "bisects",
        sa.Column("bisect_id", sa.String(64), primary_key=True),
        sa.Column("good", sa.String(64), nullable=False),
        sa.Column("bad", sa.String(64), nullable=False),
        sa.Column("system", sa.String(255), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("started", sa.String(40), nullable=False),
        sa.Column("first_bad", sa.String(64)),
        sa.Column("outcome", sa.Text, nullable=False),
    )
    op.create_table(
        "bisect_steps",
        sa.Column(
            "bisect_id",
            sa.String(64),
            sa.ForeignKey("bisects.bisect_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("step", sa.Integer, primary_key=True),
        sa.Column("commit", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(8), nullable=False),
        sa.Column("baseline_group", sa.String(255)),
        sa.Column("candidate_group", sa.String(255)),
        sa.Column("delta_pct", sa.Float),
        sa.Column("p_value", sa.Float),
        sa.Column("pairs", sa.Integer, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("at", sa.String(40), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("bisect_steps")
    op.drop_table("bisects")
