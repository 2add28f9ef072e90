"""Models that load anywhere: one ``.npz`` holds a learned policy's spec, weights and experience.

A scored policy (:mod:`rlsched.core.scoring`) is saved too (:func:`save_scored_model`): its spec holds
its features and weights, and the file adds what the search recorded (fitness per generation, the
validation scores it was selected on).  :func:`load_model` loads either kind.

Following stable-baselines3's ``Model.load``, :func:`load_policy` rebuilds the right agent
from the file alone — learner, Q-function, feature layout, runtime model, λ, keep-idle, the
replay memory and the counters — with no agent built first.  A model is only usable where
its input columns mean the same thing: the caller passes the VO list and feature layout of
its configuration, and a model built for others is refused with a one-line error naming
both.  Files are written atomically (:mod:`rlsched.core.atomic`, through the learner's
checkpoint).

Loading reads a model's zip directory first and inflates nothing it has not bounded (issue 24: a
10.7 MB file with a deflated 1 GiB member was loaded whole).  Every member must be one a model has
(``__meta__`` and the arrays of its Q-function, replay memory and agent, or a scored model's search record:
:data:`MEMBER_PREFIXES`),
each declares at most :data:`MAX_MEMBER_BYTES` and inflates to at most :data:`MAX_INFLATION` times
what it takes in the file (models are written uncompressed), and its array header must describe
exactly the bytes it declares.  :func:`read_policy_spec` then inflates ``__meta__`` alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.agents import Mode, SchedulingAgent
from rlsched.core.approximators.base import FORMAT_VERSION, read_checkpoint, save_checkpoint
from rlsched.core.features import FeatureConfig
from rlsched.core.policies.registry import BuildContext, build_agent, entry, feature_config, resolve
from rlsched.core.policies.spec import PolicyError, PolicySpec
from rlsched.core.scoring import ScoredRankAgent
from rlsched.core.view import Agent

#: The families whose policies are saved as model files: learned agents (weights and experience) and scored
#: policies (their spec holds the weights; the file adds how the search found them).
MODEL_FAMILIES: tuple[str, ...] = ("learned", "scored")

#: Key of a model's verdict (``rlsched train``: the model against the rules on the validation window)
#: inside its policy metadata.
VERDICT_KEY = "verdict"


def save_policy(
    agent: SchedulingAgent, spec: PolicySpec, path: str | os.PathLike[str], metadata: Mapping[str, Any] | None = None
) -> None:
    """Write ``agent`` (a learned policy) with ``spec`` to one ``.npz``, atomically.

    ``spec`` is bound to the agent's feature layout before it is written (its VO names are
    the caller's; without them the VOs are named by index).  ``metadata``: more keys of the
    policy metadata (the verdict, :data:`VERDICT_KEY`).
    """
    if not isinstance(agent, SchedulingAgent):
        raise PolicyError(f"policy {spec.name!r} has no model to save (only learned policies do)")
    features = agent.encoder.config.to_dict()
    vos = spec.vos or tuple(f"vo{k}" for k in range(agent.encoder.config.n_vos))
    if len(vos) != agent.encoder.config.n_vos:
        raise PolicyError(
            f"policy {spec.name!r}: {len(vos)} VO names for a model with {agent.encoder.config.n_vos} VO columns"
        )
    agent.policy = {**spec.bound(vos, features).to_dict(), **(metadata or {})}
    agent.save(path)


def add_policy_metadata(
    source: str | os.PathLike[str], target: str | os.PathLike[str], metadata: Mapping[str, Any]
) -> None:
    """Copy the model ``source`` to ``target`` (atomically) with ``metadata`` added to its policy metadata."""
    read_policy_spec(source)  # a model with a spec, or a one-line PolicyError
    try:
        meta, arrays = read_checkpoint(source)
    except (ValueError, OSError) as exc:
        raise PolicyError(_one_line(f"model {source}: {exc}")) from None
    meta.pop("format_version", None)
    meta["agent"]["policy"] = {**meta["agent"]["policy"], **metadata}
    save_checkpoint(target, meta, arrays)


def read_verdict(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The verdict a model records (:data:`VERDICT_KEY`), None for a model trained without one."""
    _, agent_meta = read_policy_spec(path)
    verdict = agent_meta["policy"].get(VERDICT_KEY)
    return dict(verdict) if isinstance(verdict, Mapping) else None


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _features_text(config: FeatureConfig) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in config.to_dict().items()) + ")"


