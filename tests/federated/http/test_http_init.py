"""``ppdp federate init`` and ``ppdp federate run``: a real round laid out for separate machines."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

from ppdp.cli import main as cli_main
from ppdp.datasets import load_adult
from ppdp.federated.http import free_ports, load_config, split_table
from ppdp.federated.http._parties import orient_directions

OWNERS = ("bank-a", "bank-b", "bank-c")


@pytest.fixture(scope="module")
def adult_small(tmp_path_factory):
    """A 1,500-row sample of Adult split across three owners, the schema, the class counts."""
    df, schema = load_adult()
    df = df.sample(1500, random_state=7).reset_index(drop=True)
    folder = tmp_path_factory.mktemp("adult")
    schema_path = schema.to_file(folder / "schema.yaml")
    data = {}
    for name, part in zip(OWNERS, split_table(df, len(OWNERS)), strict=True):
        data[name] = folder / f"{name}.csv"
        part.to_csv(data[name], index=False)
    _, y = schema.encode(df, include_label=False)
    counts = np.bincount(np.asarray(y), minlength=len(schema.label.classes))
    return schema, schema_path, data, [int(c) for c in counts]


def _init_args(out, schema_path, counts, *, ports, dealer=True, data=None):
    owners = ",".join(f"{o}=http://127.0.0.1:{p}" for o, p in zip(OWNERS, ports[2:], strict=True))
    args = ["federate", "init", "--owners", owners, "--publisher", f"http://127.0.0.1:{ports[0]}"]
    args += ["--dealer", f"http://127.0.0.1:{ports[1]}" if dealer else "none"]
    args += ["--schema", str(schema_path), "--class-counts", ",".join(map(str, counts))]
    for name, path in (data or {}).items():
        args += ["--data", f"{name}={path}"]
    return [*args, "-o", str(out)]


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_init_writes_each_partys_folder(tmp_path, adult_small, capsys):
    schema, schema_path, data, counts = adult_small
    out = tmp_path / "round"
    ports = [8100, 8102, 8101, 8103, 8104]
    assert cli_main(_init_args(out, schema_path, counts, ports=ports, data=data)) == 0
    assert "ppdp federate run --config" in capsys.readouterr().out
    parties = ["publisher", "dealer", *OWNERS]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*parties, "public-keys.json", "session.json"]
    )
    keyset = json.loads((out / "public-keys.json").read_text())
    session = json.loads((out / "session.json").read_text())
    assert set(keyset) == set(parties)
    # the constant blocks are the schema's one-hot blocks (label excluded)
    blocks = [
        list(range(schema.blocks[c.name].start, schema.blocks[c.name].stop))
        for c in schema.categorical_columns
    ]
    assert session["constant_blocks"] == blocks and len(blocks) == 5
    assert session["n_features"] == 33 and session["class_counts"] == counts
    assert session["owners"] == list(OWNERS) and session["dealer"] == "dealer"
    for p in parties:
        sub = out / p
        assert _mode(sub) == 0o700
        private = sorted(f.name for f in sub.iterdir() if f.suffix in (".key", ".box"))
        expected = [f"{p}.key"] + ([f"{p}.box"] if p in OWNERS else [])
        assert private == sorted(expected)  # its own keys only
        for name in private:
            assert _mode(sub / name) == 0o600
        cfg = load_config(sub / f"{p}.yaml")
        assert cfg.role == keyset[p]["role"] and dict(cfg.session) == session
        assert cfg.url == keyset[p]["url"]
        for peer in cfg.peers:  # every peer pinned with the key of the public key set
            raw = yaml.safe_load((sub / f"{p}.yaml").read_text())
            entry = next(e for e in raw["peers"] if e["id"] == peer.id)
            assert entry["public_key"] == keyset[peer.id]["public_key"]
            assert entry["url"] == keyset[peer.id]["url"]
        if p in OWNERS:
            assert cfg.data.file == data[p] and cfg.data.schema == sub / "schema.yaml"
    # the dealer seals to each owner's box key
    dealer = yaml.safe_load((out / "dealer" / "dealer.yaml").read_text())
    boxes = {e["id"]: e.get("box_public_key") for e in dealer["peers"]}
    assert all(boxes[o] == keyset[o]["box_public_key"] for o in OWNERS)


def test_init_without_dealer_and_default_data(tmp_path, adult_small, capsys):
    _, schema_path, _, counts = adult_small
    out = tmp_path / "round"
    args = _init_args(out, schema_path, counts, ports=[9000, 0, 9001, 9002, 9003], dealer=False)
    assert cli_main(args) == 0
    err = capsys.readouterr().err
    assert "data.csv" in err  # says where the owners' data is expected
    assert not (out / "dealer").exists()
    assert not list(out.glob("*/*.box"))  # pairwise masks: no sealed dealer shares
    cfg = load_config(out / "bank-a" / "bank-a.yaml")
    assert cfg.session["dealer"] is None and cfg.data.file == out / "bank-a" / "data.csv"
    # --force replaces the keys; without it the folder is refused
    old = (out / "bank-a" / "bank-a.key").read_bytes()
    assert cli_main(args) == 2
    assert cli_main([*args, "--force"]) == 0
    assert (out / "bank-a" / "bank-a.key").read_bytes() != old


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("--owners", "bank-a=http://127.0.0.1:9001"), "at least 2"),
        (("--owners", "bank-a=http://127.0.0.1:9001,bank-b=ftp://h:1"), "http://HOST:PORT"),
        (("--owners", "bank-a=http://127.0.0.1:9001,bank-b=http://127.0.0.1"), "port"),
        (("--owners", "bank-a=http://127.0.0.1:9001,bank-b"), "NAME=VALUE"),
        (("--owners", "bank-a=http://127.0.0.1:9001,dealer=http://127.0.0.1:9"), "must differ"),
        (("--owners", "a=http://127.0.0.1:9001,b=http://127.0.0.1:9001"), "same URL"),
        (("--class-counts", "10"), "one per class"),
        (("--class-counts", "10,x"), "integers"),
        (("--schema", "missing.yaml"), "does not exist"),
        (("--data", "nobody=x.csv"), "not among the owners"),
        (("--publisher", "https://127.0.0.1:9000"), "mix http"),
        (("--epsilon", "-1"), "epsilon"),
    ],
)
def test_init_bad_input_one_line_exit_2(tmp_path, adult_small, capsys, change, message):
    _, schema_path, _, counts = adult_small
    out = tmp_path / "round"
    args = _init_args(out, schema_path, counts, ports=[9000, 9004, 9001, 9002, 9003])
    flag, value = change
    if flag in ("--owners", "--publisher", "--schema", "--class-counts", "--epsilon"):
        i = args.index(flag) if flag in args else None
        if i is None:
            args[-2:-2] = [flag, value]
        else:
            args[i + 1] = value
    else:
        args[-2:-2] = [flag, value]
    capsys.readouterr()
    assert cli_main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()  # nothing written


def test_run_bad_config_one_line_exit_2(tmp_path, capsys):
    assert cli_main(["federate", "run", "--config", str(tmp_path / "none.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none.yaml" in err


def test_orientation_uses_released_means_only():
    means = np.array([[0.0, 1.0], [1.0, 0.0]])  # class 1 lies along +x
    W, flipped = orient_directions(np.array([[-0.6], [0.8]]), means)
    assert flipped == [True] and W[:, 0].tolist() == [0.6, -0.8]
    W, flipped = orient_directions(np.array([[0.6], [-0.8]]), means)
    assert flipped == [False] and W[:, 0].tolist() == [0.6, -0.8]


@pytest.mark.slow
def test_round_on_adult_with_five_run_processes(tmp_path, adult_small):
    """init, then five separate ``ppdp federate run`` processes, as on five machines."""
    schema, schema_path, data, counts = adult_small
    out = tmp_path / "round"
    ports = free_ports(5)
    assert cli_main(_init_args(out, schema_path, counts, ports=ports, data=data)) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    procs = {}
    for p in ["dealer", *OWNERS, "publisher"]:  # each from its own folder, as on its machine
        cmd = [sys.executable, "-m", "ppdp", "federate", "run", "--config", f"{p}.yaml"]
        procs[p] = subprocess.Popen(
            cmd, cwd=out / p, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    outputs = {}
    try:
        for p, proc in procs.items():
            outputs[p] = proc.communicate(timeout=120)[0].decode()
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds = time.perf_counter() - t0
    assert {p: proc.returncode for p, proc in procs.items()} == dict.fromkeys(procs, 0), outputs
    assert all("done" in text for text in outputs.values())
    result = json.loads((out / "publisher" / "result.json").read_text())
    assert result["state"] == "done" and result["release"] == "direction"
    assert (
        result["feature_names"] == list(schema.feature_names) and len(result["feature_names"]) == 33
    )
    assert result["class_names"] == ["<=50K", ">50K"]
    conv = result["sign_convention"]
    assert conv["positive_class"] == ">50K" and conv["negative_class"] == "<=50K"
    # positive = the second declared class: its noisy mean projects higher
    W = np.asarray(result["directions"])
    mu = np.asarray(result["noisy_means"])
    assert float((mu[1] - mu[0]) @ W[:, 0]) > 0
    assert (
        cli_main(["ledger", "verify", str(out / "publisher" / "ledger" / "publisher.ledger")]) == 0
    )
    for o in OWNERS:
        assert cli_main(["ledger", "verify", str(out / o / "replica.ledger")]) == 0
    assert seconds < 60
