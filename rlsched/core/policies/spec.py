"""A policy spec: the name of a registry policy, its parameters, and what it was built for.

One spec names a policy everywhere: ``rlsched sim run --policy``, the experiments, the
sweeps, the daemon's ``[agent]`` table and the header of a saved model.  Its string form is
the command-line one, ``name[:key=value,key=value…]`` (``sarsa-esn:lam=1,keep_idle_cores=2``);
its dict form (:meth:`PolicySpec.to_dict`) is what a saved model carries, together with the
VO names and the feature layout (:class:`rlsched.core.features.FeatureConfig`) the model's
input columns were built for — a model is only usable where both match.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rlsched.core.errors import RlschedError


class PolicyError(RlschedError, ValueError):
    """A bad policy name, parameter or model file; the message is one line for the user."""


@dataclass(frozen=True)
class PolicySpec:
    """A registry policy with its parameters (see the module docstring).

    ``params`` hold every parameter of the policy, defaults filled in, once the spec went
    through :func:`rlsched.core.policies.registry.resolve`; ``vos`` and ``features`` are
    empty until the policy is bound to a workload or a live configuration (learned policies
    need both: they fix the width of the state and action vectors).  ``source`` records the
    model file a policy was loaded from (``path`` and ``sha256``), so that a checkpoint of
    continued learning can tell which model it descends from.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    vos: tuple[str, ...] = ()
    features: Mapping[str, Any] | None = None
    source: Mapping[str, str] | None = None
    #: The class rule of the site the model was trained for (``ClassRule.to_dict()`` of
    #: :mod:`rlsched.core.classify`: which jobs its ``job_class`` column calls
    #: interactive); None when the training trace was classed otherwise (by runtime, P-grid §4.2).
    class_rule: Mapping[str, Any] | None = None
    #: The parameters the user named (the rest are registry defaults), kept by
    #: :func:`~rlsched.core.policies.registry.resolve` so that a site file read later
    #: (``multifactor:slurm_conf=``) replaces defaults only: a value given on purpose wins even
    #: where it equals the default.  None: not resolved yet (every parameter present counts as given).
    explicit: frozenset[str] | None = field(default=None, compare=False)

    def with_params(self, **params: Any) -> PolicySpec:
        named = self.explicit.union(params) if self.explicit is not None else None
        return replace(self, params={**self.params, **params}, explicit=named)

    def bound(self, vos: tuple[str, ...], features: Mapping[str, Any] | None) -> PolicySpec:
        """The same policy bound to a VO list and a feature layout."""
        return replace(
            self, params=dict(self.params), vos=tuple(vos), features=dict(features) if features is not None else None
        )

    def with_source(self, path: str, sha256: str) -> PolicySpec:
        return replace(self, params=dict(self.params), source={"path": path, "sha256": sha256})

    def with_class_rule(self, rule: Mapping[str, Any] | None) -> PolicySpec:
        return replace(self, params=dict(self.params), class_rule=dict(rule) if rule is not None else None)

    def label(self) -> str:
        """The command-line form: ``name`` or ``name:k=v,…`` (parameters sorted)."""
        return format_policy(self.name, self.params)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": dict(self.params),
            "vos": list(self.vos),
            "features": dict(self.features) if self.features is not None else None,
            "source": dict(self.source) if self.source is not None else None,
            "class_rule": dict(self.class_rule) if self.class_rule is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PolicySpec:
        try:
            name = data["name"]
            params = data.get("params") or {}
            vos = data.get("vos") or []
        except (KeyError, TypeError, AttributeError) as exc:
            raise PolicyError(f"policy spec: missing or malformed key {exc}") from None
        if not isinstance(name, str) or not isinstance(params, Mapping) or not isinstance(vos, list | tuple):
            raise PolicyError(f"policy spec: malformed (name {name!r})")
        features = data.get("features")
        source = data.get("source")
        rule = data.get("class_rule")
        return cls(
            name,
            dict(params),
            tuple(str(v) for v in vos),
            dict(features) if isinstance(features, Mapping) else None,
            {str(k): str(v) for k, v in source.items()} if isinstance(source, Mapping) else None,
            dict(rule) if isinstance(rule, Mapping) else None,
        )


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def format_policy(name: str, params: Mapping[str, Any]) -> str:
    """``name:k=v,…`` with sorted keys (just ``name`` without parameters)."""
    if not params:
        return name
    return name + ":" + ",".join(f"{k}={_format_value(params[k])}" for k in sorted(params))


def split_policy(text: str) -> tuple[str, dict[str, str]]:
    """``"sarsa-esn:lam=1,seed=3"`` → ``("sarsa-esn", {"lam": "1", "seed": "3"})`` (values untyped)."""
    name, _, rest = text.strip().partition(":")
    name = name.strip()
    if not name:
        raise PolicyError(f"policy {text!r}: empty name (expected NAME or NAME:key=value,…)")
    params: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise PolicyError(f"policy {text!r}: parameter {item!r} is not key=value")
        if key in params:
            raise PolicyError(f"policy {text!r}: parameter {key!r} given twice")
        params[key] = value.strip()
    return name, params
