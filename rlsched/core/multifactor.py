"""Slurm's priority/multifactor, as pure arithmetic: "what your Slurm does today" (docs/multifactor.md).

A job's priority is a weighted sum of normalised factors, each in [0, 1] (Slurm's
``priority_multifactor`` plugin, slurm.conf(5) ``PriorityWeight*``)::

    priority = W_age·age + W_fairshare·fairshare + W_jobsize·jobsize + W_partition·partition + W_qos·qos

truncated to an integer (Slurm stores a ``uint32``); the queue is ordered by priority, highest
first, ties by job id (submit order).

- **age** = min(now − eligible, PriorityMaxAge) / PriorityMaxAge.
- **fair-share** from each association's *usage*: CPU-seconds of its running jobs, decayed
  with PriorityDecayHalfLife.  Slurm's decay thread runs every PriorityCalcPeriod: it
  multiplies every usage by ``d^Δ`` with the per-second factor ``d = 1 − 0.693/half_life``
  (Slurm's own first-order form of 2^(−1/half_life)), then adds, for each running job,
  ``cpus · Δ · d^Δ`` for the Δ seconds it ran since the previous pass (a job that ends adds
  its last part at its end).  :class:`UsageLedger` does the same on the same grid.
  Two algorithms turn usage into the factor:

  * **Fair Tree** (the default since Slurm 19.05): at every level, each association's
    *level fair-share* LF = S/U, S its raw shares over its siblings' sum, U its usage over its
    parent's usage (U = 0 gives LF = ∞; S = 0 gives LF = 0).  Siblings are sorted by LF,
    highest first (a user before an account on a tie), sibling accounts with equal LF are
    merged, and a depth-first walk hands out ranks to the users: the first gets
    ``n_users``, each next one a rank one lower, except that a user tied (equal LF) with the
    previous one shares its rank.  The factor is ``rank / n_users``.
  * **classic** (``PriorityFlags=NO_FAIR_TREE``): F = 2^(−(U_E / S_N) / damp), with S_N the
    product of the shares ratios down the tree, U_N = usage / root usage, and the effective
    usage U_E = U_N for a child of the root, else U_N + (U_E,parent − U_N) · S / S_siblings.

- **job size** (without ``PriorityFlags=SMALL_RELATIVE_TO_TIME``): favour large jobs,
  (nodes/cluster_nodes + cpus/cluster_cpus)/2; with PriorityFavorSmall,
  ((cluster_nodes − nodes)/cluster_nodes + (cluster_cpus − cpus)/cluster_cpus)/2.
- **partition**: the partition's PriorityJobFactor over the largest of all partitions.
- **QOS**: the QOS's Priority over the largest of all QOS.

The association tree is Slurm's: the root, its children (accounts, and users directly under
root such as ``root``), the accounts' children (users, or further accounts).  Everything here
is pure: time comes in as arguments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rlsched.core.agents import FixedRankAgent, Mode
from rlsched.core.explain import RankKey
from rlsched.core.view import ClusterView, FloatArray, IntArray

DAY_S = 86400.0
#: The constant Slurm's decay thread uses for ln 2 (``decay_factor = 1 - 0.693/half_life``).
SLURM_LN2 = 0.693
#: Slurm stores a priority in 32 bits.
MAX_PRIORITY = float(0xFFFFFFFF)


@dataclass(frozen=True)
class MultifactorParams:
    """The slurm.conf ``Priority*`` keys the emulation reads, and the association shares.

    Weights are ``PriorityWeightAge`` … ``PriorityWeightQOS``; ``max_age_s`` is
    PriorityMaxAge, ``half_life_s`` PriorityDecayHalfLife (0: no decay), ``calc_period_s``
    PriorityCalcPeriod; ``fair_tree`` is False under ``PriorityFlags=NO_FAIR_TREE``;
    ``damp_factor`` is FairShareDampeningFactor (classic algorithm only); ``charge_at_end``: a job's
    usage since the last pass is charged when it ends (Slurm does so only when AccountingStorageEnforce
    includes ``limits``; otherwise that part is never charged — :class:`UsageLedger`).
    ``account_shares``: raw shares (sacctmgr ``Fairshare=``) per account, 1 when absent;
    ``user_shares``: per ``"account/user"``, 1 when absent.  ``partition_job_factor``:
    PriorityJobFactor per partition (1 when absent); ``qos_priority``: Priority per QOS (0).
    """

    weight_age: float = 1000.0
    weight_fairshare: float = 10000.0
    weight_job_size: float = 1000.0
    weight_partition: float = 0.0
    weight_qos: float = 0.0
    max_age_s: float = 7 * DAY_S
    half_life_s: float = 7 * DAY_S
    calc_period_s: float = 300.0
    fair_tree: bool = True
    favor_small: bool = False
    damp_factor: float = 1.0
    charge_at_end: bool = True
    account_shares: Mapping[str, float] = field(default_factory=dict)
    user_shares: Mapping[str, float] = field(default_factory=dict)
    partition_job_factor: Mapping[str, float] = field(default_factory=dict)
    qos_priority: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("weight_age", "weight_fairshare", "weight_job_size", "weight_partition", "weight_qos"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)!r}")
        if not self.max_age_s > 0:
            raise ValueError(f"max_age_s must be > 0, got {self.max_age_s!r}")
        if not self.half_life_s >= 0:
            raise ValueError(f"half_life_s must be ≥ 0, got {self.half_life_s!r}")
        if not self.calc_period_s > 0:
            raise ValueError(f"calc_period_s must be > 0, got {self.calc_period_s!r}")
        if not self.damp_factor >= 1:
            raise ValueError(f"damp_factor must be ≥ 1, got {self.damp_factor!r}")
        for table in ("account_shares", "user_shares", "partition_job_factor", "qos_priority"):
            for key, value in getattr(self, table).items():
                if not value >= 0:
                    raise ValueError(f"{table}[{key!r}] must be ≥ 0, got {value!r}")

    @property
    def decay_per_second(self) -> float:
        """Slurm's per-second decay factor (1: no decay)."""
        return 1.0 - SLURM_LN2 / self.half_life_s if self.half_life_s > 0 else 1.0


