"""Run every benchmark: ``python -m bench``."""

import sys

from bench import (
    addressed_text,
    checker_quality,
    concurrent_launches,
    discharge_ahead,
    draft_cost,
    drafts,
    evidence,
    fabrications,
    fetch,
    focus_quality,
    focus_speed,
    identity,
    launch_to_draft,
    model_concurrency,
    model_quality,
    review_api,
    review_ui,
    scale_out,
    second_job,
    startup,
)
from bench.claim_verifier import evaluate as claim_verifier_evaluate
from bench.claim_verifier import speed as claim_verifier_speed

if __name__ == "__main__":
    sys.argv = sys.argv[:1]
    startup.main()
    draft_cost.main()
    second_job.main()
    evidence.main()
    drafts.main()
    fetch.main()
    launch_to_draft.main()
    concurrent_launches.main()
    discharge_ahead.main()
    scale_out.main()
    review_api.main()
    review_ui.main()
    focus_quality.main()
    focus_speed.main()
    checker_quality.main()
    fabrications.main()
    claim_verifier_evaluate.main([])
    claim_verifier_speed.main([])
    addressed_text.evaluate()
    model_quality.main()
    identity.main()
    model_concurrency.main()
