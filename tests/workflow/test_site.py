"""A trace seen through a daemon config: classes by the rule on the time limit, VOs by the config's list."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.core.classify import ClassRule
from rlsched.core.view import JobClass
from rlsched.sim.traces.swf import read_swf
from rlsched.sim.workload import with_class_rule
from rlsched.workflow.site import classify, load_site, site_view


def test_the_class_comes_from_the_time_limit_never_the_runtime(small_swf: Path) -> None:
    w = read_swf(small_swf)
    classed = with_class_rule(w, ClassRule(interactive_max_time_s=900))
    interactive = classed.job_class == int(JobClass.INTERACTIVE)
    assert np.array_equal(interactive, w.req_time <= 900)
    # The trace has short jobs with long limits: the runtime rule (read_swf's) disagrees on them.
    short_long_limit = (w.run <= 300) & (w.req_time > 900)
    assert short_long_limit.any()
    assert not interactive[short_long_limit].any()


def test_qos_and_partition_strings_reach_the_rule(small_swf: Path) -> None:
    w = read_swf(small_swf)
    rule = ClassRule(interactive_qos=frozenset({"fast"}), interactive_max_time_s=None)
    qos = ["fast" if i % 2 else "normal" for i in range(len(w))]
    got = classify(w, rule, qos=qos)
    assert np.array_equal(got == int(JobClass.INTERACTIVE), np.arange(len(w)) % 2 == 1)
    with pytest.raises(ValueError, match="QOS"):
        classify(w, rule, qos=["x"])


def test_site_view_maps_accounts_to_the_config_vos(small_swf: Path, site_config: Path) -> None:
    w = read_swf(small_swf)
    site = load_site(site_config)
    seen = site_view(w, site)
    assert seen.vo_names == ("physics", "chem", "other")
    assert seen.vo_shares == (0.6, 0.3, 0.1)
    names = np.array(w.vo_names)[w.vo]
    assert np.array_equal(seen.vo == 0, names == "g1")
    assert np.array_equal(seen.vo == 1, names == "g2")
    assert site.class_rule.interactive_partitions == frozenset({"short"})


def test_a_config_without_vos_is_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[backend]\nkind = "slurm"\n')
    with pytest.raises(ValueError, match=r"backend\.vos"):
        load_site(path)
