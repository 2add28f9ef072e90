"""Direct policy search (rlsched.sim.search): deterministic, improving, and its models reload as they were."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.policies import (
    BuildContext,
    PolicyError,
    build_agent,
    load_model,
    load_policy,
    parse_policy,
    read_policy_spec,
)
from rlsched.core.scoring import ScoredRankAgent, ScoringFunction, parse_weights
from rlsched.core.view import ClusterView, FinishedJobs, PendingJobs, RunningJobs
from rlsched.sim.policies import simulate_policy
from rlsched.sim.search import (
    SearchConfig,
    jittered_replays,
    main,
    mean_bsld,
    report_markdown,
    search_scoring,
    simulate_scores,
    split_by_jobs,
    split_experiment,
)
from rlsched.sim.workload import Workload, make_workload

CORES = 8


def bursty(seed: int, n: int = 600) -> Workload:
    """Bursts of short narrow jobs behind long wide ones on 8 cores: shortest-first is far better than
    first-come (and longest-first far worse), so a search that works must find the short-first side."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, n * 60.0, n))
    long = rng.random(n) < 0.3
    run = np.where(long, rng.uniform(3000, 8000, n), rng.uniform(20, 300, n))
    procs = np.where(long, rng.integers(2, 9, n), rng.integers(1, 3, n))
    return make_workload(submit, run, procs, req_time=run * rng.uniform(1.0, 3.0, n), max_procs=CORES)


@pytest.fixture(scope="module")
def windows() -> tuple[Workload, Workload]:
    return bursty(1), bursty(2)


def small_config(**kw: object) -> SearchConfig:
    # Starts from longest-first (log_req weight −1), the family's rules out of the selection: the search itself
    # must turn the order around.
    base = dict(
        population=12,
        generations=5,
        sequences=2,
        sequence_jobs=300,
        initial=(-1.0, 0.0, 0.0, 0.0),
        initial_std=1.0,
        rules=False,
        validation_replays=1,
        seed=5,
    )
    return SearchConfig(**{**base, **kw})  # type: ignore[arg-type]


def test_search_is_deterministic_for_a_seed(windows: tuple[Workload, Workload]) -> None:
    train, validation = windows
    a = search_scoring(train, validation, small_config(), CORES)
    b = search_scoring(train, validation, small_config(), CORES)
    assert a.function == b.function and a.validation_bsld == b.validation_bsld and a.history == b.history
    c = search_scoring(train, validation, small_config(seed=6), CORES)
    assert c.history != a.history


def test_search_improves_on_a_workload_with_a_known_good_order(windows: tuple[Workload, Workload]) -> None:
    train, validation = windows
    longest_first = mean_bsld(simulate_scores(validation, ScoringFunction(("log_req",), (-1.0,)), CORES))
    shortest_first = mean_bsld(simulate_scores(validation, ScoringFunction(("log_req",), (1.0,)), CORES))
    first_come = mean_bsld(simulate_scores(validation, ScoringFunction(("submit_h",), (1.0,)), CORES))
    # The workload does have a known good order (here: 21 against 185 and 548).
    assert shortest_first < 0.2 * first_come and first_come < longest_first
    config = small_config()
    result = search_scoring(train, validation, config, CORES)
    start = ScoringFunction(config.features, tuple(config.start().tolist()))
    # The fitness (bounded slowdown on the training jobs) of what it found, against where it started.
    assert mean_bsld(simulate_scores(train, result.function, CORES)) < 0.25 * mean_bsld(
        simulate_scores(train, start, CORES)
    )
    # Selected on the validation window, it lands near the known good order, far from where it started.
    assert result.validation_bsld < 0.1 * longest_first
    assert result.validation_bsld < 2 * shortest_first < 0.4 * first_come
    # Per generation: every member, easy-sjf on each sequence (the ratio's reference), two validation replays.
    assert result.evaluations == config.generations * (config.population + config.sequences + 2)


def test_scored_spec_runs_on_the_fast_path_with_the_search_s_order(windows: tuple[Workload, Workload]) -> None:
    train, validation = windows
    result = search_scoring(train, validation, small_config(generations=2), CORES)
    ran = simulate_policy(validation, result.spec, CORES)
    assert ran.agent is None  # the static key, not an agent
    same = simulate_scores(validation, result.function, CORES)
    assert np.array_equal(ran.schedule.start, same.start)
    assert mean_bsld(ran.schedule) == result.validation_bsld


def test_saved_model_reloads_with_identical_ranking(windows: tuple[Workload, Workload], tmp_path: Path) -> None:
    train, validation = windows
    result = search_scoring(train, validation, small_config(generations=2), CORES)
    path = tmp_path / "scored.npz"
    result.save(path)
    agent, spec = load_model(path, mode="boost", live=True)
    assert isinstance(agent, ScoredRankAgent) and spec == result.spec and agent.policy == spec.to_dict()
    fresh = build_agent(result.spec, BuildContext(mode="boost"))
    assert isinstance(fresh, ScoredRankAgent)
    _, meta = read_policy_spec(path)
    assert meta["search"]["validation_bsld"] == result.validation_bsld
    rng = np.random.default_rng(0)
    n = 40
    pend = PendingJobs(
        job_id=np.arange(n, dtype=np.int64),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.zeros(n, dtype=np.int64),
        cores=rng.integers(1, 9, n),
        req_time_s=rng.uniform(10, 1e5, n),
        submit_s=np.sort(rng.uniform(0, 1e5, n)),
        oracle_run_s=np.full(n, np.nan),
        held=np.zeros(n, dtype=bool),
    )
    view = ClusterView(
        time_s=2e5,
        total_cores=CORES,
        idle_cores=0,
        pending=pend,
        running=RunningJobs(),
        finished=FinishedJobs(),
        vos=("default",),
    )
    assert agent.rank(view).tolist() == fresh.rank(view).tolist()
    assert np.array_equal(agent.pending_scores(view), fresh.pending_scores(view))
    # The learning agents' loader says what the file is instead of failing on a missing learner.
    with pytest.raises(PolicyError, match="load_model"):
        load_policy(path)
    # The file runs in the simulator from its spec alone: the same schedule as the search's function.
    assert np.array_equal(
        simulate_policy(validation, spec, CORES).schedule.start,
        simulate_scores(validation, result.function, CORES).start,
    )


