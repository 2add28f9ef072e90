"""Options that ``train`` and ``evaluate`` share: the deployment a policy is judged in, and the objective."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def deployment_options(mode_help: str, objective_help: str) -> Callable[[F], F]:
    """``--mode``, ``--boost-base``, ``--objective`` and ``--class-weight``, with each command's own wording
    of what the mode and the objective are for."""

    def decorate(command: F) -> F:
        for option in reversed(
            (
                click.option(
                    "--mode",
                    type=click.Choice(["gate", "boost"]),
                    default=None,
                    help=f"{mode_help} (default: the config's [backend] mode; boost without one, or for shadow).",
                ),
                click.option(
                    "--boost-base",
                    default=None,
                    metavar="fifo|multifactor[:k=v,...]",
                    help="Boost mode: Slurm's own order under the boosted jobs (default fifo; e.g. "
                    "multifactor:slurm_conf=/etc/slurm/slurm.conf).",
                ),
                click.option(
                    "--objective",
                    type=click.Choice(["bsld", "wait", "W"]),
                    default=None,
                    help=f"{objective_help} (default: the config's [agent] objective, else bsld).",
                ),
                click.option(
                    "--class-weight",
                    "class_weights",
                    multiple=True,
                    metavar="CLASS=W",
                    help="Weigh a class's jobs W times in the objective (repeat; e.g. interactive=3).",
                ),
            )
        ):
            command = option(command)
        return command

    return decorate
