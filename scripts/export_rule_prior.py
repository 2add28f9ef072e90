"""Write the rule prior shipped with rlsched (``rlsched train --rule-prior public``) from a learning run.

Run:  python scripts/export_rule_prior.py [docs/results/learning-12k/results.json]

It keeps what a prior reads (:func:`rlsched.workflow.verdict.prior_projection`): the objective and each trace's
rules' validation scores, in ``rlsched/workflow/rule_prior_bsld.json``.  A test checks the shipped file is this
projection of the committed table, so a regenerated table is followed by this command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rlsched.core.atomic import write_json_atomic
from rlsched.workflow.verdict import PUBLIC_PRIOR_FILE, prior_projection

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "docs/results/learning-12k/results.json"


def main(argv: list[str]) -> None:
    source = argv[0] if argv else DEFAULT
    results = json.loads((ROOT / source).read_text())
    target = ROOT / "rlsched" / "workflow" / PUBLIC_PRIOR_FILE
    write_json_atomic(target, prior_projection(results, source), mode=0o644)
    print(f"wrote {target.relative_to(ROOT)} from {source}")


if __name__ == "__main__":
    main(sys.argv[1:])
