"""Alea's extended SWF (the MetaCentrum data sets of the Alea simulator, e.g. ``wagap-2013.swf``).

Each job line holds the 18 SWF fields, then three more:

19. ``{c1,c2,…}`` the ids of the CPUs the job ran on;
20. the PBS queue's name (``q_2h``, ``q_1d``, ``q_2w``, ``backfill``, …: MetaCentrum's queues encode the
    walltime class);
21. the PBS resource request (``nodes:ppn=N[:property…][#excl]``).

There is no ``;`` header, so no ``MaxProcs``: the machine is described by a ``<file>.machines`` file beside
the trace (per line: id, cluster name, nodes, CPUs per node, …).  Field 2 is an absolute Unix epoch.

What :func:`parse_alea` keeps and what it drops (the reader says so in ``Workload.header``):

- fields 1–18 as SWF, except the submit time, which becomes seconds since the first job's submission
  (``Workload.unix_start_time`` keeps the epoch, as ``UnixStartTime`` does for a PWA log);
- the queue name becomes the ``queue`` column (ids by sorted name, names in ``Workload.id_names["queue"]``;
  field 15 of these files is 1 for every job);
- the machine size: the sum of nodes × CPUs per node of the ``.machines`` file, when there is one;
- dropped: the CPU ids (a rigid pool does not place jobs on CPUs) and the resource request (its node
  count, CPUs per node, node properties and exclusivity: the simulator's pool is one flat set of cores,
  so a job that asked for one cluster's nodes may run on the other's).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from rlsched.errors import RlschedError

#: The columns after the 18 SWF fields, in file order.
EXTRA_FIELDS = ("cpu_ids", "queue_name", "resource_request")
#: What the reader drops, named in the workload's header (``Dropped``).
DROPPED_FIELDS = "CPU ids (field 19), PBS resource request (field 21: nodes, ppn, node properties, #excl)"


class AleaFormatError(RlschedError, ValueError):
    """A malformed line of an extended SWF file (the message names the file and the line)."""


def is_alea(text: str) -> bool:
    """True when the first job line has the extended fields (its 19th token is a ``{…}`` CPU list)."""
    for line in text.split("\n", 200)[:200]:
        content = line.partition(";")[0].split()
        if content:
            return len(content) == 18 + len(EXTRA_FIELDS) and content[18].startswith("{")
    return False


def parse_alea(text: str, display: str, n_fields: int) -> tuple[NDArray[np.float64], dict[int, str]]:
    """The job lines as an (n, 18) float table with the queue column re-numbered by name, and the names."""
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    queues: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        tokens = line.partition(";")[0].split()
        if not tokens:
            continue
        if len(tokens) != n_fields + len(EXTRA_FIELDS):
            raise AleaFormatError(
                f"{display}:{number}: expected {n_fields + len(EXTRA_FIELDS)} fields (18 SWF "
                f"fields, CPU ids, queue, request), found {len(tokens)}"
            )
        if not (tokens[n_fields].startswith("{") and tokens[n_fields].endswith("}")):
            raise AleaFormatError(
                f"{display}:{number}: field {n_fields + 1} is not a {{…}} CPU list: {tokens[n_fields][:40]!r}"
            )
        rows.append(tokens[:n_fields])
        line_numbers.append(number)
        queues.append(tokens[n_fields + 1])
    if not rows:
        return np.zeros((0, n_fields)), {}
    try:
        table = np.array(rows, dtype=np.float64)
    except ValueError:
        for number, fields in zip(line_numbers, rows, strict=True):
            for column, token in enumerate(fields):
                try:
                    float(token)
                except ValueError:
                    raise AleaFormatError(
                        f"{display}:{number}: field {column + 1} is not a number: {token[:40]!r}"
                    ) from None
        raise
    names = sorted(set(queues))
    ids = {name: k for k, name in enumerate(names)}
    table[:, 14] = np.array([ids[q] for q in queues], dtype=np.float64)
    return table, dict(enumerate(names))


def machine_cores(trace: Path) -> int | None:
    """Total CPUs in ``<trace>.machines`` (id, name, nodes, CPUs per node, …); None without one."""
    path = trace.with_name(trace.name + ".machines")
    if not path.is_file():
        return None
    total = 0
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        try:
            total += int(tokens[2]) * int(tokens[3])
        except (IndexError, ValueError):
            raise AleaFormatError(
                f"{path.name}:{number}: expected 'id name nodes cpus_per_node …', got {line.strip()[:60]!r}"
            ) from None
    return total or None
