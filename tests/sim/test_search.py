"""Direct policy search (rlsched.sim.search): deterministic, improving, and its models reload as they were."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.objective import Objective
from rlsched.core.policies import (
    BuildContext,
    PolicyError,
    PolicySpec,
    build_agent,
    load_model,
    load_policy,
    parse_policy,
    read_policy_spec,
    save_scored_model,
)
from rlsched.core.scoring import LOG_FAMILY, ScoredRankAgent, ScoringFunction, parse_weights
from rlsched.core.view import ClusterView, FinishedJobs, JobClass, PendingJobs, RunningJobs
from rlsched.sim.boost import BoostSettings
from rlsched.sim.engine import DEFAULT_OVERRUN, Schedule
from rlsched.sim.policies import simulate_policy
from rlsched.sim.search import (
    RATIO_REFERENCE,
    SearchConfig,
    SearchResult,
    _fitness,
    _Part,
    _replay_part,
    _sequences,
    jittered_replays,
    main,
    mean_bsld,
    report_markdown,
    score_key,
    scored_spec,
    search_scoring,
    searched_for,
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
    assert a.function == b.function and a.selection_score == b.selection_score and a.history == b.history
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
    assert result.selection_score < 0.1 * longest_first
    assert result.selection_score < 2 * shortest_first < 0.4 * first_come
    # Per generation: every member, easy-sjf on each sequence (the ratio's reference), two validation replays.
    assert result.evaluations == config.generations * (config.population + config.sequences + 2)


def test_scored_spec_runs_on_the_fast_path_with_the_search_s_order(windows: tuple[Workload, Workload]) -> None:
    train, validation = windows
    result = search_scoring(train, validation, small_config(generations=2), CORES)
    ran = simulate_policy(validation, result.spec, CORES)
    assert ran.agent is None  # the static key, not an agent
    same = simulate_scores(validation, result.function, CORES)
    assert np.array_equal(ran.schedule.start, same.start)
    assert mean_bsld(ran.schedule) == result.selection_score


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
    assert meta["search"]["validation_bsld"] == result.selection_score
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
    assert result.selection_score == np.mean([mean_bsld(simulate_scores(r, result.function, CORES)) for r in replays])
    assert set(result.rules) == {"sjf", "saf", "f4-size", "fcfs"}
    best_rule = min(result.rules, key=lambda name: result.rules[name]["train_bsld"])
    assert result.history[0]["mean_weights"] == result.rules[best_rule]["weights"]
    # What the search keeps is never worse on validation than any of the family's rules.
    assert result.selection_score <= min(r["validation_bsld"] for r in result.rules.values())
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


#: P-grid's responsiveness with interactive jobs counting three times: higher is better.
W3 = Objective("W", {"interactive": 3.0})


def w3(schedule: Schedule) -> float:
    return W3.score(schedule.run, schedule.wait, schedule.workload.job_class)


def test_the_fitness_is_the_objective_s_score_of_the_replay(windows: tuple[Workload, Workload]) -> None:
    """With W (interactive ×3) the fitness is W's own score of the replayed schedule, class weights included
    (negated: the search minimises), not the mean bounded slowdown; ``ratio`` is easy-sjf's W over its own."""
    train = windows[0]
    windows_ = [train.select(np.arange(0, 300)), train.select(np.arange(300, 600))]
    parts = [_Part(w) for w in windows_]
    function = ScoringFunction(LOG_FAMILY, (1.0, 0.3, 0.0, 0.2))
    runs = [simulate_scores(p, function, CORES) for p in windows_]
    run, wait = np.concatenate([r.run for r in runs]), np.concatenate([r.wait for r in runs])
    classes = np.concatenate([p.job_class for p in windows_])
    assert {JobClass.INTERACTIVE, JobClass.BATCH} <= set(classes.tolist())  # the weight has something to weigh
    pooled = _fitness(parts, function, SearchConfig(objective=W3, fitness="pooled"), CORES, DEFAULT_OVERRUN, None)
    assert pooled == -W3.score(run, wait, classes) != -Objective("W").score(run, wait, classes)
    reference = [w3(simulate_scores(p, RATIO_REFERENCE, CORES)) for p in windows_]
    ratio = _fitness(parts, function, SearchConfig(objective=W3), CORES, DEFAULT_OVERRUN, reference)
    assert ratio == pytest.approx(np.sqrt(reference[0] / w3(runs[0]) * reference[1] / w3(runs[1])), rel=1e-12)
    # The default objective is the mean bounded slowdown over all jobs, as it always was.
    assert _fitness(parts, function, SearchConfig(fitness="pooled"), CORES, DEFAULT_OVERRUN, None) == pytest.approx(
        float(np.mean(np.maximum((wait + run) / np.maximum(run, 10.0), 1.0))), rel=1e-12
    )


