"""benchmarks/diag_scored_mode.py: the scored search of a committed table, every replay in its boost mode."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from benchmarks.diag_scored_mode import table_search
from benchmarks.learning_table import read_table
from rlsched.sim.boost import BoostSettings
from rlsched.workflow.learning import LearningSettings

TABLE = Path(__file__).resolve().parents[2] / "docs" / "results" / "learning-whole"


def test_the_diagnostic_searches_as_the_table_did_but_in_its_boost_mode() -> None:
    table = read_table(TABLE)
    search = table_search(table)
    assert search.boost == BoostSettings(poll_interval_s=10.0, max_boosted=32, base="fifo")
    # Everything else is the table's search: its recorded settings, written again from this config, are the same.
    settings = LearningSettings(seeds=tuple(table.settings["seeds"]), search=replace(search, boost=None))
    assert settings.to_dict()["search"] == table.settings["search"]


def test_in_gate_mode_with_a_warm_up_only_the_warm_up_differs_from_the_table() -> None:
    table = read_table(TABLE)
    search = table_search(table, boost=False, warmup_jobs=1000)
    assert search.boost is None and search.warmup_jobs == 1000
    settings = LearningSettings(seeds=tuple(table.settings["seeds"]), search=replace(search, warmup_jobs=0))
    assert settings.to_dict()["search"] == table.settings["search"]


def test_in_gate_mode_selecting_on_train_only_the_selection_window_differs_from_the_table() -> None:
    table = read_table(TABLE)
    search = table_search(table, boost=False, select_on="train")
    assert search.boost is None and search.warmup_jobs == 0 and search.select_on == "train"
    settings = LearningSettings(seeds=tuple(table.settings["seeds"]), search=replace(search, select_on="validation"))
    assert settings.to_dict()["search"] == table.settings["search"]