@pytest.mark.parametrize("runtime_model", ["oracle", "user-last2", "learned"])
def test_a_predicted_runtime_replays_as_its_spec(windows: tuple[Workload, Workload], runtime_model: str) -> None:
    """log_pred runs on the engine's dynamic priority (the prediction made at submit), spec and search alike."""
    validation = replace(windows[1], user=np.random.default_rng(0).integers(0, 5, len(windows[1])))
    function = ScoringFunction(("log_pred", "log_cores"), (1.0, 0.2))
    spec = f"scored:features=log_pred/log_cores,weights=1/0.2,runtime_model={runtime_model}"
    by_spec = simulate_policy(validation, spec, CORES)
    assert by_spec.agent is None
    assert np.array_equal(
        by_spec.schedule.start, simulate_scores(validation, function, CORES, runtime_model=runtime_model).start
    )


def test_the_oracle_runtime_beats_the_request_here(windows: tuple[Workload, Workload]) -> None:
    """A sanity check that the prediction is what orders: the actual runtimes order better than requests that
    overstate them by up to 3x (an upper bound, not a policy)."""
    validation = windows[1]
    by_request = mean_bsld(simulate_scores(validation, ScoringFunction(("log_req",), (1.0,)), CORES))
    by_oracle = mean_bsld(
        simulate_scores(validation, ScoringFunction(("log_pred",), (1.0,)), CORES, runtime_model="oracle")
    )
    assert by_oracle < 0.9 * by_request


def test_split_by_jobs_is_half_quarter_quarter(windows: tuple[Workload, Workload]) -> None:
    train, validation, test = split_by_jobs(windows[0])
    assert (len(train), len(validation), len(test)) == (300, 150, 150)
    assert train.submit[-1] <= validation.submit[0] and validation.submit[-1] <= test.submit[0]


def test_bad_configs_are_refused() -> None:
    with pytest.raises(ValueError, match="population"):
        SearchConfig(population=1)
    with pytest.raises(ValueError, match="initial weights"):
        SearchConfig(initial=(1.0,))
    with pytest.raises(ValueError, match="log_pred and runtime_model"):
        SearchConfig(features=("log_req", "log_pred"))


def test_family_rules_start_the_search_and_stand_for_selection(windows: tuple[Workload, Workload]) -> None:
    train, validation = windows
    config = SearchConfig(population=6, generations=2, sequences=2, sequence_jobs=300, validation_replays=3, seed=1)
    result = search_scoring(train, validation, config, CORES)
    # Selection reads the validation window as recorded and two jittered replays of it.
    replays = jittered_replays(validation, 3, config.jitter_s)
    assert not np.array_equal(replays[1].submit, validation.submit)
    assert result.validation_bsld == np.mean([mean_bsld(simulate_scores(r, result.function, CORES)) for r in replays])
    assert set(result.rules) == {"sjf", "saf", "f4-size", "fcfs"}
    best_rule = min(result.rules, key=lambda name: result.rules[name]["train_bsld"])
    assert result.history[0]["mean_weights"] == result.rules[best_rule]["weights"]
    # What the search keeps is never worse on validation than any of the family's rules.
    assert result.validation_bsld <= min(r["validation_bsld"] for r in result.rules.values())
    # No member ever favours later submissions (submit_h's weight is clipped at 0).
    k = config.features.index("submit_h")
    assert all(h["best_weights"][k] >= 0 and h["mean_weights"][k] >= 0 for h in result.history)


def test_split_experiment_reports_the_test_window_against_the_rules(tmp_path: Path) -> None:
    workload = replace(bursty(3, n=800), name="bursty")
    config = SearchConfig(population=4, generations=2, sequences=2, sequence_jobs=200, validation_replays=2)
    result = split_experiment(workload, config, CORES, seeds=(0, 1))
    assert result["windows"] == {"train": 400, "validation": 200, "test": 200}
    assert {"easy", "easy-sjf", "easy-saf", "easy-wfp3", "easy-unicep", "easy-f1", "easy-f4"} <= set(result["rules"])
    _, _, test = split_by_jobs(workload)
    assert result["rules"]["easy-sjf"]["test_bsld"] == mean_bsld(simulate_policy(test, "easy-sjf", CORES).schedule)
    for s in result["searches"]:
        found = ScoringFunction(
            tuple(s["config"]["features"]), tuple(parse_weights(parse_policy(s["spec"]).params["weights"]))
        )
        assert s["test_bsld"] == mean_bsld(simulate_scores(test, found, CORES))
    text = report_markdown([result])
    assert "### bursty" in text and "against the best rule on test" in text and "| easy-wfp3 |" in text
    assert "the rule the validation window picks" in text
    # The command rewrites report.md from the JSONs of its folder.
    (tmp_path / "bursty.json").write_text(json.dumps(result))
    main(["--report-only", "--out", str(tmp_path)])
    assert (tmp_path / "report.md").read_text().endswith(text)