def test_a_warm_up_is_replayed_but_not_scored(windows: tuple[Workload, Workload]) -> None:
    """Each sequence starts from the state the member's own order left after ``warmup_jobs`` jobs; the fitness
    reads only the jobs after them.  Without a warm-up the draws are those of every earlier search."""
    train = windows[0]
    config = SearchConfig(sequences=3, sequence_jobs=200, warmup_jobs=150, seed=2, fitness="pooled")
    function = ScoringFunction(LOG_FAMILY, (1.0, 0.3, 0.0, 0.2))
    parts = _sequences(train, config, 0)
    assert len(parts) == 3 and all(len(p.workload) == 350 and p.warmup == 150 for p in parts)
    tails = []
    for part in parts:
        whole = simulate_scores(part.workload, function, CORES)
        scored = _replay_part(part, function, config, CORES, DEFAULT_OVERRUN)
        assert len(scored.workload) == 200 and np.array_equal(scored.wait, whole.wait[150:])
        assert np.array_equal(scored.workload.submit, part.workload.submit[150:])
        tails.append(scored)
    # Not the replay of the same 200 jobs from an empty machine: the warm-up left a queue behind.
    alone = simulate_scores(parts[0].workload.window(150, 350), function, CORES)
    assert not np.array_equal(alone.wait, tails[0].wait)
    run, wait = np.concatenate([t.run for t in tails]), np.concatenate([t.wait for t in tails])
    fitness = _fitness(parts, function, config, CORES, DEFAULT_OVERRUN, None)
    assert fitness == pytest.approx(float(np.mean(np.maximum((wait + run) / np.maximum(run, 10.0), 1.0))), rel=1e-12)
    cold = _sequences(train, replace(config, warmup_jobs=0), 0)
    starts = np.sort(np.random.default_rng([2, 0, 1]).integers(0, len(train) - 200 + 1, size=3))
    assert [p.warmup for p in cold] == [0, 0, 0]
    assert [float(p.workload.submit[0]) for p in cold] == [float(train.submit[s]) for s in starts]
    with pytest.raises(ValueError, match="warmup_jobs"):
        SearchConfig(warmup_jobs=-1)
    # The record of a search without a warm-up is what it was before the setting.
    found = search_scoring(train, windows[1], small_config(generations=1), CORES)
    assert "warmup_jobs" not in found.summary()["config"]
    warm = search_scoring(train, windows[1], small_config(generations=1, warmup_jobs=100), CORES)
    assert warm.summary()["config"]["warmup_jobs"] == 100


