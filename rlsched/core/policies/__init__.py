"""One policy vocabulary: the registry of rules, learned agents and replays, their specs, and saved models.

- :mod:`rlsched.core.policies.spec`: :class:`PolicySpec` (name, parameters, VO names, feature
  layout) and its command-line form ``name:key=value,…``.
- :mod:`rlsched.core.policies.registry`: one entry per name (family, description, checked
  parameters, the builder of a core agent, the static key of a rule).
- :mod:`rlsched.core.policies.io`: :func:`save_policy` / :func:`load_policy`, models that load anywhere.

Adding a policy: one :class:`PolicyEntry` in :mod:`rlsched.core.policies.registry` (a rule with a
static key needs only the key function; anything else a builder returning a core agent); the
simulator, the experiments and the daemon then all know its name.
"""

from rlsched.core.policies.io import (
    VERDICT_KEY,
    add_policy_metadata,
    check_compatible,
    file_sha256,
    load_model,
    load_policy,
    read_policy_spec,
    read_verdict,
    save_policy,
    save_scored_model,
)
from rlsched.core.policies.registry import (
    ALIASES,
    DEPRECATED_LEASE_POLICIES,
    DISPATCH_POLICIES,
    LEASE_POLICIES,
    LIVE_LEASE_POLICIES,
    POLICIES,
    SIM_LEASE_POLICIES,
    BuildContext,
    JobColumns,
    KeyFunction,
    Param,
    PolicyEntry,
    StaticKeyAgent,
    backfill,
    build_agent,
    describe,
    entry,
    lease_policy,
    order_by_key,
    parse_policy,
    resolve,
    static_key,
)
from rlsched.core.policies.spec import PolicyError, PolicySpec, format_policy, split_policy

__all__ = [
    "ALIASES",
    "DEPRECATED_LEASE_POLICIES",
    "DISPATCH_POLICIES",
    "LEASE_POLICIES",
    "LIVE_LEASE_POLICIES",
    "POLICIES",
    "SIM_LEASE_POLICIES",
    "VERDICT_KEY",
    "BuildContext",
    "JobColumns",
    "KeyFunction",
    "Param",
    "PolicyEntry",
    "PolicyError",
    "PolicySpec",
    "StaticKeyAgent",
    "add_policy_metadata",
    "backfill",
    "build_agent",
    "check_compatible",
    "describe",
    "entry",
    "file_sha256",
    "format_policy",
    "lease_policy",
    "load_model",
    "load_policy",
    "order_by_key",
    "parse_policy",
    "read_policy_spec",
    "read_verdict",
    "resolve",
    "save_policy",
    "save_scored_model",
    "split_policy",
    "static_key",
]
