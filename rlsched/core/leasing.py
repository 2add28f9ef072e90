"""Cloud-leasing decisions, pure: the FH balance, the FH Q-learner over V, and our state-aware cap.

Used by the simulator (:mod:`rlsched.sim.hybrid_cloud`) and by the live leasing controller:
no simulator import, no clock, no subprocess.

References: Fölling & Hofmann, "Learning Cloud Leasing Policies…" (FH): §2.4 the balance
metric, §5 Eq. (2) the single-state Q-learning rule and its reward rescaling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rlsched.core.view import ClusterView, FloatArray, IntArray

#: FH §5: "We decided to set α and γ to 0.1 according to several Q-Learning settings of Sutton and Barto".
FH_ALPHA = 0.1
FH_GAMMA = 0.1


def twt_improvement_pct(twt: FloatArray | float, twt_ref: float) -> FloatArray:
    """FH §2.4: twt_imp% = 100 − 100·twt/twt_ref (0 where the reference has no wait at all)."""
    twt_a = np.asarray(twt, dtype=np.float64)
    if twt_ref <= 0:
        return np.zeros_like(twt_a)
    return np.asarray(100.0 - 100.0 * twt_a / twt_ref)


def cost_pct(cost: FloatArray | float, c_ref: float) -> FloatArray:
    """FH §2.4: c% = 100·c/c_ref, with c_ref the cloud CPU-seconds under V → ∞ (0 when c_ref is 0)."""
    cost_a = np.asarray(cost, dtype=np.float64)
    if c_ref <= 0:
        return np.zeros_like(cost_a)
    return np.asarray(100.0 * cost_a / c_ref)


def balance(twt: FloatArray | float, cost: FloatArray | float, twt_ref: float, c_ref: float) -> FloatArray:
    """FH §2.4: balance = twt_imp% − c% = (100 − 100·twt/twt_ref) − 100·c/c_ref."""
    return twt_improvement_pct(twt, twt_ref) - cost_pct(cost, c_ref)


def rescale_rewards(balances: FloatArray) -> FloatArray:
    """FH §5: balances interpolated onto [0, 1]: the best clone gets 1, the worst 0.

    When every clone has the same balance the rewards are all 0.  Any constant would
    do: all Q-values are updated with the same max term, so a reward common to every
    action shifts all Q-values alike and never changes the greedy choice.
    """
    b = np.asarray(balances, dtype=np.float64)
    lo, hi = float(b.min()), float(b.max())
    if hi - lo <= 0.0:
        return np.zeros_like(b)
    return (b - lo) / (hi - lo)


@dataclass
class FHQLearner:
    """FH §5: one state, actions V ∈ 0..max_cap, α = γ = 0.1, every Q-value updated each step.

    Rule (2): Q(V) ← Q(V) + α·[r_V + γ·max_V' Q(V') − Q(V)], applied to all V with the
    rewards of the clones (the max is taken over the Q-values before the update).
    The next V is the argmax, ties to the smallest V.  Q starts at 0, so the first V is 0.
    """

    max_cap: int
    alpha: float = FH_ALPHA
    gamma: float = FH_GAMMA
    q: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        if self.max_cap < 0:
            raise ValueError("max_cap must be >= 0")
        if not 0.0 <= self.alpha <= 1.0 or not 0.0 <= self.gamma <= 1.0:
            raise ValueError("alpha and gamma must lie in [0, 1]")
        if len(self.q) == 0:
            self.q = np.zeros(self.max_cap + 1)
        elif self.q.shape != (self.max_cap + 1,):
            raise ValueError(f"q has shape {self.q.shape}, expected ({self.max_cap + 1},)")

    def choose(self) -> int:
        """Greedy V; np.argmax returns the first maximum, i.e. the smallest V among ties (FH §5)."""
        return int(np.argmax(self.q))

    def update(self, rewards: FloatArray) -> None:
        """Rule (2) for every action at once, with rewards already in [0, 1]."""
        r = np.asarray(rewards, dtype=np.float64)
        if r.shape != self.q.shape:
            raise ValueError(f"rewards have shape {r.shape}, expected {self.q.shape}")
        target = r + self.gamma * float(self.q.max())
        self.q += self.alpha * (target - self.q)

    def step(self, balances: FloatArray) -> int:
        """One learning step from the day's balances of every V; returns the next V."""
        self.update(rescale_rewards(balances))
        return self.choose()


