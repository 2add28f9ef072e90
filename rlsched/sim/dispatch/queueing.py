"""The queueing-model optimiser of Tong et al. (2014, §6.2, Eqs. 8–11, Algorithm 2).

Each unit is taken as an M/M/1 queue fed by a Poisson split of the arrival flow: a task
of type ``t_i`` goes to ``PU_j`` with probability ``Pr_ij``.  Then (Eq. 8)
``λ_ij = Pr_ij·ρ_i·λ`` and ``λ_j = Σ_i λ_ij``; the unit's service rate is (Eq. 9) the
arrival-weighted mean ``μ_j = Σ_i (λ_ij/λ_j)·μ_ij``; the expected response time is (Eq. 10)
``RT = Σ_j (λ_j/λ) · 1/(μ_j − λ_j)``, minimised over the simplex rows of ``Pr`` (Eq. 11).

The paper solves Eq. 11 with MATLAB's ``fmincon`` from ``Pr_ij = 1/n``; we use SciPy's
SLSQP (sequential least squares, which handles the bounds, the equalities ``Σ_j Pr_ij = 1``
and the stability inequalities ``μ_j > λ_j``) from that start and from a rate-proportional
start, and keep the best feasible answer.

Eq. 9 averages *rates*; the mean service time of the mixture is the arrival-weighted mean
of the *times*, ``1/μ_j = Σ_i (λ_ij/λ_j)/μ_ij``.  ``service_mix="paper"`` (the default)
follows Eq. 9 as printed; ``service_mix="harmonic"`` uses the mixture's true mean service
time, for which the M/M/1 term reduces to ``S_j / (λ (1 − S_j))`` with ``S_j = Σ_i λ_ij/μ_ij``
the unit's utilisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import minimize

from rlsched.core.view import FloatArray

ServiceMix = Literal["paper", "harmonic"]
#: Units must keep this much slack (relative) for the M/M/1 formula to stay finite.
_STABILITY_MARGIN = 1e-6


def _terms(
    probs: FloatArray, type_probs: FloatArray, rate_per_h: float, mu: FloatArray, service_mix: ServiceMix
) -> tuple[FloatArray, FloatArray]:
    """Per-unit (response-time term, stability slack); slack ≤ 0 means the unit is unstable."""
    lam_ij = probs * type_probs[:, None] * rate_per_h  # Eq. 8
    lam_j = lam_ij.sum(axis=0)
    if service_mix == "paper":
        # (λ_j/λ)/(μ_j − λ_j) with μ_j from Eq. 9, multiplied through by λ_j so that an
        # unused unit (λ_j = 0) contributes 0 instead of 0/0.
        denom = (lam_ij * mu).sum(axis=0) - lam_j**2
        slack = denom - _STABILITY_MARGIN * np.maximum(lam_j, 1.0) * lam_j
        safe = np.where(denom > 0, denom, 1.0)
        terms = np.where(lam_j > 0, lam_j**2 / (rate_per_h * safe), 0.0)
    else:
        util = (lam_ij / mu).sum(axis=0)
        slack = 1.0 - _STABILITY_MARGIN - util
        terms = util / (rate_per_h * np.where(util < 1.0, 1.0 - util, 1.0))
    return terms, slack


def expected_response_time(
    probs: FloatArray, type_probs: FloatArray, rate_per_h: float, mu: FloatArray, service_mix: ServiceMix = "paper"
) -> float:
    """Eq. 10 for the allocation ``probs[type, unit]``; ``inf`` when a unit is overloaded."""
    terms, slack = _terms(
        np.asarray(probs, dtype=np.float64),
        np.asarray(type_probs, dtype=np.float64),
        rate_per_h,
        np.asarray(mu, dtype=np.float64),
        service_mix,
    )
    if np.any(slack <= 0):
        return float("inf")
    return float(terms.sum())


@dataclass(frozen=True)
class Allocation:
    """A solution of Eq. 11: ``probs[type, unit]`` and the model's expected response time (h)."""

    probs: FloatArray
    expected_response_h: float
    success: bool
    message: str


def optimise_allocation(
    type_probs: FloatArray, rate_per_h: float, mu: FloatArray, service_mix: ServiceMix = "paper", max_iter: int = 500
) -> Allocation:
    """Algorithm 2: the allocation probabilities minimising Eq. 10 under the simplex constraints.

    ``mu`` is the ``[type, unit]`` service-rate matrix the optimiser *believes* (it may carry
    estimation errors, Figs. 6–7).  Raises ``ValueError`` if no feasible allocation is found
    (the offered load exceeds what the units can serve).
    """
    rho = np.asarray(type_probs, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    m, n = mu.shape
    if rho.shape != (m,):
        raise ValueError(f"type probabilities have shape {rho.shape}, rates matrix {mu.shape}")
    if rate_per_h <= 0:
        raise ValueError(f"arrival rate {rate_per_h} must be positive")

    def objective(x: FloatArray) -> float:
        terms, slack = _terms(x.reshape(m, n), rho, rate_per_h, mu, service_mix)
        # Outside the stable region SLSQP may probe a point: return a large, smooth penalty.
        return float(terms.sum() + 1e6 * np.square(np.minimum(slack, 0.0)).sum())

    def stability(x: FloatArray) -> FloatArray:
        return _terms(x.reshape(m, n), rho, rate_per_h, mu, service_mix)[1]

    row_sums = np.kron(np.eye(m), np.ones(n))
    constraints = [
        {"type": "eq", "fun": lambda x: row_sums @ x - 1.0, "jac": lambda x: row_sums},
        {"type": "ineq", "fun": stability},
    ]
    starts = [np.full((m, n), 1.0 / n), mu / mu.sum(axis=1, keepdims=True)]  # Alg. 2 line 1; by rate
    best: Allocation | None = None
    messages = []
    for x0 in starts:
        res = minimize(
            objective,
            x0.ravel(),
            method="SLSQP",
            bounds=[(0.0, 1.0)] * (m * n),
            constraints=constraints,
            options={"maxiter": max_iter, "ftol": 1e-12},
        )
        probs = np.clip(res.x.reshape(m, n), 0.0, 1.0)
        probs /= probs.sum(axis=1, keepdims=True)
        rt = expected_response_time(probs, rho, rate_per_h, mu, service_mix)
        messages.append(str(res.message))
        if np.isfinite(rt) and (best is None or rt < best.expected_response_h):
            best = Allocation(probs, rt, bool(res.success), str(res.message))
    if best is None:
        raise ValueError(
            f"no stable allocation for λ={rate_per_h}/h with these service rates (solver: {'; '.join(messages)})"
        )
    return best


def single_type_optimum(rate_per_h: float, mu: FloatArray) -> tuple[FloatArray, float]:
    """Closed form of Eq. 11 for one task type (Lagrange conditions μ_j/(μ_j − λ_j)² = c).

    ``λ_j = μ_j − √μ_j · (Σμ − λ)/Σ√μ`` when every ``λ_j`` is non-negative; used to check the
    numerical optimiser.  Returns (probabilities per unit, expected response time).
    """
    mu = np.asarray(mu, dtype=np.float64)
    if rate_per_h >= mu.sum():
        raise ValueError(f"λ={rate_per_h} is not below the total service rate {mu.sum()}")
    k = (mu.sum() - rate_per_h) / np.sqrt(mu).sum()
    lam = mu - np.sqrt(mu) * k
    if np.any(lam < 0):
        raise ValueError("closed form needs every unit used (a slow unit would get a negative rate)")
    rt = float(np.sum(lam / rate_per_h / (mu - lam)))
    return lam / rate_per_h, rt
