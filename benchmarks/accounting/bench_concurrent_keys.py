"""Benchmark: releases per idempotency key when many copies of one keyed release start at once.

Issue 29's closing-note figure. ``--copies`` processes (default 12) are forked once; in each
of ``--trials`` trials (default 20) they meet at a barrier and all run the same keyed
release, ``LaplacePublisher(epsilon=0.1).fit(table, accountant=..., idempotency_key=
"trial-T")``, on a 200-row slice of UCI Adult against one file ledger. A copy whose ``fit``
returns has released; a copy refused raises a one-line ``PPDPError``. The script prints, per
trial, the releases, the refusals and the ε the ledger charged to the key, then the spread of
releases per key. Exactly one release per key is the target; before the key claim (issue 29)
the copies found "spend recorded, release not recorded", took themselves for the retry of a
dead run and released again with fresh noise under the one charge.

It then times the claim's overhead: the same release on the same file ledger, keyed (a fresh
key each time) and unkeyed, ``--reps`` times each, interleaved, with the median.

Run::

    PYTHONPATH=src .venv/bin/python benchmarks/accounting/bench_concurrent_keys.py
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.datasets import load_adult
from ppdp.exceptions import PPDPError
from ppdp.publish.baselines import LaplacePublisher

EPSILON = 0.1


def _table() -> tuple[Any, Any]:
    df, schema = load_adult()
    return df.iloc[:200].reset_index(drop=True), schema


def _copy(ledger: str, trials: int, barrier: Any, results: Any) -> None:
    """One copy: in every trial, wait for the others, then run the keyed release."""
    df, schema = _table()
    acct = Accountant.open_existing(ledger)
    for t in range(trials):
        barrier.wait(timeout=120)
        pub = LaplacePublisher(epsilon=EPSILON, schema=schema)
        try:
            pub.fit(df, accountant=acct, idempotency_key=f"trial-{t}")
            results.put((t, "released", ""))
        except PPDPError as exc:
            results.put((t, "refused", str(exc)))
    acct.close()


def _kind(message: str) -> str:
    for kind in ("is held by a run in progress", "its release is recorded"):
        if kind in message:
            return kind
    return message


def race(ledger: Path, copies: int, trials: int) -> list[dict[str, Any]]:
    """Run the trials; one row per trial: releases, refusals, and the key's charged ε."""
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(copies), ctx.Queue()
    procs = [
        ctx.Process(target=_copy, args=(str(ledger), trials, barrier, results))
        for _ in range(copies)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=300) for _ in range(copies * trials)]
    for p in procs:
        p.join()
    rows = []
    with Accountant.open_existing(ledger) as acct:
        for t in range(trials):
            mine = [g for g in got if g[0] == t]
            spends = [r for r in acct.history() if r.idempotency_key == f"trial-{t}"]
            messages = Counter(_kind(m) for *_, m in mine if m)
            rows.append(
                {
                    "trial": t,
                    "releases": sum(1 for g in mine if g[1] == "released"),
                    "refused": sum(1 for g in mine if g[1] == "refused"),
                    "one_line": all("\n" not in g[2] for g in mine),
                    "charged_epsilon": sum(r.budget.epsilon for r in spends),
                    "spend_entries": len(spends),
                    "messages": messages,
                    "example": next((m for *_, m in mine if m), ""),
                }
            )
    return rows


def overhead(ledger: Path, reps: int) -> dict[str, float]:
    """Median seconds of one release on a file ledger, keyed and unkeyed (interleaved)."""
    df, schema = _table()
    times: dict[str, list[float]] = {"unkeyed": [], "keyed": []}
    with Accountant.open_existing(ledger) as acct:
        for i in range(reps):
            for kind in ("unkeyed", "keyed"):
                key = f"bench-{i}" if kind == "keyed" else None
                pub = LaplacePublisher(epsilon=EPSILON, schema=schema)
                t0 = time.perf_counter()
                pub.fit(df, accountant=acct, idempotency_key=key)
                times[kind].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def claim_cost(ledger: Path, reps: int) -> float | None:
    """Median seconds to take and give up a claim on a fresh key (None before issue 29)."""
    try:
        from ppdp.accounting import claim_key
    except ImportError:
        return None
    times = []
    with Accountant.open_existing(ledger) as acct:
        for i in range(reps):
            t0 = time.perf_counter()
            with claim_key(acct, f"claim-{i}"):
                pass
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "budget.db"
        Accountant.open(ledger, dataset_id="adult", total=PrivacyBudget(1000.0)).close()
        t0 = time.perf_counter()
        rows = race(ledger, args.copies, args.trials)
        took = time.perf_counter() - t0
        print(f"{args.copies} copies x {args.trials} trials ({took:.1f} s)")
        print("trial  releases  refused  spend entries  charged eps  one line")
        for r in rows:
            print(
                f"{r['trial']:5d}  {r['releases']:8d}  {r['refused']:7d}  "
                f"{r['spend_entries']:13d}  {r['charged_epsilon']:11.3g}  {r['one_line']}"
            )
        spread = Counter(r["releases"] for r in rows)
        print("releases per key:", dict(sorted(spread.items())))
        print("refusals:", dict(sum((r["messages"] for r in rows), Counter())))
        print("an example:", next((r["example"] for r in rows if r["example"]), "none"))
        if args.reps:
            ledger2 = Path(tmp) / "overhead.db"
            Accountant.open(ledger2, dataset_id="adult", total=PrivacyBudget(1000.0)).close()
            med = overhead(ledger2, args.reps)
            print(
                f"one release on a file ledger, median of {args.reps}: unkeyed "
                f"{med['unkeyed'] * 1e3:.2f} ms, keyed {med['keyed'] * 1e3:.2f} ms"
            )
            cost = claim_cost(ledger2, 10 * args.reps)
            if cost is not None:
                print(f"claim_key alone (take, check, give up): median {cost * 1e6:.0f} us")


if __name__ == "__main__":
    main()