# ------------------------------------------------------------------------------ the association tree
@dataclass
class Assoc:
    """One node of the association tree: an account (``user`` None) or a user in an account."""

    account: str
    user: str | None = None
    shares: float = 1.0
    children: list[Assoc] = field(default_factory=list)
    #: Index of a user association among the tree's users (the usage and factor arrays).
    leaf: int = -1
    #: An account's raw usage as Slurm reported it (``sshare``), when it is not the sum of its children's
    #: (usage of removed associations, a reset); None: the sum.
    reported_usage: float | None = None

    @property
    def is_user(self) -> bool:
        return self.user is not None


class AssocTree:
    """The association tree; users are the leaves, numbered 0 … n_users−1 in depth-first order.

    Usage lives on the leaves (Slurm adds a job's usage to its user association and every
    ancestor, and decays them all alike, so an account's usage is the sum of its users').
    """

    def __init__(self, root: Assoc) -> None:
        self.root = root
        self.users: list[Assoc] = []
        self._number(root)
        self.index = {self.key(a.account, a.user): a.leaf for a in self.users if a.user is not None}
        # root → accounts → users, without reported account usages: Fair Tree has a vectorised form.
        accounts = root.children
        self.is_flat = (
            bool(accounts)
            and all(
                not a.is_user and a.reported_usage is None and a.children and all(u.is_user for u in a.children)
                for a in accounts
            )
            and root.reported_usage is None
        )
        if self.is_flat:
            self._acct_of_user = np.array([k for k, a in enumerate(accounts) for _ in a.children], dtype=np.int64)
            self._acct_shares = np.array([a.shares for a in accounts], dtype=np.float64)
            self._user_shares = np.array([u.shares for u in self.users], dtype=np.float64)

    @staticmethod
    def key(account: str, user: str | None) -> str:
        return f"{account}/{user}"

    def _number(self, node: Assoc) -> None:
        for child in node.children:
            if child.is_user:
                if child.children:
                    raise ValueError(f"association {child.account}/{child.user}: a user has no children")
                child.leaf = len(self.users)
                self.users.append(child)
            else:
                self._number(child)

    @property
    def n_users(self) -> int:
        return len(self.users)

    @classmethod
    def flat(
        cls, accounts: Sequence[str], users: Sequence[tuple[str, str]] = (), params: MultifactorParams | None = None
    ) -> AssocTree:
        """root → accounts → users; an account with no listed user gets one user named like it.

        Shares come from ``params`` (``account_shares``, ``user_shares`` keyed ``"account/user"``).
        """
        p = params or MultifactorParams()
        root = Assoc("root")
        by_name: dict[str, Assoc] = {}
        for name in accounts:
            if name in by_name:
                raise ValueError(f"account {name!r} listed twice")
            by_name[name] = Assoc(name, None, float(p.account_shares.get(name, 1.0)))
            root.children.append(by_name[name])
        for account, user in users:
            parent = by_name.get(account)
            if parent is None:
                raise ValueError(f"user {user!r} in unknown account {account!r}")
            parent.children.append(Assoc(account, user, float(p.user_shares.get(cls.key(account, user), 1.0))))
        for a in root.children:
            if not a.children:
                a.children.append(
                    Assoc(a.account, a.account, float(p.user_shares.get(cls.key(a.account, a.account), 1.0)))
                )
        return cls(root)

    def usage_of(self, node: Assoc, usage: FloatArray) -> float:
        if node.is_user:
            return float(usage[node.leaf])
        if node.reported_usage is not None:
            return node.reported_usage
        return sum(self.usage_of(c, usage) for c in node.children)