#: The members of a model file besides ``__meta__``: the arrays of the Q-function, the replay memory and the
#: agent (:meth:`rlsched.core.learners.base.BatchLearner.save`).
MEMBER_PREFIXES = ("q/", "replay/", "agent/", "search/")
_META_MEMBER = "__meta__.npy"
#: The most one member may hold once inflated: 16 times the largest model the registry builds (a
#: ``fqi-table``'s value and visit tables take 64 MiB each; a 100,000-transition replay memory ~12 MB).
MAX_MEMBER_BYTES = 1 << 30
#: How many times its size in the file a compressed member may inflate to.  rlsched writes models
#: uncompressed (``np.savez``: ×1); ``np.savez_compressed`` of float arrays gives a few; a deflate
#: bomb ×1000.
MAX_INFLATION = 64
#: Members of a model: a few dozen at most (an FFNN's layers, the replay arrays, the agent's).
MAX_MEMBERS = 512
#: ``__meta__`` is JSON text (the spec, the hyper-parameters, the random state): kilobytes.
MAX_META_BYTES = 16 << 20


def check_model_members(path: str | os.PathLike[str]) -> None:
    """Refuse, in one line, a model file with a member it should not have or that could inflate beyond its
    bound — before anything is inflated but the members' array headers (a few hundred bytes each)."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if len(members) > MAX_MEMBERS:
                raise PolicyError(f"model {path}: {len(members)} members, a model has at most {MAX_MEMBERS}")
            names = {info.filename for info in members}
            if _META_MEMBER not in names:
                raise PolicyError(f"model {path}: no {_META_MEMBER} member (not an rlsched model)")
            for info in members:
                _check_member(path, archive, info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, OSError) as exc:
        raise PolicyError(_one_line(f"model {path}: not a readable model file ({exc})")) from None


def _check_member(path: str | os.PathLike[str], archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    name = info.filename
    where = f"model {path}: member {name!r}"
    if name != _META_MEMBER and not (name.startswith(MEMBER_PREFIXES) and name.endswith(".npy")):
        raise PolicyError(
            f"{where} is not part of a model (a model holds {_META_MEMBER} and "
            f"{', '.join(p + '*.npy' for p in MEMBER_PREFIXES)})"
        )
    bound = MAX_META_BYTES if name == _META_MEMBER else MAX_MEMBER_BYTES
    if info.file_size > bound:
        raise PolicyError(f"{where} declares {info.file_size} bytes, more than the {bound} a model member may hold")
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > MAX_INFLATION * max(info.compress_size, 1):
        raise PolicyError(
            f"{where} inflates {info.compress_size} bytes to {info.file_size} (more than "
            f"x{MAX_INFLATION}): not a model rlsched wrote"
        )
    # The array header must describe exactly the bytes the member declares: numpy allocates what the header
    # says before it reads (a small member could otherwise claim a huge shape).
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(member)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        except ValueError as exc:
            raise PolicyError(_one_line(f"{where}: not a numpy array ({exc})")) from None
        if dtype.hasobject:
            raise PolicyError(f"{where}: an array of Python objects (a model holds numbers and text)")
        data_bytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        header_bytes = member.tell()
    if header_bytes + data_bytes != info.file_size:
        raise PolicyError(
            f"{where}: its header describes {data_bytes} bytes of data, the member holds "
            f"{info.file_size - header_bytes}"
        )


def _read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``__meta__`` of a model file whose members were checked; only that member is inflated."""
    check_model_members(path)
    try:
        with zipfile.ZipFile(path) as archive, archive.open(_META_MEMBER) as member:
            text = np.lib.format.read_array(member, allow_pickle=False)
        meta = json.loads(str(text))
    except (ValueError, OSError, zipfile.BadZipFile, RecursionError) as exc:
        raise PolicyError(_one_line(f"model {path}: {_META_MEMBER} is unreadable ({exc})")) from None
    if not isinstance(meta, dict):
        raise PolicyError(f"model {path}: {_META_MEMBER} is not a JSON object")
    if meta.get("format_version") != FORMAT_VERSION:
        raise PolicyError(
            f"model {path}: format_version {meta.get('format_version')!r} is not supported (expected {FORMAT_VERSION})"
        )
    return meta