@dataclass(frozen=True)
class StateAwareParams:
    """Our state-aware cap, a per-pass transfer rule (docs/leasing.md, "The per-pass transfer rule").

    ``threshold``: θ, the transfer bar in units of the exchange rate κ (see :func:`state_aware_cap`).
    ``arrival_window_s``: window over which the recent arrival rate is measured.
    """

    threshold: float = 1.0
    arrival_window_s: float = 86_400.0


def expected_local_waits(cores: int, run_remaining_work: float, queue_work: FloatArray) -> FloatArray:
    """Backlog estimate of each queued job's remaining wait if it stays local.

    A job waits until the work of the running jobs and of the jobs ahead of it in the
    queue has drained through the ``cores`` local nodes: (running work + work ahead)/M.
    ``queue_work[i]`` is the expected core-seconds of queued job i, in queue order.
    """
    ahead = np.cumsum(queue_work) - queue_work
    return np.asarray((run_remaining_work + ahead) / float(cores))


def state_aware_cap(
    *,
    cores: int,
    cloud_used: int,
    queue_cores: IntArray,
    queue_expected_run_s: FloatArray,
    run_remaining_work: float,
    arrival_rate_per_s: float,
    exchange_rate: float,
    params: StateAwareParams,
) -> int:
    """The cap V for this instant, from the state: backlog, queue shape and recent arrivals.

    Balance = 100 − 100·(twt/twt_ref + c/c_ref) (FH §2.4), so maximising it means
    minimising twt + κ·c with κ = twt_ref/c_ref: one cloud core-second is worth κ
    seconds of wait (``exchange_rate``).  Sending queued job j (p_j cores, expected
    runtime r_j) to the cloud costs κ·p_j·r_j and saves its own expected remaining wait
    ŵ_j plus about p_j·r_j/M for each job behind it (each starts that much earlier
    once j's work leaves the local machine); jobs that will arrive while j would have
    waited (rate λ) profit too.  Job j is worth sending when

        ŵ_j + (n_behind_j + λ·ŵ_j)·p_j·r_j/M ≥ θ·κ·p_j·r_j.

    The cap is the cloud nodes in use plus the cores of the jobs worth sending — lowered,
    when needed, so that the FH transfer strategy (which scans the queue in order and
    sends every job that fits under V) never sends a job that is not worth it: an
    unworthy job j' is refused iff V − used < (cores of worthy jobs before j') + p_j'.
    """
    n = len(queue_cores)
    if n == 0:
        return cloud_used
    if exchange_rate <= 0:
        return cloud_used  # no wait to save yet: lease nothing new
    cores_f = queue_cores.astype(np.float64)
    work = cores_f * queue_expected_run_s
    wait = expected_local_waits(cores, run_remaining_work, work)
    behind = (n - 1 - np.arange(n)) + arrival_rate_per_s * wait
    benefit = wait + behind * work / float(cores)
    worth = benefit >= params.threshold * exchange_rate * work
    sent = np.where(worth, queue_cores, 0)
    extra = int(sent.sum())
    if extra and not worth.all():
        before = np.cumsum(sent) - sent
        extra = min(extra, int((before + queue_cores)[~worth].min()) - 1)
    return int(cloud_used + max(extra, 0))


def runtime_ratio(run_s: FloatArray, req_s: FloatArray) -> float | None:
    """Σ actual runtime / Σ requested time of finished jobs: requested times → expected runtimes.

    ``None`` when nothing was requested (no finished job yet): the caller keeps its previous ratio.
    The live controller feeds the last jobs it saw finish, the simulator the jobs submitted
    long enough ago to have finished under any cap.
    """
    req = float(np.sum(req_s))
    if req <= 0:
        return None
    return float(np.sum(run_s) / req)


