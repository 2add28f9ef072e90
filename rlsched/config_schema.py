"""The one declarative schema of rlsched's TOML config: every key of every table with its type, default, check
and doc, and the one reader that turns a bad key into a one-line error naming the file and the key.

A :class:`Section` is the keys of one table that one layer reads; the layer that owns it builds its config
object from :meth:`Section.read` and adds its cross-key rules (a rule that needs two keys, or another layer's
value):

=====================  ============================  ==============================================
section                table                         owner (builds it, adds its cross-key rules)
=====================  ============================  ==============================================
:data:`DAEMON_BACKEND` ``[backend]`` kind, mode,     :mod:`rlsched.daemon.config`
                       poll_interval_s
:data:`BACKEND_COMMON` ``[backend]``, every kind     :mod:`rlsched.backends.common.config`
:data:`SLURM`          ``[backend]``, kind slurm     :mod:`rlsched.backends.slurm.config`
:data:`PBS`            ``[backend]``, kind pbs       :mod:`rlsched.backends.pbs.config`
:data:`AGENT`,         ``[agent]``, ``[metrics]``,   :mod:`rlsched.daemon.config`
:data:`METRICS`, …     ``[state]``, ``[gate]``,
                       ``[shadow]``, ``[log]``
:data:`LEASING`        ``[leasing]``                 :mod:`rlsched.leasing.config`
=====================  ============================  ==============================================

The Slurm leasing hooks (``plugins/slurm/rlsched-resume``, ``rlsched-suspend``) load this file alone, by path,
so it imports the standard library only (no rlsched module, no msgspec): the hooks must start in milliseconds
and keep working while the rest of rlsched is broken or being upgraded.  That is also why the key tables of
every layer live here rather than beside the layer's code; the layer's module holds what needs more than one
key.  The docs' key tables (docs/daemon.md, docs/leasing.md) are :func:`markdown_table` of these sections
(``rlsched config keys``); a test checks they match.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Check:
    """A key's check: ``doc`` says what is allowed (the docs' tables), ``problem`` takes the converted value and
    returns what is wrong with it (completing ``key 'x.y': ...``) or None."""

    doc: str
    problem: Callable[[Any], str | None]

    def __call__(self, value: Any) -> str | None:
        return self.problem(value)


class SchemaError(ValueError):
    """A bad key: one line, ``SOURCE: key 'table.key': problem``."""


def key_error(error: type[Exception], source: str, key: str, message: str) -> Exception:
    """The one-line error every reader raises: ``SOURCE: key 'KEY': MESSAGE``."""
    return error(f"{source}: key {key!r}: {message}")


# ------------------------------------------------------------------------------------------------- types
def _given(value: Any) -> str:
    """How an error names a value of the wrong type (a TOML boolean is never a number)."""
    return "a boolean" if isinstance(value, bool) else type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Type:
    """A TOML value type: what the docs call it, what an error expects, and the Python value it becomes."""

    doc: str  # in the docs' tables
    expected: str  # "expected a number"
    accepts: Callable[[Any], bool]
    convert: Callable[[Any], Any] = lambda value: value


STRING = Type("string", "a string", lambda v: isinstance(v, str))
INTEGER = Type("integer", "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
NUMBER = Type("number", "a number", _is_number, float)
BOOLEAN = Type("boolean", "true or false", lambda v: isinstance(v, bool))
STRINGS = Type(
    "list of strings", "a list of strings", lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v), tuple
)
STRING_SET = Type(
    "list of strings",
    "a list of strings",
    lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
    frozenset,
)
NUMBERS = Type(
    "list of numbers",
    "a list of numbers",
    lambda v: isinstance(v, list) and all(_is_number(x) for x in v),
    lambda v: tuple(map(float, v)),
)
STRING_TABLE = Type(
    "table of strings",
    'a table of name = "VO"',
    lambda v: isinstance(v, Mapping) and all(isinstance(s, str) for s in v.values()),
    dict,
)
TABLE = Type("table", "a table (e.g. {interactive = 3})", lambda v: isinstance(v, Mapping), dict)


# ------------------------------------------------------------------------------------------------ checks
def at_least(least: float) -> Check:
    return Check(f">= {least:g}", lambda v: None if v >= least else f"must be >= {least:g}, got {v:g}")


def above(least: float) -> Check:
    return Check(f"> {least:g}", lambda v: None if v > least else f"must be > {least:g}, got {v:g}")


def between(low: float, high: float, unit: str = "") -> Check:
    return Check(
        f"{low:g} to {high:g}",
        lambda v: None if low <= v <= high else f"must lie in [{low:g}, {high:g}]{unit}, got {v:g}",
    )


def one_of(*choices: str) -> Check:
    return Check(
        ", ".join(f"`{c}`" for c in choices),
        lambda v: None if v in choices else f"expected one of {', '.join(choices)}, got {v!r}",
    )


def _absolute(value: str) -> str | None:
    return None if os.path.isabs(value) else f"expected an absolute path, got {value!r}"


#: A path rlsched reads: absolute, or it would depend on the daemon's working directory.
ABSOLUTE_PATH = Check("absolute path", _absolute)


#: Where the daemon never writes: the operating system's own trees and the package managers' databases.
#: A path inside one (after resolving symbolic links) is refused for every file the daemon writes.
SYSTEM_DIRS: tuple[str, ...] = (
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/proc",
    "/sys",
    "/dev",
    "/snap",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/lib/rpm",
    "/var/lib/dnf",
    "/var/lib/yum",
    "/var/cache/apt",
    "/var/spool/cron",
    "/var/spool/slurm",
    "/var/spool/pbs",
    "/var/lib/slurm",
)


def system_dir_of(path: str | os.PathLike[str]) -> str | None:
    """The entry of :data:`SYSTEM_DIRS` that holds ``path`` (symbolic links resolved), or None.

    ``/`` itself counts as a system directory: a daemon must not write its files at the root."""
    resolved = os.path.realpath(path)
    if resolved == "/":
        return "/"
    for folder in SYSTEM_DIRS:
        real = os.path.realpath(folder)
        for root in dict.fromkeys((folder, real)):
            if resolved == root or resolved.startswith(root.rstrip("/") + "/"):
                return folder
    return None


def written_path(value: str) -> str | None:
    """A path rlsched writes: absolute and outside the system directories."""
    if not value:
        return "expected a path, got an empty string"
    if "\0" in value:
        return "the path holds a NUL character"
    if not os.path.isabs(value):
        return f"expected an absolute path, got {value!r}"
    system = system_dir_of(value)
    if system is not None:
        return (
            f"{value!r} lies in the system directory {system}: rlsched writes there; choose a directory of "
            "its own (e.g. /var/lib/rlsched, /var/log/rlsched)"
        )
    return None


#: A path rlsched writes: absolute and outside the system directories.
WRITTEN_PATH = Check("absolute path outside the system directories", written_path)
#: A command as an argument list: not empty, no empty argument.
ARGV = Check(
    "non-empty argv",
    lambda v: None if v and all(v) else "expected a non-empty list of non-empty strings (an argv, not a shell line)",
)
NO_EMPTY_ARGUMENT = Check("no empty argument", lambda v: None if all(v) else "has an empty argument")


def _listen_problem(value: str) -> str | None:
    if value in ("", "off"):
        return None
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if (
        not sep
        or not port.isdecimal()
        or not 0 <= int(port) <= 65535
        or not host.isprintable()
        or any(c.isspace() for c in host)
    ):
        return f"expected HOST:PORT, got {value!r}"
    return None


#: ``HOST:PORT``, or ``""``/``"off"`` (no exporter).
LISTEN_ADDRESS = Check('`HOST:PORT` or `"off"`', _listen_problem)


# -------------------------------------------------------------------------------------------- the schema
@dataclass(frozen=True)
class Key:
    """One key: ``name``, ``type``, ``default`` (the value when absent; None: unset), ``check`` on the converted
    value, ``doc`` (one sentence for the docs' table), ``default_doc`` when the default is computed."""

    name: str
    type: Type
    default: Any
    doc: str
    check: Check | None = None
    default_doc: str | None = None

    def shown_default(self) -> str:
        """The default as the docs' tables show it (Markdown)."""
        if self.default_doc is not None:
            return self.default_doc
        value = self.default
        if value is None:
            return "unset"
        if isinstance(value, tuple | frozenset | dict) and not value:
            return "empty"
        if isinstance(value, bool):
            shown = str(value).lower()
        elif isinstance(value, float):
            shown = f"{value:g}"
        elif isinstance(value, tuple):
            shown = "[" + ", ".join(f'"{v}"' for v in value) + "]"
        else:
            shown = f'"{value}"' if isinstance(value, str) else str(value)
        return f"`{shown}`"


@dataclass(frozen=True)
class Section:
    """The keys of one TOML table that one layer reads.

    ``others``: who reads the table's other keys (the backend kind, the policy's parameters); empty means any
    key but these and the ``foreign`` ones (read by another layer from the same table) is an error."""

    table: str
    keys: tuple[Key, ...]
    doc: str
    others: str = ""
    foreign: tuple[str, ...] = ()
    by_name: Mapping[str, Key] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {key.name: key for key in self.keys})

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __getitem__(self, name: str) -> Key:
        return self.by_name[name]

    def extended(self, doc: str, *keys: Key) -> Section:
        """This section's keys and ``keys`` (a backend kind's own keys beside the common ones)."""
        return Section(self.table, self.keys + keys, doc, self.others, self.foreign)

    def default(self, name: str) -> Any:
        return self.by_name[name].default

    def read(self, table: Any, source: str, *, error: type[Exception] = SchemaError) -> dict[str, Any]:
        """The keys ``table`` sets, typed, converted and checked; every problem is one ``error`` line naming
        ``source`` and the key (``table.name``).  Other keys: an error, unless :attr:`others` reads them or they
        are :attr:`foreign` (then they are left out)."""
        prefix = f"{self.table}."
        if not isinstance(table, Mapping):
            raise key_error(error, source, self.table, "expected a table")
        values: dict[str, Any] = {}
        for name, value in table.items():
            key = self.by_name.get(name)
            if key is None:
                if self.others or name in self.foreign:
                    continue
                known = ", ".join(sorted(self.by_name))
                raise key_error(error, source, f"{prefix}{name}", f"unknown key (known: {known})")
            problem = _problem(key, value)
            if problem is not None:
                raise key_error(error, source, f"{prefix}{name}", problem)
            values[name] = key.type.convert(value)
        return values

    def complete(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` with every absent key at its default."""
        return {key.name: values.get(key.name, key.default) for key in self.keys}

    def check_fields(self, config: object, error: type[ValueError] = ValueError) -> None:
        """Apply each key's check to the same-named attribute of ``config`` (a config built in code, not read)."""
        for key in self.keys:
            value = getattr(config, key.name, None)
            problem = key.check(value) if key.check is not None and value is not None else None
            if problem is not None:
                raise error(f"key {key.name!r}: {problem}")


def _problem(key: Key, value: Any) -> str | None:
    if not key.type.accepts(value):
        return f"expected {key.type.expected}, got {_given(value)}"
    for number in value if isinstance(value, list) else (value,):
        if isinstance(number, float) and not math.isfinite(number):
            return f"expected a finite number, got {number}"
    return key.check(key.type.convert(value)) if key.check is not None else None


def non_finite_numbers(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """Every ``nan`` or ``inf`` in parsed TOML, as (dotted key, value); lists included (``key[2]``): TOML allows
    both, no key of rlsched means either (policy parameters included)."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from non_finite_numbers(value, f"{name}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, float) and not math.isfinite(item):
                    yield f"{name}[{i}]", item
                elif isinstance(item, Mapping):
                    yield from non_finite_numbers(item, f"{name}[{i}].")
        elif isinstance(value, float) and not math.isfinite(value):
            yield name, value


# ---------------------------------------------------------------------------------------- the daemon's
MODES = ("shadow", "boost", "gate")
#: The shortest poll interval: each cycle runs several batch-system commands (squeue, sinfo, sacct, …), and
#: a site's controller serves every user's commands too.
MIN_POLL_INTERVAL_S = 1.0
#: The longest poll interval (one hour): beyond it the heartbeat and the gate are meaningless.
MAX_POLL_INTERVAL_S = 3600.0
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
DEFAULT_METRICS_PORT = 9400

DAEMON_BACKEND = Section(
    "backend",
    (
        Key("kind", STRING, "slurm", "the batch system: a registered backend kind (`slurm`, `pbs`)"),
        Key(
            "mode",
            STRING,
            "shadow",
            "`shadow` (log only), `boost` (priorities) or `gate` (holds); a daemon's file names it explicitly",
            one_of(*MODES),
            default_doc="required",
        ),
        Key(
            "poll_interval_s",
            NUMBER,
            10.0,
            "seconds between cycles",
            between(MIN_POLL_INTERVAL_S, MAX_POLL_INTERVAL_S, " seconds"),
        ),
    ),
    "the daemon's keys of `[backend]`; the others belong to the backend `kind` names",
    others="the backend kind",
)

AGENT = Section(
    "agent",
    (
        Key(
            "kind",
            STRING,
            "interactive-first-sjf",
            "the policy: a name of the registry that can run live (`rlsched sim policies`)",
        ),
        Key(
            "model",
            STRING,
            None,
            "a saved model (`rlsched train`; relative to the config file); it carries its policy and parameters",
        ),
        Key("objective", STRING, "bsld", "what `train` and `evaluate` judge by: `bsld`, `wait` or `W`"),
        Key("class_weights", TABLE, {}, "weights of job classes in the objective (`{interactive = 3}`)"),
        Key("allow_losing_model", BOOLEAN, False, "start a model whose verdict is a loss to a rule (boost, gate)"),
    ),
    "the policy that decides; every other key is a parameter of that policy, checked by the policy registry",
    others="the policy's parameters",
)

METRICS = Section(
    "metrics",
    (
        Key(
            "listen",
            STRING,
            f"127.0.0.1:{DEFAULT_METRICS_PORT}",
            'the Prometheus exporter\'s `HOST:PORT`; `"off"` disables it',
            LISTEN_ADDRESS,
        ),
        Key("allow_remote", BOOLEAN, False, "allow a non-loopback `listen` address (firewall the port)"),
    ),
    "the Prometheus exporter",
)

STATE = Section(
    "state",
    (
        Key(
            "dir",
            STRING,
            "/var/lib/rlsched",
            "the state folder (checkpoint, heartbeat, undo record, permit)",
            WRITTEN_PATH,
        ),
        Key("checkpoint_every_s", NUMBER, 60.0, "seconds between checkpoints of a learning agent", at_least(0)),
    ),
    "the daemon's state",
)

GATE = Section(
    "gate",
    (
        Key(
            "heartbeat_file",
            STRING,
            None,
            "written every cycle; the watchdog and the leasing hooks read it",
            WRITTEN_PATH,
            default_doc="`<dir>/heartbeat.json`",
        ),
        Key(
            "stale_after_s",
            NUMBER,
            120.0,
            "how old the heartbeat may get before the daemon counts as dead; more "
            "than the poll interval plus one retried backend call",
            above(0),
        ),
    ),
    "the failsafe of gate mode (and of leasing)",
)

SHADOW = Section(
    "shadow",
    (
        Key(
            "decision_log",
            STRING,
            None,
            'the decision log (relative to the config file); `"off"` disables it',
            Check('a path or `"off"`', lambda v: None if v else 'expected a path, or "off"'),
            default_doc="`<dir>/decisions.jsonl`",
        ),
        Key(
            "max_bytes",
            INTEGER,
            64 << 20,
            "size in bytes at which the log is rotated (at least 1024)",
            at_least(1024),
            default_doc="64 MiB",
        ),
        Key("keep", INTEGER, 4, "rotated files kept", at_least(0)),
        Key("max_jobs", INTEGER, 1000, "ranked jobs per line", at_least(1)),
        Key(
            "modes",
            STRINGS,
            ("shadow",),
            "the modes that log",
            Check(
                ", ".join(f"`{m}`" for m in MODES),
                lambda v: (
                    None
                    if v and set(v) <= set(MODES)
                    else f"expected a non-empty list of {', '.join(MODES)}, got {list(v)!r}"
                ),
            ),
        ),
    ),
    "the decision log",
)

LOG = Section(
    "log",
    (
        Key(
            "level",
            STRING,
            "info",
            "`debug`, `info`, `warning` or `error`; `rlsched -v` can only lower it",
            Check(one_of(*LOG_LEVELS).doc + " (any case)", lambda v: one_of(*LOG_LEVELS)(v.lower())),
        ),
        Key(
            "format",
            STRING,
            "text",
            "`text`, or `json`: one object a line (`time`, `level`, `logger`, `message`)",
            one_of(*LOG_FORMATS),
        ),
    ),
    "the daemon's log",
)


# ------------------------------------------------------------------------------------------ the backends'
BACKEND_COMMON = Section(
    "backend",
    (
        Key("bin_dir", STRING, None, "where the batch system's commands are (unset: PATH)", ABSOLUTE_PATH),
        Key("timeout_s", NUMBER, 30.0, "seconds per command", above(0)),
        Key("retry_attempts", INTEGER, 3, "attempts of a failing command", at_least(1)),
        Key("retry_base_delay_s", NUMBER, 0.5, "first pause between attempts (doubling)", at_least(0)),
        Key("retry_max_delay_s", NUMBER, 8.0, "longest pause between attempts", at_least(0)),
        Key("vos", STRINGS, (), "the VOs, in order (the width of a learned policy's features)"),
        Key("vo_shares", NUMBERS, None, "each VO's target share", default_doc="equal"),
        Key("vo_accounts", STRING_TABLE, {}, 'accounts mapped to VOs (`{atlas-prod = "atlas"}`)'),
        Key("default_vo", STRING, None, "the VO of a job no mapping names"),
        Key("interactive_max_time_s", NUMBER, 900.0, "a job requesting at most this long is interactive", at_least(0)),
        Key("unlimited_time_s", NUMBER, 7 * 86400.0, "the requested time of a job without a limit", above(0)),
        Key(
            "state_file",
            STRING,
            None,
            "the undo record of what rlsched changed",
            WRITTEN_PATH,
            default_doc="in the state dir",
        ),
    ),
    "what every backend kind reads",
    foreign=tuple(key.name for key in DAEMON_BACKEND.keys),
)

SLURM = BACKEND_COMMON.extended(
    '`kind = "slurm"` (docs/slurm.md)',
    Key("slurm_conf", STRING, None, "passed to the commands as `SLURM_CONF` (unset: the environment's)", ABSOLUTE_PATH),
    Key("partitions", STRING_SET, frozenset(), "the partitions rlsched schedules (empty: all; gate mode needs them)"),
    Key("interactive_qos", STRING_SET, frozenset(), "a job with one of these QOS is interactive"),
    Key("interactive_partitions", STRING_SET, frozenset(), "a job in one of these partitions is interactive"),
    Key(
        "completion_source",
        STRING,
        "auto",
        "`auto`, `sacct`, `jobcomp` or `squeue`: where finished jobs are read",
        one_of("auto", "sacct", "jobcomp", "squeue"),
    ),
    Key("jobcomp_path", STRING, None, "the `jobcomp/filetxt` file (unset: slurm.conf's)", ABSOLUTE_PATH),
    Key("max_boosted", INTEGER, 32, "how many top-ranked jobs get a Nice offset", between(1, 1000)),
    Key("cloud_feature", STRING, "cloud", "the node feature of cloud nodes"),
)

PBS = BACKEND_COMMON.extended(
    '`kind = "pbs"` (docs/pbs.md)',
    Key("command_prefix", STRINGS, (), 'put before every PBS command (`["ssh", "headnode"]`)', NO_EMPTY_ARGUMENT),
    Key("queues", STRING_SET, frozenset(), "the queues rlsched schedules (empty: all; gate mode needs them)"),
    Key("interactive_queues", STRING_SET, frozenset(), "a job in one of these queues is interactive"),
    Key(
        "vo_from",
        STRING,
        "project",
        "the job attribute naming the VO: `project`, `account` or `group`",
        one_of("account", "project", "group"),
    ),
    Key(
        "completion_source",
        STRING,
        "history",
        "`history` (`qstat -x`) or `accounting` (the accounting log)",
        one_of("history", "accounting"),
    ),
    Key("accounting_dir", STRING, "/var/spool/pbs/server_priv/accounting", "the server's accounting log folder"),
    Key(
        "sched_config",
        STRING,
        "/var/spool/pbs/sched_priv/sched_config",
        "the scheduler's config, read to check it sorts on job priority",
    ),
    Key(
        "priority_sort_check",
        STRING,
        "warn",
        "`warn`, `refuse` (never boost) or `off`",
        one_of("warn", "refuse", "off"),
    ),
    Key(
        "max_boosted",
        INTEGER,
        32,
        "how many top-ranked jobs get a priority (PBS priorities: -1024..1023)",
        between(1, 2048),
    ),
)

#: Each backend kind's section (the registry names the kinds; a kind without one here checks its own keys).
BACKEND_SECTIONS = {"slurm": SLURM, "pbs": PBS}


# ------------------------------------------------------------------------------------------ leasing
#: ``[leasing] policy`` values: the registry's live lease policies (a test checks they are the same).
LEASE_POLICIES = ("state-aware", "fixed")

LEASING = Section(
    "leasing",
    (
        Key("enabled", BOOLEAN, False, "without it the daemon leaves the cloud nodes alone"),
        Key(
            "nodes",
            STRING,
            "",
            'a Slurm hostlist of the cloud nodes rlsched manages (`"cloud[1-4]"`)',
            default_doc="none",
        ),
        Key("max_nodes", INTEGER, 0, "the hard cap on leased nodes", at_least(0), default_doc="all `nodes`"),
        Key("period_s", NUMBER, 3600.0, "how often the policy sets the cap", above(0)),
        Key(
            "policy",
            STRING,
            "state-aware",
            "`state-aware` or `fixed` (the cap is `max_nodes`)",
            one_of(*LEASE_POLICIES),
        ),
        Key(
            "exchange_rate",
            NUMBER,
            0.0,
            "κ: seconds of job wait one cloud core-second is worth (state-aware: required)",
            at_least(0),
        ),
        Key("threshold", NUMBER, 1.0, "θ of the state-aware policy", above(0)),
        Key("arrival_window_s", NUMBER, 86_400.0, "the arrival window of the state-aware policy", above(0)),
        Key(
            "budget_node_hours_per_day",
            NUMBER,
            None,
            "daily budget in node-hours (this or the next is required when enabled)",
            at_least(0),
        ),
        Key("budget_cost_per_day", NUMBER, None, "daily budget in money (needs `price_per_node_hour`)", at_least(0)),
        Key("price_per_node_hour", NUMBER, 0.0, "price of one leased node for one hour", at_least(0)),
        Key("min_lease_s", NUMBER, 600.0, "the least a new lease is charged for", at_least(0)),
        Key(
            "provider_command",
            STRINGS,
            (),
            "the site's cloud tooling as an argv (`CMD list`, `CMD resume|suspend NODE…`)",
            ARGV,
            default_doc="none",
        ),
        Key("provider_timeout_s", NUMBER, 60.0, "seconds per provider call", above(0)),
        Key("power_up_timeout_s", NUMBER, 600.0, "a node powering up longer is a failed launch", above(0)),
        Key(
            "orphan_grace_s",
            NUMBER,
            60.0,
            "how long an instance runs under a powered-down node before it is ended",
            at_least(0),
        ),
        Key(
            "reconcile_every_s", NUMBER, 60.0, "seconds between reconcile loops (at least the poll interval)", above(0)
        ),
        Key("max_launch_failures", INTEGER, 3, "consecutive failed launches before a node is drained", at_least(1)),
        Key("launch_backoff_s", NUMBER, 300.0, "a failed node sits out this long, doubling each failure", at_least(0)),
        Key("hook_log", STRING, None, "the leasing hooks' log", WRITTEN_PATH, default_doc="`<dir>/leasing-hooks.log`"),
    ),
    "the live leasing controller (docs/leasing-live.md)",
)

#: Every section of a daemon's file, in the order of the docs' tables.
SECTIONS: tuple[Section, ...] = (
    DAEMON_BACKEND,
    BACKEND_COMMON,
    SLURM,
    PBS,
    AGENT,
    METRICS,
    STATE,
    GATE,
    LEASING,
    SHADOW,
    LOG,
)
#: The file's tables.
TABLES: tuple[str, ...] = tuple(dict.fromkeys(section.table for section in SECTIONS))


# ------------------------------------------------------------------------------------------ the docs
def markdown_table(section: Section, only: tuple[Key, ...] | None = None) -> str:
    """``section``'s keys (or ``only`` these) as a Markdown table: key, type, default, allowed values, meaning."""
    lines = ["| Key | Type | Default | Allowed | Meaning |", "|---|---|---|---|---|"]
    for key in section.keys if only is None else only:
        meaning = key.doc.replace("|", "\\|")
        allowed = key.check.doc if key.check is not None else ""
        lines.append(f"| `{key.name}` | {key.type.doc} | {key.shown_default()} | {allowed} | {meaning} |")
    return "\n".join(lines)


def markdown_tables() -> str:
    """Every section's key table, headed by its table and what it is: the block docs/daemon.md carries
    (``rlsched config keys`` prints it).  A backend kind's table lists its own keys beside the common ones."""
    parts = []
    for section in SECTIONS:
        own = section.keys
        if section.table == "backend" and section is not BACKEND_COMMON and section is not DAEMON_BACKEND:
            own = tuple(key for key in section.keys if key.name not in BACKEND_COMMON)
        parts.append(f"**`[{section.table}]`**: {section.doc}.\n\n{markdown_table(section, own)}")
    return "\n\n".join(parts) + "\n"