def _level_fs(shares: FloatArray, usage: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        lf = np.where(usage > 0, shares / np.where(usage > 0, usage, 1.0), np.inf)
    out: FloatArray = np.where(shares > 0, lf, 0.0)
    return out


def _fair_tree_flat(tree: AssocTree, usage: FloatArray) -> FloatArray:
    """Fair Tree on root → accounts → users, vectorised (equal to the walk; tests compare them)."""
    n = tree.n_users
    acct = tree._acct_of_user
    n_acct = len(tree._acct_shares)
    acct_usage = np.bincount(acct, usage, minlength=n_acct)
    root_usage = float(acct_usage.sum())
    total_shares = float(tree._acct_shares.sum())
    s_acct = tree._acct_shares / total_shares if total_shares > 0 else np.zeros(n_acct)
    lf_acct = _level_fs(s_acct, acct_usage / root_usage if root_usage > 0 else np.zeros(n_acct))
    level = np.bincount(acct, tree._user_shares, minlength=n_acct)[acct]
    s_user = np.where(level > 0, tree._user_shares / np.where(level > 0, level, 1.0), 0.0)
    parent = acct_usage[acct]
    u_user = np.where(parent > 0, usage / np.where(parent > 0, parent, 1.0), 0.0)
    lf_user = _level_fs(s_user, u_user)
    group = lf_acct[acct]
    # Accounts by LF (tied ones merged: they share a group key), users by LF inside; ties share a rank.
    order = np.lexsort((-lf_user, -group))
    g, lu = group[order], lf_user[order]
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (g[1:] != g[:-1]) | (lu[1:] != lu[:-1])
    first = np.maximum.accumulate(np.where(new_run, np.arange(n), 0))
    out = np.empty(n, dtype=np.float64)
    out[order] = (n - first) / n
    return out


def fair_tree_factors(tree: AssocTree, usage: FloatArray) -> FloatArray:
    """Fair Tree fair-share factor of every user association (see the module docstring)."""
    if tree.is_flat:
        return _fair_tree_flat(tree, usage)
    return fair_tree_walk(tree, usage)


def fair_tree_walk(tree: AssocTree, usage: FloatArray) -> FloatArray:
    """Fair Tree by Slurm's depth-first walk, for any tree."""
    n = tree.n_users
    out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return out
    totals: dict[int, float] = {}

    def total(node: Assoc) -> float:
        if id(node) not in totals:
            totals[id(node)] = tree.usage_of(node, usage)
        return totals[id(node)]

    def level_fs(node: Assoc, parent: Assoc) -> float:
        level_shares = sum(c.shares for c in parent.children)
        s = node.shares / level_shares if level_shares > 0 else 0.0
        parent_usage = total(parent)
        u = total(node) / parent_usage if parent_usage > 0 else 0.0
        if s == 0.0:
            return 0.0
        return math.inf if u == 0.0 else s / u

    rank = rnt = n

    def walk(siblings: list[tuple[Assoc, Assoc]], account_tied: bool) -> None:
        """``siblings``: (association, its parent) — one level, or the merged children of tied accounts."""
        nonlocal rank, rnt
        lf = [(node, level_fs(node, parent)) for node, parent in siblings]
        # Highest LF first; on a tie a user before an account (Slurm's _cmp_level_fs), else stable.
        lf.sort(key=lambda item: (-item[1], 0 if item[0].is_user else 1))
        prev: float | None = None
        i = 0
        while i < len(lf):
            node, value = lf[i]
            tied = account_tied if i == 0 else prev == value
            if node.is_user:
                if not tied:
                    rank = rnt
                out[node.leaf] = rank / n
                rnt -= 1
                i += 1
            else:
                # Sibling accounts tied with this one: their children are ranked together.
                j = i + 1
                while j < len(lf) and not lf[j][0].is_user and lf[j][1] == value:
                    j += 1
                walk([(child, acct) for acct, _ in lf[i:j] for child in acct.children], tied)
                i = j
            prev = value

    walk([(c, tree.root) for c in tree.root.children], False)
    return out


def classic_factors(tree: AssocTree, usage: FloatArray, damp_factor: float = 1.0) -> FloatArray:
    """The classic fair-share factor (``PriorityFlags=NO_FAIR_TREE``) of every user association."""
    out = np.zeros(tree.n_users, dtype=np.float64)
    root_usage = tree.usage_of(tree.root, usage)

    def walk(parent: Assoc, parent_norm_shares: float, parent_efctv: float, at_root: bool) -> None:
        level = sum(c.shares for c in parent.children)
        for child in parent.children:
            ratio = child.shares / level if level > 0 else 0.0
            norm_shares = parent_norm_shares * ratio
            raw = tree.usage_of(child, usage)
            usage_norm = min(raw / root_usage, 1.0) if root_usage > 0 else 0.0
            if at_root:
                efctv = usage_norm
            elif level > 0:
                efctv = usage_norm + (parent_efctv - usage_norm) * ratio
            else:
                efctv = parent_efctv
            if child.is_user:
                out[child.leaf] = 2.0 ** (-(efctv / norm_shares) / damp_factor) if norm_shares > 0 else 0.0
            else:
                walk(child, norm_shares, efctv, False)

    walk(tree.root, 1.0, 1.0, True)
    return out


def fairshare_factors(tree: AssocTree, usage: FloatArray, params: MultifactorParams) -> FloatArray:
    """The fair-share factor of every user association under ``params`` (Fair Tree or classic)."""
    if params.fair_tree:
        return fair_tree_factors(tree, usage)
    return classic_factors(tree, usage, params.damp_factor)


# ------------------------------------------------------------------------------ usage with decay
class UsageLedger:
    """Decayed CPU-seconds per user association, charged as Slurm's decay thread charges them.

    Passes fall on the grid ``origin + k·period`` (PriorityCalcPeriod).  At each pass every usage
    is multiplied by ``d^period``, then each running job adds ``cpus · Δ · d^Δ``, Δ the seconds
    it ran since the previous pass (whole runs of passes are applied in closed form).  Between
    passes the usage does not change, except that with ``charge_at_end`` (Slurm calls its job-end
    accounting only under ``AccountingStorageEnforce=limits``) a job that ends adds its last part
    ``cpus · Δ · d^Δ`` at once; without it that part is never charged.
    """

    def __init__(self, n_users: int, params: MultifactorParams, origin_s: float = 0.0) -> None:
        self.usage: FloatArray = np.zeros(n_users, dtype=np.float64)
        #: CPUs of the jobs that were running at the last pass, per association.
        self.rate: FloatArray = np.zeros(n_users, dtype=np.float64)
        self.decay = params.decay_per_second
        self.period = params.calc_period_s
        self.charge_at_end = params.charge_at_end
        self.origin = float(origin_s)
        self.time = float(origin_s)
        self.pass_time = float(origin_s)
        #: Jobs started since the last pass: job → (association, cpus, start).
        self._new: dict[int, tuple[int, float, float]] = {}
        #: Jobs running at the last pass: job → (association, cpus).
        self._old: dict[int, tuple[int, float]] = {}
        self._pass_usage: FloatArray = self.usage.copy()

    @property
    def pass_usage(self) -> FloatArray:
        """The usage right after the last pass: what that pass's fair-share factors are computed from."""
        return self._pass_usage

    def last_pass(self, t: float) -> float:
        """The latest grid instant at or before ``t``."""
        return self.origin + math.floor((t - self.origin) / self.period) * self.period

    def _charge(self, user: int, cpus: float, dt: float) -> None:
        if dt > 0:
            self.usage[user] += cpus * dt * self.decay**dt

    def advance(self, t: float) -> None:
        """Apply every pass up to ``t``."""
        if t > self.time:
            self.time = t
        grid = self.last_pass(t)
        if grid <= self.pass_time:
            return
        p = self.period
        d = self.decay**p
        first = self.pass_time + p
        self.usage *= d
        self.usage += self.rate * (p * d)
        for job, (user, cpus, start) in self._new.items():
            self._charge(user, cpus, first - start)
            self.rate[user] += cpus
            self._old[job] = (user, cpus)
        self._new.clear()
        k = round((grid - first) / p)
        if k > 0:
            dk = d**k
            # k passes of "u ← u·d + rate·p·d":  u·d^k + rate·p·d·(1 − d^k)/(1 − d)
            series = float(k) if d == 1.0 else (1.0 - dk) / (1.0 - d)
            self.usage *= dk
            self.usage += self.rate * (p * d * series)
        self.pass_time = grid
        self._pass_usage = self.usage.copy()

    def start(self, job: int, user: int, cpus: float, t: float) -> None:
        self.advance(t)
        self._new[job] = (user, float(cpus), t)

    def end(self, job: int, t: float) -> None:
        self.advance(t)
        if job in self._new:
            user, cpus, start = self._new.pop(job)
        elif job in self._old:
            user, cpus = self._old.pop(job)
            start = self.pass_time
            self.rate[user] -= cpus
        else:
            return
        if self.charge_at_end:
            self._charge(user, cpus, t - max(start, self.pass_time))


# ------------------------------------------------------------------------------ the other factors
def age_factor(now_s: float, eligible_s: FloatArray, max_age_s: float) -> FloatArray:
    """min(now − eligible, max_age) / max_age, never below 0."""
    age: FloatArray = np.clip(now_s - np.asarray(eligible_s, dtype=np.float64), 0.0, max_age_s) / max_age_s
    return age


def job_size_factor(
    cpus: IntArray | FloatArray,
    nodes: IntArray | FloatArray,
    cluster_cpus: float,
    cluster_nodes: float,
    favor_small: bool,
) -> FloatArray:
    """Slurm's job size factor (without SMALL_RELATIVE_TO_TIME), clipped to [0, 1]."""
    c = np.asarray(cpus, dtype=np.float64)
    n = np.asarray(nodes, dtype=np.float64)
    if favor_small:
        js = ((cluster_nodes - n) / cluster_nodes + (cluster_cpus - c) / cluster_cpus) / 2.0
    else:
        js = (n / cluster_nodes + c / cluster_cpus) / 2.0
    out: FloatArray = np.clip(js, 0.0, 1.0)
    return out


def partition_factor(params: MultifactorParams, partitions: Sequence[str]) -> FloatArray:
    """Each partition's PriorityJobFactor (1 when not listed) over the largest of the site's partitions
    (Slurm's norm_priority; ``partition_job_factor`` should list every partition of slurm.conf)."""
    table = params.partition_job_factor
    top = max(table.values(), default=1.0)
    return np.array([table.get(p, 1.0) / top if top > 0 else 0.0 for p in partitions], dtype=np.float64)


def qos_factor(params: MultifactorParams, qos: Sequence[str]) -> FloatArray:
    """Each QOS's Priority (0 when not listed) over the largest; 0 when every QOS has priority 0."""
    top = max(params.qos_priority.values(), default=0.0)
    return np.array([params.qos_priority.get(q, 0.0) / top if top > 0 else 0.0 for q in qos], dtype=np.float64)


@dataclass(frozen=True)
class Factors:
    """The normalised factors of a set of jobs (one array each) and the priorities they give."""

    age: FloatArray
    fairshare: FloatArray
    job_size: FloatArray
    partition: FloatArray
    qos: FloatArray
    priority: FloatArray


def combine(
    params: MultifactorParams,
    age: FloatArray,
    fairshare: FloatArray,
    job_size: FloatArray,
    partition: FloatArray,
    qos: FloatArray,
) -> Factors:
    """The weighted sum, truncated to an integer in [1, 2^32 − 1] as Slurm stores it."""
    raw = (
        params.weight_age * age
        + params.weight_fairshare * fairshare
        + params.weight_job_size * job_size
        + params.weight_partition * partition
        + params.weight_qos * qos
    )
    prio: FloatArray = np.clip(np.floor(raw), 1.0, MAX_PRIORITY)
    return Factors(age, fairshare, job_size, partition, qos, prio)


def queue_order(priority: FloatArray, job_id: IntArray) -> IntArray:
    """Indices by priority, highest first, ties by job id (Slurm's queue sort, one partition tier)."""
    return np.lexsort((np.asarray(job_id), -np.asarray(priority))).astype(np.int64)


def job_factors(
    params: MultifactorParams,
    tree: AssocTree,
    usage: FloatArray,
    now_s: float,
    *,
    eligible_s: FloatArray,
    cpus: IntArray,
    nodes: IntArray,
    assoc: Sequence[str],
    partitions: Sequence[str],
    qos: Sequence[str],
    cluster_cpus: float,
    cluster_nodes: float,
) -> Factors:
    """Every factor and the priority of a set of jobs at a decay pass ``now_s``, from the usage then.

    ``assoc``: each job's association key ``"account/user"`` (:meth:`AssocTree.key`).  A job whose
    association is not in the tree gets fair-share 0 (Slurm: no association, no fair-share).
    """
    fs_user = fairshare_factors(tree, usage, params)
    fs = np.array([fs_user[tree.index[a]] if a in tree.index else 0.0 for a in assoc], dtype=np.float64)
    return combine(
        params,
        age_factor(now_s, eligible_s, params.max_age_s),
        fs,
        job_size_factor(cpus, nodes, cluster_cpus, cluster_nodes, params.favor_small),
        partition_factor(params, partitions),
        qos_factor(params, qos),
    )


# ------------------------------------------------------------------------------ a live ranking agent
class MultifactorAgent(FixedRankAgent):
    """Ranks pending jobs by the multifactor priority, with the usage accrued from the views it sees.

    Accounts are the views' VOs (one user association each); usage starts at zero when the
    agent starts (a live site's own usage is in Slurm; this agent is the emulation, for a
    replay or a side-by-side check, not a replacement for Slurm's plugin).
    """

    def __init__(
        self, params: MultifactorParams, vos: Sequence[str], mode: Mode = "boost", cores_per_node: int = 1
    ) -> None:
        super().__init__(mode)
        self.params = params
        self.tree = AssocTree.flat(list(vos) or ["default"], params=params)
        self.cores_per_node = max(int(cores_per_node), 1)
        self.ledger: UsageLedger | None = None
        self._running: set[int] = set()
        self._fs: FloatArray = np.ones(self.tree.n_users)
        self._fs_time = -math.inf

    def _user(self, vo: int) -> int:
        return min(max(int(vo), 0), self.tree.n_users - 1)

    def _observe(self, view: ClusterView) -> None:
        t = float(view.time_s)
        if self.ledger is None:
            self.ledger = UsageLedger(self.tree.n_users, self.params, origin_s=t)
        led = self.ledger
        now_running = {
            int(j): (self._user(v), int(c))
            for j, v, c in zip(
                view.running.job_id.tolist(), view.running.vo.tolist(), view.running.cores.tolist(), strict=True
            )
        }
        for j in self._running - now_running.keys():
            led.end(j, t)
        for j, (u, c) in now_running.items():
            if j not in self._running:
                led.start(j, u, c, t)
        self._running = set(now_running)
        led.advance(t)
        if led.pass_time > self._fs_time:
            self._fs = fairshare_factors(self.tree, led.pass_usage, self.params)
            self._fs_time = led.pass_time

    def factors(self, view: ClusterView) -> Factors:
        self._observe(view)
        pend = view.pending
        total = max(int(view.total_cores), 1)
        nodes = np.ceil(pend.cores / self.cores_per_node)
        js = job_size_factor(pend.cores, nodes, total, max(total / self.cores_per_node, 1.0), self.params.favor_small)
        zeros = np.zeros(len(pend))
        fs = self._fs[np.clip(pend.vo, 0, self.tree.n_users - 1)] if len(pend) else zeros
        part = partition_factor(self.params, ["" for _ in range(len(pend))])
        return combine(self.params, age_factor(view.time_s, pend.submit_s, self.params.max_age_s), fs, js, part, zeros)

    def rank(self, view: ClusterView) -> IntArray:
        return queue_order(self.factors(view).priority, view.pending.job_id)

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        """:func:`queue_order`'s fields: the priority (highest first), then the job id."""
        return [
            RankKey(
                "multifactor priority", np.asarray(self.factors(view).priority, dtype=np.float64), higher_first=True
            ),
            RankKey("job id", view.pending.job_id.astype(np.float64)),
        ]


# ------------------------------------------------------------------------------ a site's settings, as text
#: slurm.conf key (lower case) → the policy parameter it sets.
SLURM_CONF_WEIGHTS = {
    "priorityweightage": "weight_age",
    "priorityweightfairshare": "weight_fairshare",
    "priorityweightjobsize": "weight_job_size",
    "priorityweightpartition": "weight_partition",
    "priorityweightqos": "weight_qos",
}
SLURM_CONF_TIMES = {  # key → (parameter, the unit of a bare number in seconds)
    "prioritymaxage": ("max_age_s", 60.0),
    "prioritydecayhalflife": ("half_life_s", 60.0),
    "prioritycalcperiod": ("calc_period_s", 60.0),
}
#: PriorityFlags the emulation follows; any other flag is reported as not modelled.
HANDLED_FLAGS = frozenset({"NO_FAIR_TREE", "FAIR_TREE"})


def slurm_duration_s(text: str, bare_unit_s: float = 60.0) -> float:
    """A Slurm duration in seconds: ``MIN``, ``MIN:SEC``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``.

    A bare number counts ``bare_unit_s`` seconds (minutes for the Priority* times).
    """
    t = text.strip()
    days = 0.0
    if "-" in t:
        d, _, t = t.partition("-")
        days = float(int(d))
        parts = [int(x) for x in t.split(":")]
        while len(parts) < 3:
            parts.append(0)
        h, m, s = parts[:3]
        return days * DAY_S + h * 3600.0 + m * 60.0 + s
    parts = [int(x) for x in t.split(":")]
    if len(parts) == 1:
        return parts[0] * bare_unit_s
    if len(parts) == 2:
        return parts[0] * 60.0 + parts[1]
    if len(parts) == 3:
        return parts[0] * 3600.0 + parts[1] * 60.0 + parts[2]
    raise ValueError(text)


@dataclass(frozen=True)
class SiteConf:
    """What slurm.conf says about priority: the policy parameters, the partitions' job factors,
    and the settings the emulation does not follow (reported, never silently dropped)."""

    params: dict[str, object]
    partition_job_factor: dict[str, float]
    not_modelled: tuple[str, ...]
    priority_type: str


def _partition_factor(pairs: list[tuple[str, str, str]]) -> float:
    """The job factor of a ``PartitionName=…`` line's ``key=value`` pairs (1 unless it sets PriorityJobFactor)."""
    factor = 1.0
    for key, _, value in pairs[1:]:
        if key.lower() in ("priorityjobfactor", "priority"):
            factor = float(int(value))
    return factor


def _priority_setting(key: str, value: str, params: dict[str, object], not_modelled: list[str]) -> str | None:
    """Apply one ``key=value`` line (``key`` lower case) to ``params`` / ``not_modelled``; the PriorityType if
    the line sets it."""
    if key in SLURM_CONF_WEIGHTS:
        params[SLURM_CONF_WEIGHTS[key]] = float(int(value))
    elif key in SLURM_CONF_TIMES:
        pname, unit = SLURM_CONF_TIMES[key]
        params[pname] = slurm_duration_s(value, unit)
    elif key == "priorityfavorsmall":
        params["favor_small"] = value.lower() in ("yes", "1", "true")
    elif key == "fairsharedampeningfactor":
        params["damp_factor"] = float(int(value))
    elif key == "priorityflags":
        flags = {f.strip().upper() for f in value.split(",") if f.strip()}
        params["fair_tree"] = "NO_FAIR_TREE" not in flags
        not_modelled += [f"PriorityFlags={f}" for f in sorted(flags - HANDLED_FLAGS)]
    elif key == "priorityweighttres":
        not_modelled.append(f"PriorityWeightTRES={value}")
    elif key == "prioritytype":
        return value
    elif key == "accountingstorageenforce":
        enforce = {f.strip().lower() for f in value.split(",")}
        params["charge_at_end"] = bool(enforce & {"limits", "safe"})
    return None


def parse_slurm_conf(text: str, source: str = "slurm.conf") -> SiteConf:
    """The priority settings of a slurm.conf text; a bad value is a one-line ValueError naming line and key."""
    # Without AccountingStorageEnforce=limits Slurm never charges a job's last part (UsageLedger).
    params: dict[str, object] = {"charge_at_end": False}
    parts: dict[str, float] = {}
    not_modelled: list[str] = []
    ptype = "priority/basic"
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.lower().startswith("include "):
            not_modelled.append(f"{source}:{lineno}: include (not followed)")
            continue
        pairs = [item.partition("=") for item in line.split()]
        first = pairs[0][0].lower()
        try:
            if first == "partitionname":
                factor = _partition_factor(pairs)
                if pairs[0][2].lower() != "default":
                    parts[pairs[0][2]] = factor
            elif len(pairs) == 1 and pairs[0][1]:
                setting = _priority_setting(first, pairs[0][2].strip(), params, not_modelled)
                ptype = ptype if setting is None else setting
        except ValueError:
            raise ValueError(f"{source}:{lineno}: bad value in {raw.strip()!r}") from None
    return SiteConf(params, parts, tuple(not_modelled), ptype)


@dataclass(frozen=True)
class ShareRow:
    """One association of ``sshare -a -P -l`` (or ``-a -P``): account, user (None for an account),
    its depth in the tree (root 0), raw shares, raw usage and, when printed, Slurm's own factor."""

    account: str
    user: str | None
    depth: int
    shares: float
    raw_usage: float
    fairshare: float | None
    level_fs: float | None


def parse_sshare(text: str, source: str = "sshare") -> list[ShareRow]:
    """Rows of ``sshare -a -P [-l]`` output (header line first; the account's leading spaces give the depth).

    Shares ``parent`` (FairShare=parent) are not modelled and refused in one line.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ValueError(f"{source}: empty output")
    header = [h.strip() for h in lines[0].split("|")]
    need = ("Account", "User", "RawShares", "RawUsage")
    missing = [h for h in need if h not in header]
    if missing:
        raise ValueError(f"{source}: line 1: header lacks {', '.join(missing)} (expected sshare -a -P -l output)")
    col = {h: i for i, h in enumerate(header)}
    rows: list[ShareRow] = []
    for lineno, line in enumerate(lines[1:], 2):
        cells = line.split("|")
        if len(cells) != len(header):
            raise ValueError(f"{source}: line {lineno}: {len(cells)} fields, header has {len(header)}")
        account_cell = cells[col["Account"]]
        account = account_cell.strip()
        depth = len(account_cell) - len(account_cell.lstrip(" "))
        user = cells[col["User"]].strip() or None
        shares_text = cells[col["RawShares"]].strip()
        try:
            if shares_text == "parent":
                raise ValueError(f"{source}: line {lineno}: RawShares=parent is not modelled")
            shares = float(shares_text) if shares_text else 1.0
            usage = float(cells[col["RawUsage"]].strip() or 0.0)
            fs_text = cells[col["FairShare"]].strip() if "FairShare" in col else ""
            lf_text = cells[col["LevelFS"]].strip() if "LevelFS" in col else ""
            fairshare = float(fs_text) if fs_text else None
            level = float(lf_text) if lf_text else None
        except ValueError as exc:
            if "not modelled" in str(exc):
                raise
            raise ValueError(f"{source}: line {lineno}: bad number in {line.strip()!r}") from None
        rows.append(ShareRow(account, user, depth, shares, usage, fairshare, level))
    return rows


def tree_from_sshare(rows: Sequence[ShareRow]) -> tuple[AssocTree, FloatArray]:
    """The association tree of ``sshare -a`` rows, and the raw usage of each user association.

    Accounts keep the usage sshare reports for them (:attr:`Assoc.reported_usage`): Slurm's account
    usage is not always the sum of its users' (usage of a removed user stays with the account).

    Rows come depth first: an account at depth d is a child of the last account at depth d − 1;
    a user row belongs to the nearest account of its name above it (``root|root`` to the root).
    """
    root: Assoc | None = None
    stack: list[Assoc] = []
    usage: dict[str, float] = {}
    for row in rows:
        if row.user is None:
            node = Assoc(row.account, None, row.shares, reported_usage=row.raw_usage)
            if row.account == "root" and row.depth == 0 and root is None:
                root = node
                stack = [root]
                continue
            if root is None:
                raise ValueError(f"sshare: account {row.account!r} before the root")
            del stack[row.depth :]
            stack[-1].children.append(node)
            stack.append(node)
        else:
            if root is None:
                raise ValueError(f"sshare: user {row.user!r} before the root")
            parent = next((a for a in reversed(stack) if a.account == row.account), None)
            if parent is None:
                raise ValueError(f"sshare: user {row.user!r} of account {row.account!r} outside it")
            parent.children.append(Assoc(row.account, row.user, row.shares))
            usage[AssocTree.key(row.account, row.user)] = row.raw_usage
    if root is None:
        raise ValueError("sshare: no root association")
    tree = AssocTree(root)
    values = np.array([usage[AssocTree.key(u.account, u.user)] for u in tree.users], dtype=np.float64)
    return tree, values


def params_from_policy(
    values: Mapping[str, object], partition_job_factor: Mapping[str, float] | None = None
) -> MultifactorParams:
    """:class:`MultifactorParams` from the ``multifactor`` policy's resolved parameters."""
    shares_text = str(values.get("shares", "") or "")
    shares: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in shares_text.split("/"))):
        name, sep, value = item.rpartition(":")
        try:
            if not sep or not name:
                raise ValueError(item)
            shares[name] = float(value)
        except ValueError:
            raise ValueError(f"parameter 'shares': expected ACCOUNT:SHARES[/ACCOUNT:SHARES…], got {item!r}") from None
    keys = (
        "weight_age",
        "weight_fairshare",
        "weight_job_size",
        "weight_partition",
        "weight_qos",
        "max_age_s",
        "half_life_s",
        "calc_period_s",
        "fair_tree",
        "favor_small",
        "damp_factor",
        "charge_at_end",
    )
    kwargs = {k: values[k] for k in keys if k in values}
    return MultifactorParams(
        **kwargs,  # type: ignore[arg-type]
        account_shares=shares,
        partition_job_factor=dict(partition_job_factor or {}),
    )