def arrival_rate_per_s(
    submit_s: FloatArray, now_s: float, window_s: float, watched_since_s: float | None = None
) -> float:
    """Jobs per second submitted in ``[now − window, now]``, from the sorted submit times seen so far.

    ``watched_since_s``: when the observer started (a live controller does not see the jobs
    submitted before it started): the window is then cut to ``[max(now − window, since), now]``.
    """
    if watched_since_s is None:
        since, span = now_s - window_s, window_s
    else:
        since = max(now_s - window_s, watched_since_s)
        span = now_s - since
    if span <= 0:
        return 0.0
    count = int(np.searchsorted(submit_s, now_s, side="right")) - int(np.searchsorted(submit_s, since, side="left"))
    return count / span


def remaining_work(cores: IntArray, expected_end_s: FloatArray, now_s: float) -> float:
    """Core-seconds the running jobs still hold the local machine for, to their expected (requested) ends."""
    return float((cores * np.maximum(expected_end_s - now_s, 0.0)).sum())


def state_aware_cap_from_state(
    *,
    cores: int,
    cloud_used: int,
    queue_cores: IntArray,
    queue_req_s: FloatArray,
    running_cores: IntArray,
    running_expected_end_s: FloatArray,
    now_s: float,
    runtime_ratio: float,
    arrival_rate_per_s: float,
    exchange_rate: float,
    params: StateAwareParams,
) -> int:
    """:func:`state_aware_cap` from the raw state, with the estimates both controllers use.

    The live controller (:func:`state_aware_cap_from_view`) and the simulator
    (:mod:`rlsched.sim.hybrid_cloud.runs`) both come here: the queued jobs' expected runtimes are
    their requested times × ``runtime_ratio`` (:func:`runtime_ratio`), the running jobs'
    remaining work is counted to their requested ends (:func:`remaining_work`) × the same ratio.
    """
    run_work = remaining_work(running_cores, running_expected_end_s, now_s) * runtime_ratio
    return state_aware_cap(
        cores=cores,
        cloud_used=cloud_used,
        queue_cores=queue_cores,
        queue_expected_run_s=queue_req_s * runtime_ratio,
        run_remaining_work=run_work,
        arrival_rate_per_s=arrival_rate_per_s,
        exchange_rate=exchange_rate,
        params=params,
    )


