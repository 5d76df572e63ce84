"""``init_budget_ledger`` refuses a tight composition without a target δ, from Python too,
before anything is written."""

from __future__ import annotations

import pytest

from ppdp.accounting.files import init_budget_ledger
from ppdp.exceptions import ParameterError


@pytest.mark.parametrize("composition", ["pld", "rdp"])
def test_tight_composition_needs_a_delta(tmp_path, composition):
    path = tmp_path / "b.db"
    with pytest.raises(ParameterError) as exc:
        init_budget_ledger(path, dataset_id="d", epsilon=2.0, composition=composition)
    line = str(exc.value)
    assert "\n" not in line
    assert line.startswith("total (ε=2) has no δ")
    assert f"composition {composition!r}" in line and "give a delta > 0" in line
    assert list(tmp_path.iterdir()) == []  # neither the ledger nor its key


def test_basic_composition_needs_no_delta(tmp_path):
    line = init_budget_ledger(tmp_path / "b.db", dataset_id="d", epsilon=2.0)
    assert line.startswith(f"created budget ledger {tmp_path / 'b.db'}")
    assert (tmp_path / "b.db").exists()
