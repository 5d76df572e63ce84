"""A separate process that spends from a budget ledger (run by the accounting tests).

Usage:
    _spend_worker.py concurrent LEDGER GOFILE N EPS   -> prints one JSON line {accepted, rejected}
    _spend_worker.py keyed LEDGER ACKFILE START STOP EPS PAUSE  (PAUSE s of "release" per spend)
    _spend_worker.py hold LEDGER EPS                  -> spends once, then waits to be killed
    _spend_worker.py create LEDGER GOFILE             -> creates (or opens) and spends 0.1
Prints "ready" once the accountant is open.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.exceptions import BudgetExceededError
from ppdp.ledger import Ledger


def _open(path: str) -> Accountant:
    with Ledger.open(path) as led:  # read the pinned parameters; the test owns them
        meta = led.metadata["accountant"]
        dataset_id = led.dataset_id
    total = PrivacyBudget(meta["total"]["epsilon"], meta["total"]["delta"])
    return Accountant.open(
        path,
        dataset_id=dataset_id,
        total=total,
        relation=meta["relation"],
        composition=meta.get("composition", "basic"),
    )


def main(argv: list[str]) -> None:
    mode, path = argv[0], argv[1]
    if mode == "create":  # all racing to create the same ledger
        go = Path(argv[2])
        print("ready", flush=True)
        while not go.exists():
            time.sleep(0.001)
        with Accountant.open(path, dataset_id="race", total=PrivacyBudget(1.0)) as acct:
            print(acct.spend(PrivacyBudget(0.1), mechanism="racer").index, flush=True)
        return
    acct = _open(path)
    print("ready", flush=True)
    if mode == "concurrent":
        go, n, eps = Path(argv[2]), int(argv[3]), float(argv[4])
        while not go.exists():
            time.sleep(0.002)
        accepted = rejected = 0
        for _ in range(n):
            try:
                acct.spend(PrivacyBudget(eps), mechanism="worker", pid=os.getpid())
                accepted += 1
            except BudgetExceededError:
                rejected += 1
        print(json.dumps({"accepted": accepted, "rejected": rejected}), flush=True)
    elif mode == "keyed":
        ack_path, start, stop, eps = argv[2], int(argv[3]), int(argv[4]), float(argv[5])
        pause = float(argv[6])
        fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for k in range(start, stop):
            acct.spend(PrivacyBudget(eps), mechanism="worker", idempotency_key=f"req-{k}")
            os.write(fd, f"{k}\n".encode())  # acknowledged only after spend() returned
            os.fsync(fd)
            time.sleep(pause)  # the release would happen here
        os.close(fd)
    elif mode == "hold":
        record = acct.spend(PrivacyBudget(float(argv[2])), mechanism="held", idempotency_key="h")
        print(f"charged {record.index}", flush=True)
        time.sleep(600)  # the release would happen here; the test kills us first
    acct.close()


if __name__ == "__main__":
    main(sys.argv[1:])
