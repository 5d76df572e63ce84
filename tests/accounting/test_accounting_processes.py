"""Several processes, and processes killed with SIGKILL, against one budget ledger.

RELIABILITY.md (d): concurrent writers (8 × 50 charges of 0.01 against 3.0: exactly 300
accepted, 100 refused, chain valid) and crash during write (a writer SIGKILLed at random
points never loses or duplicates an acknowledged spend). B4: killing the process after the
charge leaves the budget charged. Kill times come from the ``seed`` fixture.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.budget import PrivacyBudget
from ppdp.ledger import verify

WORKER = Path(__file__).with_name("_spend_worker.py")


def _start(*args: object) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc


def _wait_ready(proc: subprocess.Popen) -> None:
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"worker did not start: {line!r} {proc.stderr.read()}")


def test_eight_processes_fifty_spends_each_exactly_three_hundred_accepted(tmp_path):
    path = tmp_path / "budget.db"
    Accountant.open(path, dataset_id="shared", total=PrivacyBudget(3.0)).close()
    go = tmp_path / "go"
    procs = [_start("concurrent", path, go, 50, 0.01) for _ in range(8)]
    try:
        for p in procs:
            _wait_ready(p)
        go.touch()  # all eight start spending at once
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert sum(r["accepted"] for r in results) == 300
    assert sum(r["rejected"] for r in results) == 100
    assert verify(path).length == 301
    report = budget_report(path)
    assert report.spent == PrivacyBudget(3.0)
    assert report.remaining == PrivacyBudget(0.0)
    assert len(report.spends) == 300
    assert [s.index for s in report.spends] == list(range(1, 301))
    assert len({s.entry_hash for s in report.spends}) == 300


def test_eight_processes_fifty_spends_each_under_pld_never_exceed_the_target(tmp_path):
    # Issue 17: the same check-then-append under the write lock, with the composed ε (PLD).
    pytest.importorskip("dp_accounting")
    target = PrivacyBudget(1.0, 1e-5)
    eps = 0.02
    with Accountant.in_memory(total=target, composition="pld") as probe:
        fit = probe.fits_count(PrivacyBudget(eps))
    assert 50 < fit < 400  # more than basic composition's 50, fewer than all 400 tries
    path = tmp_path / "budget.db"
    Accountant.open(path, dataset_id="shared", total=target, composition="pld").close()
    go = tmp_path / "go"
    procs = [_start("concurrent", path, go, 50, eps) for _ in range(8)]
    try:
        for p in procs:
            _wait_ready(p)
        go.touch()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert sum(r["accepted"] for r in results) == fit
    assert sum(r["rejected"] for r in results) == 400 - fit
    assert verify(path).length == fit + 1
    report = budget_report(path)
    assert report.composition == "pld"
    assert [s.index for s in report.spends] == list(range(1, fit + 1))
    assert 0 < report.spent.epsilon <= target.epsilon


def test_processes_racing_to_create_one_ledger_share_it(tmp_path):
    path = tmp_path / "new" / "budget.db"
    go = tmp_path / "go"
    procs = [_start("create", path, go) for _ in range(4)]
    try:
        for p in procs:
            _wait_ready(p)
        go.touch()
        indices = []
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            indices.append(int(out.split()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert sorted(indices) == [1, 2, 3, 4]  # one ledger, four spends
    report = budget_report(path)
    assert len(report.spends) == 4 and report.spent == PrivacyBudget(0.4)
    assert sorted(
        f.name for f in path.parent.iterdir() if not f.name.endswith(("-wal", "-shm"))
    ) == ["budget.db", "budget.db.checkpoint", "budget.db.key"]


def _acked(ack: Path) -> list[int]:
    if not ack.exists():
        return []
    text = ack.read_text()
    return [int(line) for line in text.split("\n")[:-1]]  # ignore a torn last line


def test_writer_killed_at_random_points_never_loses_or_duplicates_a_spend(tmp_path, seed):
    path = tmp_path / "budget.db"
    ack = tmp_path / "acks.txt"
    # Each spend is followed by a 5 ms "release", so a run gets through at most 24 keys
    # before its kill (at most 0.12 s after it is ready): the first three runs are always killed.
    n_keys, eps, pause = 80, 0.01, 0.005
    Accountant.open(path, dataset_id="crash", total=PrivacyBudget(100.0)).close()
    rng = np.random.default_rng(seed)
    kills = 0
    for _ in range(8):
        acked = _acked(ack)
        start = len(acked)  # re-issue from the first un-acknowledged key
        if start == n_keys:
            break
        proc = _start("keyed", path, ack, start, n_keys, eps, pause)
        _wait_ready(proc)
        time.sleep(float(rng.uniform(0.0, 0.12)))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=60)
        # after every crash the ledger opens and verifies with no manual step
        assert verify(path).length >= 1 + len(_acked(ack))
    # a last run without a kill finishes the job
    acked = _acked(ack)
    if len(acked) < n_keys:
        proc = _start("keyed", path, ack, len(acked), n_keys, eps, pause)
        _wait_ready(proc)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    assert kills >= 3
    acked = _acked(ack)
    assert acked == list(range(n_keys))
    report = budget_report(path)
    keys = Counter(s.idempotency_key for s in report.spends)
    assert set(keys) == {f"req-{k}" for k in range(n_keys)}  # every acknowledged spend ...
    assert max(keys.values()) == 1  # ... exactly once
    assert Decimal(repr(report.spent.epsilon)) == Decimal("0.80")


def test_killed_after_the_charge_and_before_the_release_stays_charged(tmp_path):
    path = tmp_path / "budget.db"
    Accountant.open(path, dataset_id="held", total=PrivacyBudget(1.0)).close()
    proc = _start("hold", path, 0.25)
    _wait_ready(proc)
    line = proc.stdout.readline()
    assert line.startswith("charged ")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    with Accountant.open(path, dataset_id="held", total=PrivacyBudget(1.0)) as acct:
        assert acct.spent == PrivacyBudget(0.25)
        assert [r.mechanism for r in acct.history()] == ["held"]


def test_a_failed_release_in_process_stays_charged(tmp_path):
    with Accountant.open(tmp_path / "b.db", dataset_id="d", total=PrivacyBudget(1.0)) as acct:
        with pytest.raises(RuntimeError):
            acct.spend(PrivacyBudget(0.5), mechanism="laplace")
            raise RuntimeError("release failed")
        assert acct.spent == PrivacyBudget(0.5)
