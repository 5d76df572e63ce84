"""``ppdp.ledger.views``: the library side of ``ppdp ledger verify``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ppdp.accounting.files import init_budget_ledger
from ppdp.exceptions import ParameterError
from ppdp.ledger.views import parse_trusted_keys, verify_ledger_file, verify_lines


@pytest.mark.parametrize("pair", ["nokey", "=k.pem", "id="])
def test_parse_trusted_keys_refuses_a_pair_without_id_or_file(pair) -> None:
    with pytest.raises(ParameterError, match=r"--trusted-key .* must look like ID=FILE"):
        parse_trusted_keys([pair])
    assert parse_trusted_keys(None) is None and parse_trusted_keys([]) is None


def test_verify_lines_of_a_fresh_ledger(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PPDP_ANCHOR_DIR", str(tmp_path / "anchors"))
    path = tmp_path / "l.db"
    init_budget_ledger(path, dataset_id="d", epsilon=1.0)
    lines = verify_lines(verify_ledger_file(path))
    assert lines[1].startswith("  dataset 'd', purpose ")
    assert lines[-1] == "  no anchor kept elsewhere checked (ppdp ledger anchor prints one to keep)"


def test_verify_lines_name_checkpoints_and_revoked_signers() -> None:
    report = SimpleNamespace(
        dataset_id="d",
        purpose="budget",
        ledger_id="L",
        signers=["a", "b"],
        revoked=["b"],
        checkpoints=[("the given anchor", 3)],
    )
    lines = verify_lines(report)
    assert lines[2] == "  signers: a, b (revoked: b)"
    assert lines[3:] == ["  the given anchor: length 3, extended by the ledger"]
