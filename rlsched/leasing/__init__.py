"""The live leasing controller (issue 6): a cap V on Slurm cloud nodes, a hard budget, a reconcile loop.

- :mod:`.config`: the ``[leasing]`` table;
- :mod:`.policy`: V per period from the leasing policy (the core's state-aware cap, shared with the
  simulator), clamped every cycle by the hard cap and the budget;
- :mod:`.budget`: the ledger of leased node-seconds and cost per UTC day;
- :mod:`.reconcile`: stuck power-ups, failed launches with backoff, orphans (pure decisions);
- :mod:`.provider`: the site's provider command (argv lists);
- :mod:`.service`: one cycle of all of it against the Slurm backend (enforcement, permit file, checkpoint).

See docs/leasing-live.md.
"""

from rlsched.leasing.config import LeasingConfig, LeasingConfigError
from rlsched.leasing.service import LeaseStatus, LeasingService

__all__ = ["LeaseStatus", "LeasingConfig", "LeasingConfigError", "LeasingService"]