def read_policy_spec(path: str | os.PathLike[str]) -> tuple[PolicySpec, dict[str, Any]]:
    """The spec a model file carries and its agent metadata; one-line :class:`PolicyError` otherwise.

    The file's members are checked first (:func:`check_model_members`) and only ``__meta__`` is inflated."""
    if not Path(path).is_file():
        raise PolicyError(f"model {path}: no such file")
    meta = _read_meta(path)
    agent_meta = meta.get("agent")
    if not isinstance(agent_meta, dict) or "policy" not in agent_meta:
        raise PolicyError(
            f"model {path} is an old checkpoint without a policy spec (saved before models carried "
            "one): it cannot be rebuilt on its own; train and save it again "
            "(rlsched sim run --policy NAME --save-model PATH)"
        )
    try:
        spec = resolve(PolicySpec.from_dict(agent_meta["policy"]))
    except PolicyError as exc:
        raise PolicyError(_one_line(f"model {path}: {exc}")) from None
    if entry(spec.name).family not in MODEL_FAMILIES:
        raise PolicyError(f"model {path}: policy {spec.name!r} is not a learned or scored policy")
    return spec, agent_meta


def _rule_text(rule: Mapping[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={rule[k]}" for k in sorted(rule)) + ")"


def check_compatible(
    path: str | os.PathLike[str],
    spec: PolicySpec,
    expect_vos: Sequence[str] | None,
    expect_features: FeatureConfig | None,
    expect_class_rule: Mapping[str, Any] | None = None,
) -> None:
    """Refuse a model built for another VO list, feature layout or class rule (one line naming both).

    ``expect_class_rule``: the caller's class rule as a model records it; a model that records
    none (trained on a trace classed by runtime, or saved before models carried the rule) is
    not checked against it.
    """
    if expect_vos is not None and tuple(spec.vos) != tuple(expect_vos):
        raise PolicyError(
            f"model {path} was built for VOs ({', '.join(spec.vos)}); the config has ({', '.join(expect_vos)})"
        )
    if expect_features is not None:
        saved = feature_config(spec)
        if saved != expect_features:
            raise PolicyError(
                f"model {path} was built for features {_features_text(saved)}; the config has "
                f"{_features_text(expect_features)}"
            )
    if (
        expect_class_rule is not None
        and spec.class_rule is not None
        and dict(spec.class_rule) != dict(expect_class_rule)
    ):
        raise PolicyError(
            f"model {path} was built for the class rule {_rule_text(spec.class_rule)}; the config "
            f"has {_rule_text(expect_class_rule)}"
        )


def load_policy(
    path: str | os.PathLike[str],
    *,
    expect_vos: Sequence[str] | None = None,
    expect_features: FeatureConfig | None = None,
    expect_class_rule: Mapping[str, Any] | None = None,
    mode: Mode = "gate",
    live: bool = False,
    total_cores: int | None = None,
    start_s: float = 0.0,
) -> tuple[SchedulingAgent, PolicySpec]:
    """Rebuild the agent saved in ``path`` (by :func:`save_policy`) and return it with its spec.

    ``expect_vos``/``expect_features``/``expect_class_rule``: the VO names, feature layout and
    class rule of the caller's configuration (None: not checked).  ``mode``: how the agent acts (a model trained in gate
    mode may rank in boost mode).  ``live``: refuse what a live system cannot run (the oracle
    runtime model, the elastic pool).  Every problem is a one-line :class:`PolicyError`.
    """
    spec, agent_meta = read_policy_spec(path)
    if entry(spec.name).family != "learned":
        raise PolicyError(
            f"model {path} holds a {entry(spec.name).family} policy ({spec.name!r}), not a learning "
            "agent: load it with rlsched.core.policies.load_model"
        )
    check_compatible(path, spec, expect_vos, expect_features, expect_class_rule)
    shares = agent_meta.get("shares") if agent_meta.get("use_fairness") else None
    pool = total_cores if total_cores is not None else agent_meta.get("pool_cores")
    try:
        agent = build_agent(spec, BuildContext(mode=mode, shares=shares, total_cores=pool, start_s=start_s, live=live))
    except PolicyError as exc:
        raise PolicyError(_one_line(f"model {path}: {exc}")) from None
    if not isinstance(agent, SchedulingAgent):
        raise PolicyError(f"model {path}: policy {spec.name!r} builds no learning agent")
    try:
        agent.load_state(path)
    except (ValueError, KeyError, TypeError) as exc:
        raise PolicyError(_one_line(f"model {path}: cannot restore ({exc})")) from None
    # The spec's bound, not the file's: a model saved before `memory` existed (no bound) gets the
    # default one when it goes on learning.
    agent.learner.memory.max_transitions = spec.params["memory"] or None
    agent.policy = spec.to_dict()
    return agent, spec


def save_scored_model(
    spec: PolicySpec,
    path: str | os.PathLike[str],
    search: Mapping[str, Any] | None = None,
    arrays: Mapping[str, Any] | None = None,
) -> None:
    """Write a ``scored`` policy's spec (and what its search recorded, JSON and arrays) to one ``.npz``, atomically.

    The spec alone rebuilds the policy; ``search`` and ``arrays`` are for the reader (the fitness history, the
    validation window's scores, the seed).
    """
    resolved = resolve(spec)
    if entry(resolved.name).family != "scored":
        raise PolicyError(f"policy {resolved.name!r} is not a scored policy")
    meta = {"agent": {"policy": resolved.to_dict(), "search": dict(search or {})}}
    # Under search/ (a member prefix a model may hold): the arrays are the search's record, not the policy.
    save_checkpoint(path, meta, {f"search/{k}": np.asarray(v) for k, v in (arrays or {}).items()})


def load_model(
    path: str | os.PathLike[str],
    *,
    expect_vos: Sequence[str] | None = None,
    expect_features: FeatureConfig | None = None,
    expect_class_rule: Mapping[str, Any] | None = None,
    mode: Mode = "gate",
    live: bool = False,
    total_cores: int | None = None,
    start_s: float = 0.0,
) -> tuple[Agent, PolicySpec]:
    """Rebuild the agent of any model file: a learned agent (:func:`load_policy`, same arguments) or a
    scored policy's ranking agent (it reads no VO or feature column, so those checks do not apply; its
    ``policy`` attribute holds the spec, as a learned agent's does)."""
    spec, _ = read_policy_spec(path)
    if entry(spec.name).family == "learned":
        return load_policy(
            path,
            expect_vos=expect_vos,
            expect_features=expect_features,
            expect_class_rule=expect_class_rule,
            mode=mode,
            live=live,
            total_cores=total_cores,
            start_s=start_s,
        )
    try:
        agent = build_agent(spec, BuildContext(mode=mode, live=live, total_cores=total_cores, start_s=start_s))
    except PolicyError as exc:
        raise PolicyError(_one_line(f"model {path}: {exc}")) from None
    assert isinstance(agent, ScoredRankAgent)
    agent.policy = spec.to_dict()
    return agent, spec