def test_a_search_that_selects_on_the_training_window_never_reads_the_validation_window(
    windows: tuple[Workload, Workload],
) -> None:
    """``select_on = "train"``: the candidates are replayed on the whole training window, as recorded and jittered,
    and the validation window is not read at all, so train's seed choice and verdict on it see new data."""
    train, validation = windows
    config = small_config(generations=2, select_on="train")
    found = search_scoring(train, validation, config, CORES)
    # Any other validation window (here an empty one) gives the same search.
    other = search_scoring(train, validation.select(np.zeros(len(validation), dtype=bool)), config, CORES)
    assert (other.function, other.selection_score, other.chosen) == (
        found.function,
        found.selection_score,
        found.chosen,
    )
    assert other.history == found.history and other.rules == found.rules
    replays = jittered_replays(train, config.validation_replays, config.jitter_s)
    assert found.selection_score == np.mean([mean_bsld(simulate_scores(r, found.function, CORES)) for r in replays])
    # The record names the selection's scores for what they are: the training window's "train_bsld" is the
    # family's start (the window as recorded), the selection's "selection_bsld" (its replays).
    summary = found.summary()
    assert summary["selection_bsld"] == found.selection_score and "validation_bsld" not in summary
    assert summary["config"]["select_on"] == "train"
    assert all({"train_bsld", "selection_bsld"} <= set(rule) for rule in found.rules.values())
    assert any(key.startswith("selection_") for key in found.history[0])
    # On validation (the default) it is another search, and its record is what it was before the setting.
    default = search_scoring(train, validation, small_config(generations=2), CORES)
    assert default.selection_score != found.selection_score
    assert "select_on" not in default.summary()["config"] and "validation_bsld" in default.summary()
    with pytest.raises(ValueError, match="select_on"):
        SearchConfig(select_on="test")  # type: ignore[arg-type]
    # The split experiment's report sets each search's validation score beside the rules': it refuses the setting.
    with pytest.raises(ValueError, match="select_on must be 'validation'"):
        split_experiment(train, config)


def blocks(n_blocks: int, seed: int) -> Workload:
    """Every 2,000 s a job holds the whole machine for 1,000 s; behind it queue eight interactive jobs of about
    100 s on one core, then eight 1–3 s jobs on all eight.  Shortest first (the bounded slowdown's choice: the
    short jobs' slowdown grows by 10 per 100 s they wait) runs the tiny ones first; W, where a 2-s job that
    already waited 1,000 s is at W ≈ 0 either way and the interactive jobs count thrice, runs the interactive
    ones first."""
    rng = np.random.default_rng(seed)
    submit, run, procs, job_class = [], [], [], []
    for b in range(n_blocks):
        t0 = b * 2000.0
        submit += [t0, *(t0 + 1 + np.arange(8)), *(t0 + 9 + np.arange(8))]
        run += [1000.0, *rng.uniform(80, 120, 8), *rng.uniform(1, 3, 8)]
        procs += [CORES, *[1] * 8, *[CORES] * 8]
        job_class += [JobClass.BATCH, *[JobClass.INTERACTIVE] * 8, *[JobClass.BATCH] * 8]
    return make_workload(np.array(submit), np.array(run), np.array(procs), max_procs=CORES, job_class=job_class)


def test_a_search_for_w_picks_by_w_where_bounded_slowdown_picks_otherwise() -> None:
    train, validation = blocks(6, 1), blocks(4, 2)
    config = SearchConfig(population=6, generations=2, sequences=1, sequence_jobs=0, validation_replays=1)
    by_bsld = search_scoring(train, validation, config, CORES)
    by_w = search_scoring(train, validation, replace(config, objective=W3), CORES)
    assert by_bsld.chosen == ("rule:sjf", -1) and by_w.chosen != by_bsld.chosen
    found_w = simulate_scores(validation, by_w.function, CORES)
    found_bsld = simulate_scores(validation, by_bsld.function, CORES)
    # Each is better by its own objective, and the W search records its W on validation.
    assert by_w.selection_score == w3(found_w) > w3(found_bsld)
    assert mean_bsld(found_bsld) < mean_bsld(found_w)
    # Its start among the family's rules is W's best on the train window (first come, first served here).
    fcfs = ScoringFunction(LOG_FAMILY, tuple(by_w.rules["fcfs"]["weights"]))
    assert by_w.rules["fcfs"]["train_W"] == w3(simulate_scores(train, fcfs, CORES))
    assert by_w.history[0]["mean_weights"] == by_w.rules["fcfs"]["weights"]
    assert by_bsld.history[0]["mean_weights"] == by_bsld.rules["sjf"]["weights"]


