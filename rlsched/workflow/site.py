"""A trace seen through a site's daemon config: its class rule and its VO list.

A model fits a daemon only when its input columns mean what the daemon's mean: the same VO
list (the width and order of the VO one-hot) and the same class rule (which jobs count as
interactive).  :func:`site_view` re-derives both columns of a workload from a daemon config,
so that ``rlsched train --config`` learns on exactly what the live daemon will feed the model:

- the class by the config's :class:`~rlsched.core.classify.ClassRule` applied to what
  a live scheduler knows at submit — the time limit (the trace's requested time), the QOS and
  the partition — never the runtime;
- the VO by the config's account → VO mapping (:class:`~rlsched.core.classify.VOMapping`),
  the workload's VO names taken as the accounts.

A plain SWF trace has no QOS and numbers its partitions: the rule then sees ``qos=""`` and the
partition number as text.  A trace with a sidecar (``rlsched history import``) carries the real
names (:attr:`~rlsched.sim.workload.Workload.id_names`), and without a config it is classed by the rule
its import recorded (:func:`trace_class_rule`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.classify import ClassRule, VOMapping
from rlsched.sim.workload import Workload
from rlsched.sim.workload import classify_by_rule as classify


@dataclass(frozen=True)
class Site:
    """The part of a daemon config a trained model must agree with."""

    class_rule: ClassRule
    vos: tuple[str, ...]
    vo_shares: tuple[float, ...] | None
    mapping: VOMapping
    source: str


def load_site(path: str | os.PathLike[str]) -> Site:
    """The class rule and VO list of the daemon config at ``path`` (one-line ValueError when bad)."""
    from rlsched.daemon.config import load_config

    config = load_config(Path(path))
    backend: Any = config.backend
    rule = getattr(backend, "class_rule", None)
    if not isinstance(rule, ClassRule):
        raise ValueError(f"{path}: the {backend.kind} backend has no class rule")
    if not backend.vos:
        raise ValueError(
            f"{path}: key 'backend.vos': a trained model needs a fixed VO list; set [backend] vos and default_vo"
        )
    return Site(rule, tuple(backend.vos), backend.vo_shares, config.vo_mapping(), str(path))


def trace_class_rule(workload: Workload) -> ClassRule:
    """The rule a trace without a daemon config is classed by: the one its import recorded (``rlsched history
    import --config``), else the default (time limit <= 900 s)."""
    if workload.class_rule is None:
        return ClassRule()
    try:
        return ClassRule.from_dict(workload.class_rule)
    except ValueError as exc:
        raise ValueError(f"workload {workload.name!r}: the recorded {exc}") from None


def site_view(
    workload: Workload, site: Site, *, qos: Sequence[str] | None = None, partition: Sequence[str] | None = None
) -> Workload:
    """``workload`` with its classes by the site's rule and its VOs by the site's VO list and shares."""
    names = workload.vo_names or tuple(str(k) for k in range(int(workload.vo.max()) + 1 if len(workload) else 0))
    index = np.array([site.mapping.index(name) for name in names] or [0], dtype=np.int64)
    vo = index[workload.vo] if len(workload) else workload.vo
    return replace(
        workload,
        job_class=classify(workload, site.class_rule, qos=qos, partition=partition),
        vo=vo,
        vo_names=site.vos,
        vo_shares=site.vo_shares,
    )
