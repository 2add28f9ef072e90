"""The ``rlsched`` command line (click).

Errors reach the user as one line on stderr and a non-zero exit (issue 16): a usage error (bad option
value, missing argument) is ``Error: … (see 'rlsched CMD --help')`` with exit 2, a refused input
(``click.ClickException``) is ``Error: …`` with its exit code, and anything unexpected is one line naming
the exception with a pointer to ``--debug`` (which lets the traceback through), exit 1; an ``OSError``
(busy port, permission denied, disk full) and any :class:`~rlsched.errors.RlschedError` (a failure rlsched
foresaw: a refused config, a batch-system command that failed) are ``Error: …``, exit 1.  The specific
messages come first: the guard is the net under them, not a substitute.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

#: BLAS/OpenMP thread variables pinned before NumPy is first imported (see :func:`pin_blas_threads`).
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pin_blas_threads() -> None:
    """One BLAS thread (or ``RLSCHED_BLAS_THREADS``), set before NumPy loads OpenBLAS.

    A multi-threaded BLAS splits a matrix product's sums between threads, and the split depends
    on the thread count (the cores of the machine by default), so a learned run (ESN ridge fits,
    FFNN steps) could give other numbers for the same seed on another machine.  With one thread the
    order of the reductions no longer depends on the machine's cores.  The experiments' worker
    processes get the same setting (:func:`rlsched.sim.experiments.harness.single_threaded_blas_env`).
    """
    threads = os.environ.get("RLSCHED_BLAS_THREADS", "1")
    for name in BLAS_THREAD_VARS:
        os.environ[name] = threads


# Before anything below can import NumPy (OpenBLAS reads the variables once, when it loads).
pin_blas_threads()  # the kernel set is pinned by the package itself (rlsched/_blas_kernels.py), imported first

import click  # noqa: E402  (after pin_blas_threads on purpose)

from rlsched import __version__  # noqa: E402
from rlsched.errors import RlschedError  # noqa: E402


class _NeverRaised(click.UsageError):
    """Stands for click's NoArgsIsHelpError where click (< 8.2) has none."""


#: Click's "no arguments: show the help" (click >= 8.2), shown as click shows it: the help text.
_NO_ARGS_IS_HELP: type[click.UsageError] = getattr(click.exceptions, "NoArgsIsHelpError", _NeverRaised)
#: Exit code of an unexpected error (a bug, or a failure no command anticipated).
INTERNAL_ERROR_EXIT = 1


class GuardedGroup(click.Group):
    """A click group whose errors are one line each; ``--debug`` (or ``RLSCHED_DEBUG=1``) shows tracebacks."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in argv[: argv.index("--")] if "--" in argv else "--debug" in argv
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as exc:  # `rlsched sim` alone: the help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "rlsched"
            click.echo(f"Error: {exc.format_message()} (see '{where} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except OSError as exc:  # the environment (busy port, permission, disk full), not a bug
            if debug or _env_debug():
                raise
            text = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else exc.strerror or str(exc)
            click.echo(f"Error: {' '.join(text.split())}", err=True)
            sys.exit(INTERNAL_ERROR_EXIT)
        except RlschedError as exc:  # a failure rlsched foresaw (bad input, a failed command): no bug
            if debug or _env_debug():
                raise
            click.echo(f"Error: {' '.join(str(exc).split()) or type(exc).__name__}", err=True)
            sys.exit(INTERNAL_ERROR_EXIT)
        except Exception as exc:
            if debug or _env_debug():
                raise
            text = " ".join(str(exc).split()) or "(no message)"
            click.echo(
                f"rlsched: internal error: {type(exc).__name__}: {text} (run with --debug for the traceback)", err=True
            )
            sys.exit(INTERNAL_ERROR_EXIT)
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)


def _env_debug() -> bool:
    import os

    return os.environ.get("RLSCHED_DEBUG", "") not in ("", "0")


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rlsched")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.option("--debug", is_flag=True, help="Let the traceback of an unexpected error through (for a bug report).")
def main(verbose: int, debug: bool) -> None:
    """rlsched: a learning scheduler for Slurm/PBS and its trace-driven simulator."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _register() -> None:
    # Each command group lives in its own module; importing them here keeps `main` the one entry point.
    from rlsched.cli import config, daemon, history, report, sim, trace
    from rlsched.cli.evaluate import evaluate
    from rlsched.cli.explain import explain
    from rlsched.cli.install import install_command
    from rlsched.cli.learning import learning
    from rlsched.cli.train import train

    main.add_command(sim.sim)
    main.add_command(trace.trace)
    main.add_command(daemon.daemon)
    main.add_command(daemon.status)
    main.add_command(config.config)
    main.add_command(history.history)
    main.add_command(train)
    main.add_command(evaluate)
    main.add_command(learning)
    main.add_command(report.report)
    main.add_command(install_command)
    main.add_command(explain)


_register()
