"""What :mod:`rlsched.workflow.train` trains and returns: :class:`TrainTask`, :class:`TrainResult`, :class:`TrainError`.

In a module of their own so that a trainer of another family (:mod:`rlsched.workflow.train_scored`) can take a
task and return a result while :func:`rlsched.workflow.train.train_one` dispatches to it, without an import cycle.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.objective import Objective
from rlsched.core.policies import PolicySpec
from rlsched.core.policies.registry import PRETRAIN_EDF
from rlsched.core.view import Agent
from rlsched.errors import RlschedError
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun
from rlsched.sim.search import SearchConfig
from rlsched.sim.workload import Workload
from rlsched.workflow.split import Deployment, simulate_in


class TrainError(RlschedError, ValueError):
    """A problem with the training arguments or a checkpoint (one line for the user)."""


@dataclass(frozen=True)
class TrainTask:
    """One model to train: the workload (already seen through the site), the bound spec, where to checkpoint."""

    workload: Workload
    spec: PolicySpec
    model_path: Path
    checkpoint_path: Path | None = None
    checkpoint_every: int = 0
    cores: int | None = None
    overrun: Overrun = DEFAULT_OVERRUN
    fresh: bool = False
    #: Tests only: stop after this many chunks (a killed run), leaving the checkpoint behind.
    stop_after_chunks: int | None = None
    #: The validation window (seen through the same site as ``workload``); None: no selection, the last pass.
    validation: Workload | None = None
    epochs: int = 1
    #: The library's default is the simulator's gate mode, as before modes were chosen; the commands default
    #: to the config's mode, boost without one.
    deployment: Deployment = field(default_factory=lambda: Deployment("gate"))
    objective: Objective = field(default_factory=Objective)
    #: How ``pretrain_rule`` was chosen (``best``: the rules' scores on the training window), for the verdict.
    pretrain_choice: Mapping[str, Any] | None = None
    #: A ``scored`` task's search settings, its seed included (the scored spec has no ``seed`` parameter: the
    #: search sets every parameter it has); None for a learned task.
    search: SearchConfig | None = None

    @property
    def seed(self) -> int:
        if self.search is not None:
            return self.search.seed
        return int(self.spec.params.get("seed", 0))

    def validation_score(self, spec: PolicySpec, agent: Agent | None = None) -> float:
        """The objective of ``spec`` (its ``agent`` when given) replayed on the validation window in the task's
        deployment mode: how every seed, pass and search is selected and judged, like for like with the rules."""
        assert self.validation is not None
        ran = simulate_in(self.deployment, self.validation, spec, self.cores, overrun=self.overrun, agent=agent)
        return self.objective.score(ran.schedule.run, ran.schedule.wait, ran.schedule.workload.job_class)

    def fingerprint(self) -> str:
        """What the result depends on: the jobs, the policy, the chunking, the pool, the overrun rule."""
        w = self.workload
        digest = hashlib.sha256()
        for column in (w.submit, w.run, w.req_time, w.procs, w.job_class, w.vo):
            digest.update(np.ascontiguousarray(column).tobytes())
        spec = self.spec.to_dict()
        spec.pop("source", None)
        if spec["params"].get("pretrain_rule") == PRETRAIN_EDF:
            # The default, as every checkpoint written before the parameter existed meant: they still resume.
            del spec["params"]["pretrain_rule"]
        v = self.validation
        if v is not None:
            for column in (v.submit, v.run, v.req_time, v.procs, v.job_class, v.vo):
                digest.update(np.ascontiguousarray(column).tobytes())
        digest.update(
            json.dumps(
                {
                    "spec": spec,
                    "every": self.checkpoint_every,
                    "cores": self.cores,
                    "overrun": self.overrun,
                    "max_procs": w.max_procs,
                    "jobs": len(w),
                    "epochs": self.epochs,
                    "deployment": self.deployment.to_dict(),
                    "objective": self.objective.to_dict(),
                    "validation": len(v) if v is not None else None,
                    # Only when set: a learned task's fingerprint (its checkpoints') is as before the field.
                    **({"search": asdict(self.search)} if self.search is not None else {}),
                },
                sort_keys=True,
                default=str,
            ).encode()
        )
        return digest.hexdigest()[:16]


@dataclass
class TrainResult:
    """A trained model (its file's bytes) and what the training did."""

    seed: int
    model_path: Path
    model: bytes
    label: str
    jobs: int
    decisions: int
    chunks: int
    resumed_after_chunk: int | None
    seconds: float
    mean_w: float | None = None
    notes: list[str] = field(default_factory=list)
    epochs: int = 1
    #: The objective on the validation window after each pass (empty without a validation window).
    validation_scores: list[float] = field(default_factory=list)
    #: The pass whose model ``model`` is (from 0; the last one without a validation window).
    best_epoch: int = 0
    #: The agent's decisions so far at the end of each pass (a learned policy; empty for a search).
    pass_decisions: list[int] = field(default_factory=list)
    #: Whether the agent still followed its pretraining rule at the end of each pass: a pass whose model is
    #: that rule, not a learned ranking (in boost mode a decision is a job started from the ranking, so a
    #: train window where few jobs queue may not reach ``pretrain_decisions``).
    pass_pretraining: list[bool] = field(default_factory=list)

    @property
    def best_score(self) -> float | None:
        return self.validation_scores[self.best_epoch] if self.validation_scores else None

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A result pickled before a field existed (a learning row's pieces, rlsched.workflow.pieces) reads back
        # with that field's default rather than without the attribute.
        self.__dict__.update({"pass_decisions": [], "pass_pretraining": [], **state})

    @property
    def best_pass_pretraining(self) -> bool | None:
        """Whether the selected pass's model is still its pretraining rule (None: not recorded)."""
        return self.pass_pretraining[self.best_epoch] if len(self.pass_pretraining) > self.best_epoch else None
