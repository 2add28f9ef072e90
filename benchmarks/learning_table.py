"""What the learning-table diagnostics share: a committed table, its rows by name, and each row's windows, cut as
the table cut them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlsched.cli._common import load_workload
from rlsched.core.objective import Objective
from rlsched.core.policies.spec import format_policy, split_policy
from rlsched.sim.workload import Workload, with_class_rule
from rlsched.workflow.learning import LEARNED_POLICY, TRACES, label_runtime, learned_spec, table_jobs
from rlsched.workflow.site import trace_class_rule
from rlsched.workflow.split import Deployment, TimeSplit
from rlsched.workflow.train import train_plan, validation_score
from rlsched.workflow.train_task import TrainResult, TrainTask


def add_table_options(parser: argparse.ArgumentParser) -> None:
    """``--table`` (a committed table's folder) and ``--traces`` (which of its rows), as every diagnostic takes."""
    parser.add_argument("--table", type=Path, default=Path("docs/results/learning"))
    parser.add_argument(
        "--traces", default="", help="comma-separated trace names or paths (default: all of the table's)"
    )


@dataclass(frozen=True)
class CommittedTable:
    """A committed ``rlsched learning`` table as its ``results.json`` records it."""

    settings: dict[str, Any]
    rows: list[dict[str, Any]]

    @property
    def objective(self) -> Objective:
        return Objective.from_dict(self.settings["objective"])

    @property
    def deployment(self) -> Deployment:
        return Deployment(**self.settings["deployment"])

    def learned_spec(self, extra: str = "") -> str:
        """The spec the table trained as sarsa-esn (its runtime input included), with ``extra``'s parameters
        (``k=v,…``) over it: a variant may set the runtime input again."""
        label = str(self.settings.get("learned_policy", LEARNED_POLICY))
        name, params = split_policy(learned_spec(label_runtime(label)))
        return format_policy(name, {**params, **split_policy(f"{name}:{extra}")[1]})

    @property
    def sign(self) -> float:
        """-1 where higher is better: ``min(key=sign * score)`` is the best."""
        return -1.0 if self.objective.higher_is_better else 1.0

    def over_best(self, score: float, best: float) -> float:
        """``score`` relative to ``best``'s, oriented so that above 1 is worse whichever way the objective goes."""
        return score / best if self.sign > 0 else best / score

    def chosen(self, traces: str) -> list[dict[str, Any]]:
        """The rows ``traces`` names (comma-separated; a row's name, or a path ending in it such as
        ``metacentrum/wagap-2013``); every row when it is empty."""
        wanted = [t for t in traces.split(",") if t]
        return [
            r for r in self.rows if not wanted or any(w == r["trace"] or w.endswith("/" + r["trace"]) for w in wanted)
        ]


def replay_cores(row: dict[str, Any]) -> int | None:
    """The cores a row's windows were replayed on: None at the trace's recorded size."""
    return int(row["cores"]) if row["core_fraction"] < 1 else None


def read_table(folder: Path) -> CommittedTable:
    data = json.loads((folder / "results.json").read_text())
    return CommittedTable(data["settings"], data["traces"])


def trace_spec(row: dict[str, Any]) -> str:
    """How ``rlsched learning`` named a row's trace (``metacentrum/wagap-2013`` for the row ``wagap-2013``; its
    ``rows/`` file is named after it): one of the nine, or a name the loader knows by itself (the synthetic
    ``lal``)."""
    return next((n for n in TRACES if n.endswith(row["trace"])), row["trace"])


def table_windows(row: dict[str, Any], settings: dict[str, Any]) -> dict[str, Workload]:
    """A trace's train, validation and test windows as the table replayed them (the same jobs and cores; the
    validation and test windows classed by the train window's rule, as train classes them)."""
    whole = _table_trace(row, settings)
    split = TimeSplit.from_dict(settings["split"])
    train = split.window(whole, "train")
    rule = trace_class_rule(train)
    return {
        "train": train,
        "validation": with_class_rule(split.window(whole, "validation"), rule),
        "test": with_class_rule(split.window(whole, "test"), rule),
    }


def table_whole(row: dict[str, Any], settings: dict[str, Any]) -> tuple[Workload, dict[str, tuple[int, int]]]:
    """A trace's jobs as the table replayed them, all classed by the train window's rule, and each window's rows
    (``whole.window(*bounds["test"])`` is the test window): for a replay that looks back across a window's start."""
    whole = _table_trace(row, settings)
    split = TimeSplit.from_dict(settings["split"])
    rule = trace_class_rule(split.window(whole, "train"))
    return with_class_rule(whole, rule), split.bounds(len(whole))


def _table_trace(row: dict[str, Any], settings: dict[str, Any]) -> Workload:
    return table_jobs(
        lambda spec, procs: load_workload(spec, max_procs=procs), trace_spec(row), row, settings.get("max_jobs")
    )


def table_train_plan(
    table: CommittedTable,
    row: dict[str, Any],
    windows: dict[str, Workload],
    policy: str,
    model_path: Path,
    pretrain_rule: str | None = None,
) -> list[TrainTask]:
    """``policy``'s training on a row's train window as the table trained its sarsa-esn: the same seeds, cores,
    passes, mode and objective, selected on the row's validation window."""
    settings = table.settings
    return train_plan(
        windows["train"],
        policy,
        model_path,
        seeds=tuple(settings["seeds"]),
        cores=replay_cores(row),
        validation=windows["validation"],
        epochs=int(settings["epochs"]),
        deployment=table.deployment,
        objective=table.objective,
        pretrain_rule=pretrain_rule,
    )


def scores_on(
    window: Workload, tasks: Sequence[TrainTask], results: Sequence[TrainResult], folder: Path
) -> list[float]:
    """Each seed's model (``results``, one per task) replayed on ``window`` as train scores it on validation: the
    task's mode, cores and objective.  The model files are written to ``folder``."""
    scores = []
    for task, result in zip(tasks, results, strict=True):
        seed_file = folder / f"seed{result.seed}.npz"
        seed_file.write_bytes(result.model)
        scores.append(validation_score(seed_file, replace(task, validation=window)))
    return scores
