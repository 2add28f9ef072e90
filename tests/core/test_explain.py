"""Why a job ranks where it does: every rule's stated sort key gives exactly its order, and the reasons and
gaps of an explanation are the real differences between the jobs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.core.agents import FixedRankAgent
from rlsched.core.explain import RankKey, explain_rank, key_order, reasons_behind
from rlsched.core.policies import POLICIES
from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json

RULES = [n for n, e in POLICIES.items() if e.live and e.family == "rule" and n != "interactive-first-keepidle"]


@pytest.mark.parametrize("name", RULES)
def test_every_rules_key_gives_exactly_its_order(name: str, tmp_path: Path) -> None:
    # Several jobs share a submit time (i % 3000 in the synthetic queue): the tie-breaks matter.
    daemon = make_daemon(SyntheticSlurm(synthetic_squeue_json(400, seed=3)), str(tmp_path), "shadow", name)
    view = daemon.backend.view()
    agent = daemon.agent.agent
    assert isinstance(agent, FixedRankAgent)
    keys = agent.rank_keys(view)
    assert keys is not None, f"{name} cannot say why"
    assert np.array_equal(key_order(keys), agent.rank(view))


def test_a_rules_reasons_are_the_first_field_that_differs() -> None:
    klass = RankKey("class", np.array([0.0, 1.0, 0.0, 0.0]), labels=("interactive", "batch"))
    limit = RankKey("requested time", np.array([600.0, 60.0, 600.0, 3600.0]), unit=" s")
    submit = RankKey("submit time", np.array([10.0, 5.0, 20.0, 1.0]), epoch=True)
    keys = [klass, limit, submit]
    order = key_order(keys)
    assert order.tolist() == [0, 2, 3, 1]
    scores = np.array([4.0, 1.0, 3.0, 2.0])
    why = explain_rank(3, order, scores, keys)
    assert why.rank == 3 and why.n == 4
    (just, first) = why.ahead
    assert (just.index, just.field, just.its_value, just.our_value) == (2, "requested time", "600 s", "3600 s")
    assert first.rank == 1 and first.field == "requested time"
    assert why.key_values == {"class": "interactive", "requested time": "3600 s", "submit time": "1970-01-01T00:00:01Z"}
    assert "requested time 600 s" in why.change
    behind = explain_rank(1, order, scores, keys)  # the batch job: class decides
    assert behind.ahead[0].field == "class" and behind.ahead[0].reason() == "class interactive before batch"
    assert reasons_behind(order, scores, keys, 4) == [
        "first",
        "submit time: 1970-01-01T00:00:10Z before 1970-01-01T00:00:20Z",
        "requested time: 600 s before 3600 s",
        "class: interactive before batch",
    ]
    assert explain_rank(0, order, scores, keys).change.startswith("it is first")


def test_higher_first_keys_sort_and_read_the_right_way() -> None:
    priority = RankKey("multifactor priority", np.array([5.0, 9.0, 7.0]), higher_first=True)
    assert key_order([priority]).tolist() == [1, 2, 0]
    why = explain_rank(0, key_order([priority]), np.zeros(3), [priority])
    assert why.ahead[0].reason() == "multifactor priority 7 before 5"


def test_a_learned_agents_reasons_are_the_q_gaps(tmp_path: Path) -> None:
    daemon = make_daemon(SyntheticSlurm(synthetic_squeue_json(60, seed=1)), str(tmp_path), "shadow", "sarsa-esn")
    view = daemon.backend.view()
    order, scores = daemon.agent.ranking(view)
    assert daemon.agent.rank_keys(view) is None
    job = int(view.pending.job_id[order[10]])
    out = daemon.agent.explain(view, job)
    assert out["rank"] == 11 and out["pending"] == 60 and out["score_kind"] == "Q-value"
    assert out["score"] == pytest.approx(float(scores[order[10]]))
    just = out["ahead"][0]
    assert just["rank"] == 10 and just["job_id"] == int(view.pending.job_id[order[9]])
    assert just["score_gap"] == pytest.approx(float(scores[order[9]] - scores[order[10]]))
    assert just["score_gap"] >= 0
    assert out["ahead"][-1]["rank"] == 1
    assert out["features"]["est_runtime_s"] is not None and out["features"]["wait_s"] > 0
    assert "Q would need to rise" in out["change"]
