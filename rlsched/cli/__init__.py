"""The ``rlsched`` command line (click)."""

from __future__ import annotations

import logging

import click

from rlsched import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rlsched")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def main(verbose: int) -> None:
    """rlsched: a learning scheduler for Slurm/PBS and its trace-driven simulator."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _register() -> None:
    # Each command group lives in its own module; importing them here keeps `main` the one entry point.
    from rlsched.cli import daemon, history, report, sim, trace
    from rlsched.cli.evaluate import evaluate
    from rlsched.cli.explain import explain
    from rlsched.cli.install import install_command
    from rlsched.cli.train import train

    main.add_command(sim.sim)
    main.add_command(trace.trace)
    main.add_command(daemon.daemon)
    main.add_command(daemon.status)
    main.add_command(history.history)
    main.add_command(train)
    main.add_command(evaluate)
    main.add_command(report.report)
    main.add_command(install_command)
    main.add_command(explain)


_register()
