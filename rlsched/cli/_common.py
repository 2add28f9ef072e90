"""What the CLI's commands share: loading a workload, the class rule, a progress bar, output-file checks.

``sim``, ``train``, ``evaluate``, ``sweep``, ``trace`` and ``learning`` import these from here, so no command
module imports another for its helpers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import click

from rlsched.core.view import INTERACTIVE_THRESHOLD_S
from rlsched.sim.workload import Workload

#: Name of the embedded default workload (synthetic, calibrated to the LAL trace of P-grid).
DEFAULT_WORKLOAD = "lal"


def load_workload(spec: str, *, seed: int = 0, max_procs: int | None = None, scale: float | None = None) -> Workload:
    """``lal`` (the embedded LAL-like generator, ``scale`` of its jobs), a trace path, or a trace name.

    A trace with a sidecar (``rlsched history import``) gets its VOs and classes from it (:func:`read_trace`).
    A workload without a job is a ValueError.
    """
    if spec == DEFAULT_WORKLOAD:
        from rlsched.sim.workloads.lal import generate_lal

        workload = generate_lal(seed) if scale is None else generate_lal(seed, scale=scale)
    else:
        from rlsched.sim.traces.sidecar import read_trace
        from rlsched.sim.traces.swf import resolve_trace

        workload = read_trace(resolve_trace(spec))  # an imported history trace brings its VOs and classes
    if len(workload) == 0:  # a table of dashes and exit 0 would hide it (issue 16)
        raise ValueError(
            f"workload {spec!r} holds no job (an empty SWF, comments only, or every record "
            "dropped: see `rlsched trace info`)"
        )
    if max_procs is not None and max_procs != workload.max_procs:
        workload = workload.with_max_procs(max_procs)
    return workload


#: ``--class-by`` values: the time limit (what a live scheduler knows at submit, the daemon's rule) or the runtime.
CLASS_BY = ("time-limit", "runtime")


def classed(workload: Workload, class_by: str = "time-limit") -> tuple[Workload, str]:
    """``workload`` with its classes by one rule, and the text naming that rule (every output prints it).

    ``time-limit`` (the default everywhere, as in ``train`` and ``evaluate``): the rule the trace's import
    recorded, else the daemon's default — interactive iff the time limit is at most 900 s — so that the
    counts agree with what the daemon will see.  ``runtime``: P-grid §4.2's rule on the actual runtime
    (interactive iff < 900 s), which no live scheduler knows at submit: for reproducing the papers.
    """
    from rlsched.sim.workload import classify_by_runtime, with_class_rule
    from rlsched.workflow.evaluate import rule_text
    from rlsched.workflow.site import trace_class_rule

    if class_by == "runtime":
        runtime_classes = classify_by_runtime(workload.run)
        return (
            replace(workload, job_class=runtime_classes),
            f"the runtime (interactive iff runtime < {INTERACTIVE_THRESHOLD_S:g} s, P-grid §4.2; not the "
            "daemon's rule)",
        )
    if class_by != "time-limit":
        raise ValueError(f"--class-by: expected one of {', '.join(CLASS_BY)}, got {class_by!r}")
    rule = trace_class_rule(workload)
    return with_class_rule(workload, rule), rule_text(rule)


class Progress(Protocol):
    """What :func:`progress_bar` yields: ``done`` so far, and when they change the ``total`` and the ``label``
    (what is running now).  A plain ``Callable[[int], None]`` progress (the simulator's) is one of these."""

    def __call__(self, done: int, total: int | None = None, label: str | None = None) -> None: ...


@contextmanager
def progress_bar(total: int, label: str, quiet: bool = False, show_eta: bool = True) -> Iterator[Progress | None]:
    """A progress callback drawing a bar on stderr when it is a terminal and not ``quiet``; None otherwise.
    ``show_eta=False`` when the caller puts its own estimate in the label (click's is linear in the count)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True, show_eta=show_eta) as bar:
        shown = 0

        def update(done: int, total: int | None = None, label: str | None = None) -> None:
            nonlocal shown
            if total is not None:
                bar.length = total
            if label is not None:
                bar.label = label
            bar.update(done - shown)
            shown = done

        yield update


def check_output_file(path: Path | None, option: str) -> None:
    """Refuse, before any work, an output file whose folder is missing or not writable (one line naming
    ``option``).  Folders are not created: a typo in a path should not leave new directories behind."""
    if path is None or str(path) == "-":
        return
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise click.BadParameter(f"{path} is a directory; give a file name", param_hint=option)
    if not folder.is_dir():
        raise click.BadParameter(f"the folder {folder} does not exist (create it first)", param_hint=option)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise click.BadParameter(f"the folder {folder} is not writable", param_hint=option)
