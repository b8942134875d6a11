"""At most one queued or running job per stay on an EHR, enforced by the database: two launches
of one stay at the same moment (two web processes) join one job instead of drafting twice."""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"

ACTIVE = "state IN ('queued', 'running')"


def upgrade() -> None:
    # Duplicates made before the rule: the newest of each stay's active jobs goes on.
    op.execute(
        sa.text(
            f"UPDATE jobs SET state = 'failed', error = 'another job drafts this stay'"
            f" WHERE {ACTIVE} AND EXISTS (SELECT 1 FROM jobs AS newer"
            " WHERE newer.iss = jobs.iss AND newer.patient = jobs.patient"
            " AND COALESCE(newer.encounter, '') = COALESCE(jobs.encounter, '')"
            " AND newer.state IN ('queued', 'running') AND newer.created_at > jobs.created_at)"
        )
    )
    op.create_index(
        "one_active_job_per_stay",
        "jobs",
        ["iss", "patient", sa.text("COALESCE(encounter, '')")],
        unique=True,
        postgresql_where=sa.text(ACTIVE),
        sqlite_where=sa.text(ACTIVE),
    )


def downgrade() -> None:
    op.drop_index("one_active_job_per_stay", table_name="jobs")
