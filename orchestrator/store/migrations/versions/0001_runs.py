"""Runs, with their categories, kernels and kernel-recipe metrics.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(255), primary_key=True),
        sa.Column("group_name", sa.String(255), nullable=False, index=True),
        sa.Column("build", sa.String(255), nullable=False, index=True),
        sa.Column("system", sa.String(255), nullable=False, index=True),
        sa.Column("tag", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("platform", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("image_tag", sa.String(255), nullable=False),
        sa.Column("image_id", sa.String(100), nullable=False),
        sa.Column("compiler", sa.String(255)),
        sa.Column("compiler_version", sa.Text),
        sa.Column("llvm_commit", sa.String(64), index=True),
        sa.Column("gromacs_commit", sa.String(64)),
        sa.Column("gmx_version", sa.String(64)),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("started", sa.String(40), nullable=False, index=True),
        sa.Column("finished", sa.Boolean, nullable=False),
        sa.Column("failure", sa.Text),
        sa.Column("ns_per_day", sa.Float),
        sa.Column("headline", sa.String(64)),
        sa.Column("headline_value", sa.Float),
        sa.Column("duration_seconds", sa.Float),
        sa.Column("cpu_only", sa.Boolean, nullable=False),
        sa.Column("profile_mode", sa.String(16), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("record", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.String(40), nullable=False),
    )
    fk = {"ondelete": "CASCADE"}
    op.create_table(
        "categories",
        sa.Column("run_id", sa.String(255), sa.ForeignKey("runs.run_id", **fk), primary_key=True),
        sa.Column("category", sa.String(32), primary_key=True),
        sa.Column("total_ms", sa.Float, nullable=False),
        sa.Column("percent", sa.Float, nullable=False),
        sa.Column("calls", sa.Integer, nullable=False),
    )
    op.create_table(
        "kernels",
        sa.Column("run_id", sa.String(255), sa.ForeignKey("runs.run_id", **fk), primary_key=True),
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("calls", sa.Integer, nullable=False),
        sa.Column("total_ms", sa.Float, nullable=False),
        sa.Column("median_us", sa.Float),
    )
    op.create_table(
        "metrics",
        sa.Column("run_id", sa.String(255), sa.ForeignKey("runs.run_id", **fk), primary_key=True),
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("better", sa.String(8), nullable=False),
    )


def downgrade() -> None:
    for table in ("metrics", "kernels", "categories", "runs"):
        op.drop_table(table)
