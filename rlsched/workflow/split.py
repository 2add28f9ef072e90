"""The time split ``train`` and ``evaluate`` share, and the mode a policy is judged in.

**The split.**  A trace is cut, in submit order, into three consecutive windows by job count:
the *train* window (the agent learns on it, epoch after epoch), the *validation* window (the
epochs and seeds are compared on it, and the selected model is measured against every rule on
it: the verdict) and the *test* window (``rlsched evaluate`` reports it and nothing else).
Default: the last 25 % of the jobs is test, the 25 % before it validation, the first 50 %
train (``--split 50/25/25``).  The bounds are job indices of the trace as loaded (before any
filtering a report applies), so ``train`` and ``evaluate`` cut the very same jobs; a model
records them (:meth:`TimeSplit.windows`), and ``evaluate`` refuses a test window that overlaps
the windows a model was trained or selected on.

**The mode.**  The daemon deploys a ranking in ``boost`` mode (Nice offsets on the top
``max_boosted`` jobs, refreshed every ``poll_interval_s``, the batch system's order and
backfill doing the rest) or in ``gate`` mode (it holds and releases jobs).  A policy is judged
in the mode it will run in: :class:`Deployment` says which, from the daemon config (``[backend]
mode``; ``shadow`` is judged as ``boost``, the mode a shadowed ranking is deployed in) or
``--mode``; :func:`simulate_in` runs a policy in it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlsched.core.objective import Objective
from rlsched.core.policies import PolicySpec, resolve
from rlsched.core.view import Agent
from rlsched.errors import RlschedError
from rlsched.sim.boost import BASE_FIFO, DEFAULT_MAX_BOOSTED, BoostSettings
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun
from rlsched.sim.policies import PolicyRun, expand_site_files, simulate_policy, workload_vos
from rlsched.sim.workload import Workload

WINDOW_NAMES = ("train", "validation", "test")
DEFAULT_SPLIT = (50, 25, 25)
SimMode = Literal["gate", "boost"]
SIM_MODES: tuple[SimMode, ...] = ("gate", "boost")
#: The daemon's default ``[backend] poll_interval_s`` (``max_boosted``'s is the simulator's, Slurm's 32).
DEFAULT_POLL_INTERVAL_S = 10.0


class SplitError(RlschedError, ValueError):
    """A bad split or window (one line for the user)."""


@dataclass(frozen=True)
class TimeSplit:
    """Percentages of the jobs, in submit order, for the train, validation and test windows."""

    train: float = DEFAULT_SPLIT[0]
    validation: float = DEFAULT_SPLIT[1]
    test: float = DEFAULT_SPLIT[2]

    def __post_init__(self) -> None:
        parts = (self.train, self.validation, self.test)
        if any(not np.isfinite(p) or p < 0 for p in parts) or abs(sum(parts) - 100.0) > 1e-6:
            raise SplitError(
                f"--split {self.text()}: expected TRAIN/VALIDATION/TEST percentages >= 0 that sum to "
                "100 (e.g. 50/25/25)"
            )
        if self.train <= 0 or self.validation <= 0:
            raise SplitError(f"--split {self.text()}: the train and validation windows must not be empty")

    @classmethod
    def parse(cls, text: str) -> TimeSplit:
        """``"50/25/25"`` → ``TimeSplit(50, 25, 25)``; one-line :class:`SplitError` otherwise."""
        parts = text.split("/")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 3:
            raise SplitError(f"--split {text!r}: expected TRAIN/VALIDATION/TEST percentages (e.g. 50/25/25)")
        return cls(*values)

    def text(self) -> str:
        return "/".join(f"{p:g}" for p in (self.train, self.validation, self.test))

    def bounds(self, n: int) -> dict[str, tuple[int, int]]:
        """Each window's job rows ``[lo, hi)`` in a trace of ``n`` jobs."""
        cut1 = round(n * self.train / 100.0)
        cut2 = round(n * (self.train + self.validation) / 100.0)
        return {"train": (0, cut1), "validation": (cut1, cut2), "test": (cut2, n)}

    def window(self, workload: Workload, name: str) -> Workload:
        """One window of ``workload`` (named ``trace[train]`` …); one-line error when it is empty.

        The window keeps the whole trace's VO names (a trace that names none gets ``vo0`` … from
        all its jobs), so every window one-hots the VOs in the same columns.
        """
        lo, hi = self.bounds(len(workload))[name]
        if hi <= lo:
            raise SplitError(
                f"workload {workload.name!r}: the {name} window of --split {self.text()} holds no job "
                f"({len(workload)} jobs in all)"
            )
        named = workload if workload.vo_names else replace(workload, vo_names=workload_vos(workload))
        return named.window(lo, hi, name=f"{workload.name}[{name}]")

    def windows(self, workload: Workload) -> dict[str, dict[str, Any]]:
        """What a model records of each window: job rows and the submit times they span."""
        out: dict[str, dict[str, Any]] = {}
        for name, (lo, hi) in self.bounds(len(workload)).items():
            span = [float(workload.submit[lo]), float(workload.submit[hi - 1])] if hi > lo else None
            out[name] = {"jobs": [lo, hi], "submit_s": span}
        return out

    def to_dict(self) -> dict[str, float]:
        return {"train": self.train, "validation": self.validation, "test": self.test}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimeSplit:
        return cls(float(data["train"]), float(data["validation"]), float(data["test"]))


