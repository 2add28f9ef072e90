"""What the learning-table diagnostics share (benchmarks/learning_table.py)."""

from __future__ import annotations

from benchmarks.learning_table import CommittedTable


def test_a_diagnostic_trains_the_tables_sarsa_esn_with_its_variant_over_it() -> None:
    # A table recorded plain "sarsa-esn" (or before the key existed) trained it on the class median, the registry's
    # default then: the spec names it, whatever the default is now.
    plain = CommittedTable({"learned_policy": "sarsa-esn"}, [])
    assert plain.learned_spec() == "sarsa-esn:runtime_model=estimated"
    assert plain.learned_spec("reward=W") == "sarsa-esn:reward=W,runtime_model=estimated"
    predicted = CommittedTable({"learned_policy": "sarsa-esn:runtime_model=learned"}, [])
    assert predicted.learned_spec() == "sarsa-esn:runtime_model=learned"
    assert predicted.learned_spec("reward=W") == "sarsa-esn:reward=W,runtime_model=learned"
    assert predicted.learned_spec("runtime_model=estimated") == "sarsa-esn:runtime_model=estimated"
    assert CommittedTable({}, []).learned_spec("reward=bsld") == "sarsa-esn:reward=bsld,runtime_model=estimated"