def state_aware_cap_from_view(
    view: ClusterView,
    *,
    exchange_rate: float,
    runtime_ratio: float,
    arrival_rate_per_s: float,
    params: StateAwareParams,
) -> int:
    """:func:`state_aware_cap` fed from a :class:`ClusterView` (the live controller's entry point).

    Pending jobs are taken in the batch system's order; held jobs are left out (they cannot be
    sent anywhere).  FH's nodes have one core; here the cap is computed in cores and returned
    in cloud nodes of ``view.cloud.cores_per_node`` cores (rounded up);
    ``runtime_ratio`` scales requested times to expected runtimes (actual/requested of
    finished jobs); the running jobs' remaining work is counted to their requested end.
    """
    if runtime_ratio <= 0:
        raise ValueError("runtime_ratio must be positive")
    pending = view.pending
    eligible = ~pending.held
    running = view.running
    per_node = view.cloud.cores_per_node if view.cloud is not None else 1
    in_use = view.cloud.nodes_busy * per_node if view.cloud is not None else 0
    cap_cores = state_aware_cap_from_state(
        cores=view.total_cores,
        cloud_used=in_use,
        queue_cores=pending.cores[eligible].astype(np.int64),
        queue_req_s=pending.req_time_s[eligible],
        running_cores=running.cores,
        running_expected_end_s=running.start_s + running.req_time_s,
        now_s=view.time_s,
        runtime_ratio=runtime_ratio,
        arrival_rate_per_s=arrival_rate_per_s,
        exchange_rate=exchange_rate,
        params=params,
    )
    return -(-cap_cores // per_node)


# ------------------------------------------------------------------------------ the daily learned cap
#: The daily learner's action set, as fractions of the local machine M (rounded to whole nodes).
#: Fine near 0, where the best constant V of the FH traces lies (0.11–0.31·M), coarse above.
DAILY_CAP_FRACTIONS: tuple[float, ...] = (
    0.0,
    0.01,
    0.02,
    0.03,
    0.04,
    0.05,
    0.06,
    0.08,
    0.1,
    0.12,
    0.14,
    0.16,
    0.18,
    0.2,
    0.23,
    0.26,
    0.3,
    0.35,
    0.4,
    0.5,
    0.6,
    0.8,
    1.0,
)


def daily_cap_set(
    cores: int, max_cap: int | None = None, fractions: tuple[float, ...] = DAILY_CAP_FRACTIONS
) -> tuple[int, ...]:
    """The distinct caps round(f·M) of ``fractions``, none above ``max_cap`` (the cloud nodes there are)."""
    top = cores if max_cap is None else max_cap
    return tuple(sorted({min(round(f * cores), top) for f in fractions}))


@dataclass(frozen=True)
class DailyLearnerParams:
    """Hyper-parameters of :class:`DailyCapLearner` (docs/leasing.md, "A daily learned cap").

    ``horizon_days``: H, the days after the decision day over which a cap's effect is counted (the
    update for day d's decision comes at the end of day d + H).  ``bins``: context bins per feature
    (quantiles of the feature's values on the days seen so far).  ``prior_days``: how many days'
    worth of the context-free estimate a bin's estimate is shrunk towards.

    The defaults are the setting with the best mean balance over the three FH traces in
    ``rlsched sim experiment fh-ours`` (KTH, CTC, SDSC: 27.45, 24.49, 19.23; no setting with a prior
    has a better mean); ``rlsched evaluate --leasing`` uses them on traces outside those, which were
    never tuned on.
    """

    horizon_days: int = 7
    bins: int = 3
    prior_days: float = 3.0
    #: Which daily features make the context (names of ``rlsched.sim.hybrid_cloud.daily.DAY_FEATURES``).
    features: tuple[str, ...] = ("backlog", "arrivals")
    #: After the decision day the clones go on with ``held``: the same cap; ``followed``: the caps
    #: actually chosen on the next days.
    continuation: str = "held"
    #: How many days' worth of a :class:`DailyPrior` (other traces' daily clones) the estimates start
    #: from, per bin and for the pool; 0: no prior, the learner starts cold.
    transfer_days: float = 0.0

    def __post_init__(self) -> None:
        if self.horizon_days < 0 or self.bins < 1 or self.prior_days < 0 or not self.features:
            raise ValueError("horizon_days >= 0, bins >= 1, prior_days >= 0 and a feature are required")
        if self.continuation not in ("held", "followed"):
            raise ValueError(f"continuation must be 'held' or 'followed', not {self.continuation!r}")
        if not self.transfer_days >= 0:
            raise ValueError("transfer_days must be >= 0")

    def label(self) -> str:
        transfer = f" transfer={self.transfer_days:g}" if self.transfer_days > 0 else ""
        return (
            f"H={self.horizon_days} bins={self.bins} prior={self.prior_days:g} "
            f"features={'+'.join(self.features)} continuation={self.continuation}{transfer}"
        )


def cap_fraction_index(
    caps: tuple[int, ...], cores: int, max_cap: int | None = None, fractions: tuple[float, ...] = DAILY_CAP_FRACTIONS
) -> IntArray:
    """For each cap of :func:`daily_cap_set`, the index of the first fraction that rounds to it."""
    top = cores if max_cap is None else max_cap
    first: dict[int, int] = {}
    for i, f in enumerate(fractions):
        first.setdefault(min(round(f * cores), top), i)
    try:
        return np.array([first[c] for c in caps], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"cap {exc.args[0]} is not round(f·{cores}) of any fraction") from None


@dataclass
class DailyPrior:
    """Daily clones of other traces, in units that carry over from one machine to another.

    Each sample is one decision day of a source trace: its context bin and, for every cap of
    :data:`DAILY_CAP_FRACTIONS` (a fraction of the source's M), the counterfactual wait divided by
    the source's reference wait per day (V = 0) and the cloud core-seconds divided by its reference
    cost per day (V → ∞).  In those units a cap's value is w + λ·c whatever the machine's size,
    the same sum the balance weighs (FH §2.4 divides by the same references).  The context bins are
    quantiles of each trace's own history, so they too mean the same on every trace.
    """

    bins: int
    features: int
    fractions: tuple[float, ...] = DAILY_CAP_FRACTIONS
    sources: tuple[str, ...] = ()
    sums: FloatArray = field(default_factory=lambda: np.zeros(0))
    counts: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        shape = (self.bins**self.features, 2, len(self.fractions))
        if self.sums.size == 0:
            self.sums = np.zeros(shape)
            self.counts = np.zeros(shape[0])
        elif self.sums.shape != shape or self.counts.shape != shape[:1]:
            raise ValueError(f"prior arrays have shapes {self.sums.shape}/{self.counts.shape}, expected {shape}")

    def add(self, context: int, waits: FloatArray, cloud: FloatArray, fraction_index: IntArray) -> None:
        """One normalised sample (one value per cap, ``fraction_index`` mapping the caps to fractions).

        A fraction that no cap stands for (merged by rounding on a small machine) takes the value of
        the nearest cap below it, so every fraction has a value.
        """
        idx = np.asarray(fraction_index, dtype=np.int64)
        row = np.zeros((2, len(self.fractions)))
        row[:, idx] = np.stack([np.asarray(waits, dtype=np.float64), np.asarray(cloud, dtype=np.float64)])
        present = np.zeros(len(self.fractions), dtype=bool)
        present[idx] = True
        for i in range(1, len(self.fractions)):
            if not present[i]:
                row[:, i] = row[:, i - 1]
        self.sums[context] += row
        self.counts[context] += 1.0

    def means(self, fraction_index: IntArray) -> tuple[FloatArray, FloatArray, FloatArray, float]:
        """Per-bin means (bins, 2, caps), their counts, the pooled mean (2, caps) and its count, for the caps
        ``fraction_index`` stands for."""
        idx = np.asarray(fraction_index, dtype=np.int64)
        sums = self.sums[:, :, idx]
        with np.errstate(invalid="ignore", divide="ignore"):
            per_bin = np.where(self.counts[:, None, None] > 0, sums / self.counts[:, None, None], 0.0)
        total = float(self.counts.sum())
        pooled = sums.sum(axis=0) / total if total > 0 else np.zeros(sums.shape[1:])
        return np.asarray(per_bin), self.counts.copy(), np.asarray(pooled), total


class DailyCapLearner:
    """A contextual learner that sets the cap V once a day from what is seen at the day's start.

    Context: a few daily features (backlog, recent arrivals, …), each put into one of ``bins``
    quantile bins of its own history (so the bins mean the same on every trace and need no scale).
    For every context bin b and cap a it keeps the mean counterfactual wait W(b, a) and cloud
    core-seconds C(b, a) of the days it chose in bin b: what days d … d+H would have cost had the
    cap been a on day d and what was actually chosen afterwards — FH's daily clones, run H days
    further so that a cap's effect on the next days' queue counts too.  The estimates of a bin are
    shrunk towards the context-free means with weight ``prior_days``.  Greedy: the cap of least
    W + κ·C with the exchange rate κ known at decision time, ties to the smallest cap; with nothing
    learned yet that is the smallest cap (FH's learner also starts at 0).
    """

    def __init__(
        self,
        caps: tuple[int, ...],
        features: int,
        params: DailyLearnerParams,
        prior: DailyPrior | None = None,
        fraction_index: IntArray | None = None,
    ) -> None:
        if not caps or list(caps) != sorted(set(caps)):
            raise ValueError("caps must be distinct and increasing")
        if features < 1:
            raise ValueError("at least one feature is needed")
        self.caps = caps
        self.features = features
        self.params = params
        self.history: list[list[float]] = [[] for _ in range(features)]
        n_bins = params.bins**features
        # [..., 0, :] wait, [..., 1, :] cloud core-seconds.
        self.sums = np.zeros((n_bins, 2, len(caps)))
        self.counts = np.zeros(n_bins)
        self.pooled = np.zeros((2, len(caps)))
        self.pooled_count = 0.0
        self.prior: tuple[FloatArray, FloatArray, FloatArray] | None = None  # per bin, counts, pooled
        if prior is not None and params.transfer_days > 0:
            if (prior.bins, prior.features) != (params.bins, features):
                raise ValueError(
                    f"the prior has {prior.bins} bins × {prior.features} features, "
                    f"the learner {params.bins} × {features}"
                )
            if fraction_index is None or len(fraction_index) != len(caps):
                raise ValueError("a prior needs the fraction index of every cap (cap_fraction_index)")
            per_bin, counts, pooled, _ = prior.means(fraction_index)
            self.prior = (per_bin, counts, pooled)

    def observe(self, features: FloatArray) -> int:
        """The bin of a new day's features (each one's quantile among the earlier days, mixed radix);
        the features join the history."""
        x = np.asarray(features, dtype=np.float64)
        if x.shape != (self.features,):
            raise ValueError(f"expected {self.features} features, got shape {x.shape}")
        k = self.params.bins
        index = 0
        for i in range(self.features):
            past = self.history[i]
            rank = sum(1 for v in past if v < x[i]) / len(past) if past else 0.0
            index = index * k + min(int(rank * k), k - 1)
            past.append(float(x[i]))
        return index

    def estimates(
        self, context: int, exchange_rate: float, wait_per_day: float = 0.0, cost_per_day: float = 0.0
    ) -> FloatArray:
        """Q(context, ·) = W + κ·C: the bin's means shrunk towards the pooled means.

        With a prior (``transfer_days`` T > 0), both the bin's and the pooled means start from T days
        of the prior's, put into this machine's units with the reference wait and cost per day seen so
        far (``wait_per_day``, ``cost_per_day``).  Before any own day is learned the prior alone
        decides, in its own units: w + λ·c, with λ = κ·cost_per_day/wait_per_day (1, FH's weight,
        while the references are still zero).  Own days but zero references: the own means alone.
        """
        m = self.params.prior_days
        if self.prior is not None:
            per_bin, counts, pooled_prior = self.prior
            t = self.params.transfer_days
            t_bin = t if counts[context] > 0 else 0.0
            if self.pooled_count == 0:
                mean = (t_bin * per_bin[context] + m * pooled_prior) / (t_bin + m) if t_bin + m > 0 else pooled_prior
                known = wait_per_day > 0 and cost_per_day > 0
                weight = exchange_rate * cost_per_day / wait_per_day if known else 1.0
                return np.asarray(mean[0] + weight * mean[1])
            if wait_per_day > 0 and cost_per_day > 0:
                scale = np.array([[wait_per_day], [cost_per_day]])
                pooled = (self.pooled + t * scale * pooled_prior) / (self.pooled_count + t)
                mean = (self.sums[context] + t_bin * scale * per_bin[context] + m * pooled) / (
                    self.counts[context] + t_bin + m
                )
                return np.asarray(mean[0] + exchange_rate * mean[1])
        if self.pooled_count == 0:
            return np.zeros(len(self.caps))
        mean = (
            (self.sums[context] + m * self.pooled / self.pooled_count) / (self.counts[context] + m)
            if (self.counts[context] + m) > 0
            else self.pooled / self.pooled_count
        )
        return np.asarray(mean[0] + exchange_rate * mean[1])

    def choose(self, context: int, exchange_rate: float, wait_per_day: float = 0.0, cost_per_day: float = 0.0) -> int:
        return self.caps[int(np.argmin(self.estimates(context, exchange_rate, wait_per_day, cost_per_day)))]

    def update(self, context: int, waits: FloatArray, cloud: FloatArray) -> None:
        """Add one day's counterfactual wait (s) and cloud core-seconds (one per cap) to the bin and the pool."""
        sample = np.stack([np.asarray(waits, dtype=np.float64), np.asarray(cloud, dtype=np.float64)])
        if sample.shape != (2, len(self.caps)):
            raise ValueError(f"expected one wait and one cost per cap ({len(self.caps)})")
        self.sums[context] += sample
        self.counts[context] += 1.0
        self.pooled += sample
        self.pooled_count += 1.0
