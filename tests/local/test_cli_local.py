"""``ppdp local``: a real collector over loopback, the respondent client, estimates; bad
input gives one line and exit status 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.ledger import encode_public_key, load_private_key
from ppdp.local import CharacteristicVectorRandomizer

CV = CharacteristicVectorRandomizer(regions=[0.0, 0.25, 0.5, 0.75, 1.0], noise="discrete-normal",
                                    gamma=1.0, sigma=1.0)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def setup(tmp_path, capsys):
    assert main(["local", "keygen", str(tmp_path / "app.key")]) == 0
    public = capsys.readouterr().out.strip().splitlines()[-1]
    assert encode_public_key(load_private_key(tmp_path / "app.key").public_key()) == public
    cfg = {
        "survey": "cli-test",
        "randomizer": CV.to_dict(),
        "store": "store.sqlite",
        "clients": {"app": public},
        "client": {"id": "app", "key": "app.key"},
    }
    (tmp_path / "collector.json").write_text(json.dumps(cfg))
    values = np.concatenate([np.full(300, 0.1), np.full(100, 0.6), np.full(100, 0.9)])
    pd.DataFrame({"income": values}).to_csv(tmp_path / "values.csv", index=False)
    return tmp_path


def _one_line_error(capsys, argv, match):
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse usage errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ppdp") and match in err, err


def test_serve_report_estimate_over_loopback(setup, capsys):
    tmp = setup
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppdp", "local", "serve", "--config", str(tmp / "collector.json"),
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/v1/info", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the collector did not start"
            time.sleep(0.1)
        cfg = str(tmp / "collector.json")
        argv = ["local", "report", str(tmp / "values.csv"), "--config", cfg, "--server", url]
        assert main([*argv, "--batch-size", "128", "--seed", "1"]) == 0
        out = capsys.readouterr()
        assert "sent 500 perturbed reports in 4 batch(es)" in out.out and "--seed" in out.err
        out_csv = tmp / "est.csv"
        assert (
            main(["local", "estimate", "--config", cfg, "--server", url, "-o", str(out_csv)]) == 0
        )
        printed = capsys.readouterr().out
        assert "from 500 reports" in printed and "local differential privacy" in printed
        table = pd.read_csv(out_csv)
        assert list(table.columns) == ["bin_low", "bin_high", "probability", "density"]
        assert table.probability.sum() == pytest.approx(1.0)
        assert table.probability.iloc[0] > 0.45  # truth 0.6; noise sd per cell ≈ 0.045
        side = json.loads((tmp / "est.json").read_text())
        assert side["count"] == 500 and side["guarantee"]["delta"] == 1e-6
        # the same estimate from the store file, while the server runs
        store_csv = tmp / "est2.csv"
        argv = ["local", "estimate", "--config", cfg, "--store", str(tmp / "store.sqlite")]
        assert main([*argv, "-o", str(store_csv)]) == 0
        assert pd.read_csv(store_csv).equals(table)
        # bad input: one line, exit 2, nothing sent
        bad = tmp / "bad.csv"
        pd.DataFrame({"income": [0.5, 1.5]}).to_csv(bad, index=False)
        rep = ["local", "report", str(bad), "--config", cfg, "--server", url]
        _one_line_error(capsys, rep, "outside")
        from ppdp.local.collector._wire import read_headers

        signed = read_headers("app", load_private_key(tmp / "app.key"), "/v1/totals")
        assert httpx.get(f"{url}/v1/totals", headers=signed).json()["count"] == 500
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_bad_input_one_line(setup, capsys):
    tmp = setup
    cfg = str(tmp / "collector.json")
    store = str(tmp / "store.sqlite")
    est = ["local", "estimate", "--config", cfg, "-o", str(tmp / "o.csv")]
    _one_line_error(capsys, [*est, "--store", store], "does not exist")
    _one_line_error(capsys, ["local", "estimate", "--config", str(tmp / "nope.json"),
                             "--store", store, "-o", "x.csv"], "does not exist")  # fmt: skip
    (tmp / "broken.json").write_text("{")
    _one_line_error(capsys, [*est[:2], "--config", str(tmp / "broken.json"), "--store", store,
                             "-o", "x.csv"], "not valid JSON")  # fmt: skip
    (tmp / "unknown.json").write_text(json.dumps({"survey": "s", "randomizer": {}, "x": 1}))
    _one_line_error(capsys, ["local", "serve", "--config", str(tmp / "unknown.json")],
                    "unknown keys")  # fmt: skip
    (tmp / "norand.json").write_text(
        json.dumps(
            {
                "survey": "s",
                "randomizer": {"type": "x"},
                "store": "s.sqlite",
                "clients": {"a": "AA"},
            }
        )
    )
    _one_line_error(capsys, ["local", "serve", "--config", str(tmp / "norand.json")], "randomizer")
    rep = ["local", "report", "--config", cfg, "--server", "http://127.0.0.1:9"]
    _one_line_error(capsys, [*rep, str(tmp / "missing.csv")], "does not exist")
    (tmp / "empty.csv").write_text("income\n")
    _one_line_error(capsys, [*rep, str(tmp / "empty.csv")], "no values")
    _one_line_error(capsys, [*rep, "--column", "age", str(tmp / "values.csv")], "column")
    _one_line_error(capsys, [*rep, str(tmp / "values.csv")], "cannot reach")
    # An out-of-domain value is refused before the (absent) collector is contacted.
    pd.DataFrame({"income": [0.5, 1.5]}).to_csv(tmp / "outside.csv", index=False)
    _one_line_error(capsys, [*rep, str(tmp / "outside.csv")], "outside")
    _one_line_error(capsys, ["local", "keygen", str(tmp / "app.key")], "already exists")
    _one_line_error(capsys, ["local", "estimate", "--config", cfg, "-o", "x.csv"], "required")


def test_harmonics_option_accepts_auto_or_a_positive_integer() -> None:
    import argparse

    from ppdp.cli._local import _harmonics

    assert _harmonics("auto") == "auto" and _harmonics("7") == 7
    for bad in ("0", "-2", "many"):
        with pytest.raises(argparse.ArgumentTypeError, match="harmonics"):
            _harmonics(bad)
