"""Q-function approximators behind one interface (:class:`QFunction`): ESN, FFNN, table."""

from rlsched.core.approximators.base import (
    FORMAT_VERSION,
    QFunction,
    load_qfunction,
    read_checkpoint,
    ridge_solve,
    save_checkpoint,
)
from rlsched.core.approximators.esn import EchoStateQ
from rlsched.core.approximators.ffnn import FeedForwardQ
from rlsched.core.approximators.table import TableQ

__all__ = [
    "FORMAT_VERSION",
    "EchoStateQ",
    "FeedForwardQ",
    "QFunction",
    "TableQ",
    "load_qfunction",
    "read_checkpoint",
    "ridge_solve",
    "save_checkpoint",
]
