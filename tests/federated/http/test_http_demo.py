"""``run_demo``: parties as processes on loopback (mutual TLS), a whole round, files left."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from fed_helpers import SCHEMA, synthetic_parts

from ppdp.cli import main as cli_main
from ppdp.exceptions import ParameterError
from ppdp.federated.http import run_demo


def test_demo_round_in_processes(tmp_path, capsys):
    df = pd.concat(synthetic_parts(2, rows=60), ignore_index=True)
    res = run_demo(
        owners=2, workdir=tmp_path, data=(df, SCHEMA), release="noisy-projections", tls=True
    )
    assert res.ok, res.reason
    assert res.exit_codes == {"publisher": 0, "dealer": 0, "owner-1": 0, "owner-2": 0}
    assert res.result["state"] == "done" and len(res.result["projections"]) == 120
    assert 0.0 <= res.accuracy <= 1.0 and 0.0 <= res.direction_accuracy <= 1.0
    assert res.round_seconds is not None and res.round_seconds < res.seconds
    text = res.summary()
    assert "completed" in text and "differential privacy" in text
    # a noisy-projection accuracy at the majority rate comes with what to do about it
    assert ("hides the classes" in text) == (res.accuracy <= res.majority + 0.005)
    json.dumps(res.to_dict())
    assert (tmp_path / "tls" / "ca.pem").is_file()  # every link was HTTPS with client certs
    # the publisher's ledger and each owner's replica stay behind, and verify
    assert (tmp_path / "ledger" / "publisher.ledger").is_file()
    for owner in ("owner-1", "owner-2"):
        path = tmp_path / "replicas" / f"{owner}.ledger"
        assert cli_main(["ledger", "verify", str(path)]) == 0
    # a second demo refuses to reuse the folder (it would mix two ledgers)
    with pytest.raises(ParameterError, match="already holds a ledger"):
        run_demo(owners=2, workdir=tmp_path, data=(df, SCHEMA))
    capsys.readouterr()


def test_demo_rejects_bad_parameters(tmp_path, capsys):
    assert cli_main(["federate", "demo", "--owners", "1", "--workdir", str(tmp_path)]) == 2
    assert "owners (1)" in capsys.readouterr().err
    assert not (tmp_path / "ledger").exists()


def test_a_demo_stopped_at_its_timeout_says_so_and_lists_no_missing_ledger(tmp_path, capsys):
    # New-user trial: "round aborted: publisher: exit -9", after ledger and replica paths
    # that were never written.
    df = pd.concat(synthetic_parts(2, rows=60), ignore_index=True)
    res = run_demo(owners=2, workdir=tmp_path, data=(df, SCHEMA), timeout=0.5)
    assert not res.ok and "stopped at the demo's timeout (0.5 s" in res.reason
    text = res.summary()
    assert "publisher's ledger" not in text and "replica" not in text
    capsys.readouterr()
