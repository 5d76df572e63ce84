"""Many copies of one keyed release started at once: exactly one releases (issue 29).

A double submit or an overlapping scheduler retry starts several copies of the same keyed
release together. Before the key claim each copy found "spend recorded, release not
recorded", took itself for the retry of a dead run and released with fresh noise: 10 to 12
releases per key from 12 copies against one ε = 0.1 charge (``benchmarks/accounting/
bench_concurrent_keys.py`` on the code before the claim), with the ledger and its totals
saying one. These tests fail on that code; they import nothing the fix added, so they can
be run against it. The full figure (12 copies × 20 trials) is the benchmark's.

Forked copies (Linux, as CI): fast, and each copy runs the library or CLI flow in full.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing as mp
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.budget import PrivacyBudget
from ppdp.datasets import load_adult
from ppdp.exceptions import PPDPError
from ppdp.ledger import verify
from ppdp.publish.baselines import LaplacePublisher

pytestmark = pytest.mark.skipif(
    "fork" not in mp.get_all_start_methods(), reason="forked copies (POSIX)"
)

COPIES = 12
EPSILON = 0.1
REFUSALS = ("is held by a run in progress", "its release is recorded")


@pytest.fixture(scope="module")
def table():
    df, schema = load_adult()
    return df.iloc[:120].reset_index(drop=True), schema


def _ledger(tmp_path: Path) -> Path:
    path = tmp_path / "budget.db"
    Accountant.open(path, dataset_id="adult", total=PrivacyBudget(10.0)).close()
    return path


def _keyed_releases(ledger: str, table: Any, trials: int, barrier: Any, out: Any) -> None:
    """One copy: in every trial, meet the others at the barrier, then run the release."""
    df, schema = table
    with Accountant.open_existing(ledger) as acct:
        for t in range(trials):
            barrier.wait(timeout=60)
            try:
                LaplacePublisher(epsilon=EPSILON, schema=schema).fit(
                    df, accountant=acct, idempotency_key=f"job-{t}"
                )
                out.put((t, "released", ""))
            except PPDPError as exc:
                out.put((t, "refused", str(exc)))


def _run_copies(target: Any, args: tuple[Any, ...], copies: int, expected: int) -> list[Any]:
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, out)) for _ in range(copies)]
    for p in procs:
        p.start()
    try:
        got = [out.get(timeout=120) for _ in range(expected)]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs)
    return got


def test_twelve_copies_of_a_keyed_release_started_at_once_release_once(tmp_path, table):
    trials = 5  # the benchmark runs 20; each trial here is one race of 12
    ledger = _ledger(tmp_path)
    barrier = mp.get_context("fork").Barrier(COPIES)
    got = _run_copies(
        _keyed_releases, (str(ledger), table, trials, barrier), COPIES, COPIES * trials
    )
    releases = [
        sum(1 for t, what, _ in got if t == trial and what == "released") for trial in range(trials)
    ]
    assert releases == [1] * trials, f"releases per key: {releases}"
    for _, what, message in got:
        if what == "refused":  # one line, and nothing charged or released
            assert "\n" not in message and any(r in message for r in REFUSALS), message
            assert "nothing charged, nothing released" in message
    report = budget_report(ledger)
    assert len(report.spends) == trials and report.spent == PrivacyBudget(
        round(EPSILON * trials, 12)
    )
    with Accountant.open_existing(ledger) as acct:
        assert len(acct.events("release")) == trials  # one recorded release per key
    assert verify(ledger).length == 1 + 2 * trials


def _cli_copy(argv: list[str], barrier: Any, out: Any) -> None:
    from ppdp.cli import main

    err = io.StringIO()
    barrier.wait(timeout=60)
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    out.put((rc, err.getvalue()))


def test_six_cli_copies_with_one_key_publish_once(tmp_path, table):
    df, schema = table
    df.to_csv(tmp_path / "t.csv", index=False)
    schema.to_file(tmp_path / "t.json")
    ledger = _ledger(tmp_path)
    copies = 6
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(copies), ctx.Queue()
    procs = []
    for i in range(copies):  # each its own output file: only the key is shared
        argv = ["publish", "laplace", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "t.json")]
        argv += ["--epsilon", str(EPSILON), "-o", str(tmp_path / f"out-{i}.csv")]
        argv += ["--ledger", str(ledger), "--idempotency-key", "nightly"]
        procs.append(ctx.Process(target=_cli_copy, args=(argv, barrier, out)))
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in range(copies)]
    for p in procs:
        p.join(timeout=30)
    assert sorted(rc for rc, _ in got) == [0] + [2] * (copies - 1)
    for rc, err in got:
        if rc == 2:
            errors = [ln for ln in err.splitlines() if ln.startswith("ppdp: error")]
            assert len(errors) == 1 and any(r in errors[0] for r in REFUSALS), err
            assert "--idempotency-key ('nightly')" in errors[0] and "Traceback" not in err
    assert len(list(tmp_path.glob("out-*.csv"))) == 1
    assert budget_report(ledger).spent == PrivacyBudget(EPSILON)


def _hold_after_the_charge(ledger: str, table: Any, ready: Any) -> None:
    """A run that charges, then hangs before its release, until it is killed."""
    df, schema = table

    def hang(*_args: Any, **_kwargs: Any) -> Any:
        ready.set()
        signal.pause()

    LaplacePublisher._release = hang  # this forked process only
    with Accountant.open_existing(ledger) as acct:
        LaplacePublisher(epsilon=EPSILON, schema=schema).fit(
            df, accountant=acct, idempotency_key="held"
        )


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_holder_killed_after_the_charge_is_retried_once(tmp_path, table):
    df, schema = table
    ledger = _ledger(tmp_path)
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_after_the_charge, args=(str(ledger), table, ready))
    holder.start()
    try:
        assert ready.wait(timeout=60), "the holder never reached its release"
        with Accountant.open_existing(ledger) as acct:
            assert acct.spent == PrivacyBudget(EPSILON)  # charged, not released
            # While it lives, a copy is refused in one line that names it; nothing charged.
            with pytest.raises(PPDPError, match="is held by a run in progress") as err:
                LaplacePublisher(epsilon=EPSILON, schema=schema).fit(
                    df, accountant=acct, idempotency_key="held"
                )
            assert f"pid {holder.pid} on host " in str(err.value)
            assert "\n" not in str(err.value) and acct.spent == PrivacyBudget(EPSILON)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(timeout=30)
    assert holder.exitcode == -signal.SIGKILL
    # The kernel dropped its claim with it: the retry releases, charged nothing again.
    with Accountant.open_existing(ledger) as acct:
        pub = LaplacePublisher(epsilon=EPSILON, schema=schema)
        pub.fit(df, accountant=acct, idempotency_key="held")
        assert pub.release_.replayed and acct.spent == PrivacyBudget(EPSILON)
        assert len(acct.history()) == 1 and len(acct.events("release")) == 1
        with pytest.raises(PPDPError, match="its release is recorded"):
            LaplacePublisher(epsilon=EPSILON, schema=schema).fit(
                df, accountant=acct, idempotency_key="held"
            )
    assert budget_report(ledger).spent == PrivacyBudget(EPSILON)