def describe_window(windows: Mapping[str, Any], name: str) -> str:
    """``jobs 0–199`` of a recorded window (for the tables' "trained on" notes)."""
    lo, hi = windows[name]["jobs"]
    return f"jobs {lo}–{hi - 1}" if hi > lo else "no job"


@dataclass(frozen=True)
class Deployment:
    """The mode a policy is simulated (and will be deployed) in, with boost mode's settings.

    ``base``: the order Slurm keeps for the jobs rlsched does not boost — ``fifo`` or a ``multifactor``
    spec (``multifactor:slurm_conf=/etc/slurm/slurm.conf``) — :class:`rlsched.sim.boost.BoostSettings`.
    """

    mode: SimMode = "boost"
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S
    max_boosted: int = DEFAULT_MAX_BOOSTED
    base: str = BASE_FIFO

    def __post_init__(self) -> None:
        if self.mode == "boost":
            try:
                self.settings()
            except ValueError as exc:
                raise SplitError(" ".join(str(exc).split())) from None

    def settings(self) -> BoostSettings:
        return BoostSettings(poll_interval_s=self.poll_interval_s, max_boosted=self.max_boosted, base=self.base)

    def label(self) -> str:
        if self.mode == "gate":
            return "gate"
        return (
            f"boost (top {self.max_boosted} re-ranked every {self.poll_interval_s:g} s over Slurm's {self.base} order)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "poll_interval_s": self.poll_interval_s,
            "max_boosted": self.max_boosted,
            "base": self.base,
        }


def deployment_of(
    config_mode: str,
    poll_interval_s: float | None = None,
    max_boosted: int | None = None,
    override: str | None = None,
    base: str | None = None,
) -> Deployment:
    """The deployment a config (``[backend] mode``) or ``--mode`` (``override``, wins) asks for."""
    mode = override or ("gate" if config_mode == "gate" else "boost")
    if mode not in SIM_MODES:
        raise SplitError(f"--mode {mode!r}: expected one of {', '.join(SIM_MODES)}")
    try:
        return Deployment(
            "gate" if mode == "gate" else "boost",
            float(poll_interval_s) if poll_interval_s is not None else DEFAULT_POLL_INTERVAL_S,
            int(max_boosted) if max_boosted is not None else DEFAULT_MAX_BOOSTED,
            base if base is not None else BASE_FIFO,
        )
    except SplitError as exc:
        raise SplitError(f"--boost-base {base!r}: {exc}" if base is not None else str(exc)) from None


@dataclass(frozen=True)
class SiteChoices:
    """What a daemon config says about judging: the deployment and the objective (``[agent]``)."""

    deployment: Deployment
    objective: Objective


def site_choices(
    config_path: str | Path | None,
    mode: str | None,
    objective: str | None,
    class_weights: Mapping[str, float] | None,
    boost_base: str | None = None,
) -> SiteChoices:
    """The deployment and objective from the config, the command line's options winning (``boost_base``:
    Slurm's order under the boosted jobs, ``fifo`` by default)."""
    config_mode, poll, boosted = "boost", None, None
    config_objective = Objective()
    if config_path is not None:
        from rlsched.daemon.config import load_config

        config = load_config(Path(config_path))
        config_mode, poll = config.mode, config.poll_interval_s
        boosted = getattr(config.backend, "max_boosted", None)
        config_objective = config.agent.objective
    chosen = Objective(
        objective if objective is not None else config_objective.name,
        dict(class_weights) if class_weights else dict(config_objective.class_weights),
    )
    return SiteChoices(deployment_of(config_mode, poll, boosted, mode, boost_base), chosen)


def simulate_in(
    deployment: Deployment,
    workload: Workload,
    spec: PolicySpec | str,
    cores: int | None = None,
    *,
    overrun: Overrun = DEFAULT_OVERRUN,
    agent: Agent | None = None,
    progress: Callable[[int], None] | None = None,
    name: str | None = None,
) -> PolicyRun:
    """:func:`rlsched.sim.policies.simulate_policy` in ``deployment``'s mode."""
    boost = deployment.settings() if deployment.mode == "boost" else None
    resolved = resolve(spec) if isinstance(spec, str) else spec
    if agent is None and resolved.name == "multifactor":
        # Its slurm_conf=/sshare= files read here: the boost path builds the agent from the spec, which
        # refuses file names (the gate path reads them itself).
        spec = expand_site_files(resolve(resolved))
    return simulate_policy(
        workload,
        spec,
        cores,
        mode=deployment.mode,
        boost=boost,
        overrun=overrun,
        agent=agent,
        progress=progress,
        name=name,
    )