def test_the_model_records_its_objective_and_an_older_one_reads_as_bsld(tmp_path: Path) -> None:
    config = SearchConfig(population=4, generations=1, sequences=1, sequence_jobs=0, validation_replays=1)
    found = search_scoring(blocks(3, 1), blocks(2, 2), replace(config, objective=W3), CORES)
    found.save(tmp_path / "w.npz")
    _, meta = read_policy_spec(tmp_path / "w.npz")
    search = meta["search"]
    assert search["objective"] == {"name": "W", "class_weights": {"interactive": 3.0}} and searched_for(search) == W3
    assert search["validation_W"] == found.selection_score and "validation_bsld" not in search
    assert {"train_W", "validation_W"} <= set(search["rules"]["sjf"]) and "objective" not in search["config"]
    # A file written before the search had objectives: it loads, and its record reads as bounded slowdown.
    old = tmp_path / "old.npz"
    save_scored_model(found.spec, old, search={"validation_bsld": 21.5, "chosen": ["mean", 0]})
    agent, spec = load_model(old)
    assert isinstance(agent, ScoredRankAgent) and spec == found.spec
    _, old_meta = read_policy_spec(old)
    assert searched_for(old_meta["search"]) == Objective()
    assert old_meta["search"][score_key("validation", searched_for(old_meta["search"]))] == 21.5


@pytest.mark.parametrize(
    ("fitness", "train_mean", "train_best"),
    [
        ("ratio", [1.0, 1.0410403270298572], [0.8943384980509235, 0.8031295808085368]),
        ("pooled", [12.195215463464102, 9.988369089302331], [11.157594156885114, 7.672466720974078]),
    ],
)
def test_a_bsld_search_records_bsld_and_finds_what_it_found_before_objectives(
    windows: tuple[Workload, Workload], fitness: str, train_mean: list[float], train_best: list[float]
) -> None:
    """The default objective's numbers, bit for bit as measured before the search had an objective (main at
    3acc461): committed bsld results do not move."""
    train, validation = windows
    config = SearchConfig(
        population=4, generations=2, sequences=2, sequence_jobs=200, validation_replays=2, seed=1, fitness=fitness
    )
    found = search_scoring(train, validation, config, CORES)
    summary = found.summary()
    assert summary["objective"] == {"name": "bsld", "class_weights": {}}
    assert summary["validation_bsld"] == found.selection_score == 19.17757827945461
    assert found.chosen == ("rule:saf", -1)
    assert [h["train_mean"] for h in found.history] == train_mean
    assert [h["train_best"] for h in found.history] == train_best
    assert [h["validation_mean"] for h in found.history] == [20.196201252926755, 20.3140203023719]
    assert {name: rule["train_bsld"] for name, rule in found.rules.items()} == {
        "sjf": 18.362459444262587,
        "saf": 20.431637144126647,
        "f4-size": 19.372417273930534,
        "fcfs": 231.88540461837596,
    }


def test_a_boost_mode_search_replays_everything_in_boost_mode(windows: tuple[Workload, Workload]) -> None:
    """With boost settings the start, the fitness and the selection replay as the daemon deploys (the top
    ``max_boosted`` over FIFO), which scores otherwise than the gate-mode order of the same function."""
    train, validation = windows
    boost = BoostSettings(poll_interval_s=60.0, max_boosted=2)
    config = SearchConfig(
        population=4, generations=1, sequences=2, sequence_jobs=200, validation_replays=2, seed=1, boost=boost
    )
    found = search_scoring(train, validation, config, CORES)

    def boosted(w: Workload, spec: PolicySpec) -> float:
        return mean_bsld(simulate_policy(w, spec, CORES, mode="boost", boost=boost).schedule)

    replays = jittered_replays(validation, 2, config.jitter_s)
    assert found.selection_score == np.mean([boosted(r, found.spec) for r in replays])
    gate = np.mean([mean_bsld(simulate_scores(r, found.function, CORES)) for r in replays])
    assert gate != found.selection_score
    sjf = result_rule_spec(found, "sjf")
    assert found.rules["sjf"]["train_bsld"] == boosted(train, sjf)
    assert found.summary()["config"]["boost"]["max_boosted"] == 2
    # A gate-mode record says nothing of boost (as every record before the setting).
    assert "boost" not in search_scoring(train, validation, replace(config, boost=None), CORES).summary()["config"]


def result_rule_spec(found: SearchResult, rule: str) -> PolicySpec:
    """The spec of the family's ``rule`` as ``found``'s search replayed it."""
    function = ScoringFunction(found.config.features, tuple(found.rules[rule]["weights"]))
    return scored_spec(function, "requested", found.config.backfill)
