"""Write the old-ledger fixtures of ``test_accounting_event_stability.py``.

They were written by commit 2584510 (before the ``zcdp`` event), whose ``TableSynthesizer``
charged a bare (ε, δ) (an ``epsilon-delta`` event), with::

    git archive 2584510 src | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old/src python tests/accounting/data/make_old_ledgers.py tests/accounting/data

Rerunning it with today's code writes today's ledgers, not old ones: the fixtures are kept
as committed. The signing keys are test fixtures, nothing else.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism
from ppdp.publish import TableSynthesizer


def main(out: Path) -> None:
    os.environ["PPDP_ANCHOR_DIR"] = tempfile.mkdtemp()
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "categorical", "categories": ["x", "y"]},
                {"name": "b", "type": "categorical", "categories": ["u", "v", "w"]},
            ],
            "label": {"name": "c", "classes": ["p", "q"]},
        }
    )
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "a": rng.choice(["x", "y"], 200),
            "b": rng.choice(["u", "v", "w"], 200),
            "c": rng.choice(["p", "q"], 200),
        }
    )
    lap = LaplaceMechanism(epsilon=0.5, sensitivity=1.0).event
    gauss = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0).event
    for composition in ("basic", "pld"):
        path = out / f"old_{composition}.ledger"
        total = PrivacyBudget(4.0, 1e-5)
        with Accountant.open(path, dataset_id="old", total=total, composition=composition) as a:
            a.spend(lap, mechanism="hist")
            TableSynthesizer(1.0, schema).fit(df, accountant=a)
            a.spend(gauss, mechanism="gauss")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
