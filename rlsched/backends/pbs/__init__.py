"""PBS backend: :class:`PBSBackend` implements :class:`rlsched.core.live.LiveBackend` through OpenPBS / PBS
Professional's command-line tools (``qstat``, ``pbsnodes``, ``qalter``, ``qhold``, ``qrls``).  See
``docs/pbs.md``.

Modules: :mod:`.parsers` (pure parsers of ``qstat``/``pbsnodes -F json``, ``sched_config`` and accounting
logs), :mod:`.config` (:class:`PBSBackendConfig`), :mod:`.completions` (the completion feed),
:mod:`.backend` (view building, actions, the undo record).
"""

from rlsched.backends.pbs.backend import PBSBackend, build_pbs_backend
from rlsched.backends.pbs.config import PBSBackendConfig
from rlsched.backends.pbs.errors import PBSCommandError, PBSError, PBSParseError

__all__ = ["PBSBackend", "PBSBackendConfig", "PBSCommandError", "PBSError", "PBSParseError", "build_pbs_backend"]
