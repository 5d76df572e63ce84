"""Under add/remove the number of rows is private: nothing but the noisy release shows it.

Issue 29. Each test is the attack: two neighbouring tables (one row added), the analyst's
worst request, and everything the analyst sees compared — the outcome (released, or the
exception's type and message), the warnings (category and message), the ledger entries
(without times and hashes) and the release's shape. On the code before the fix each failed:
the ``δ ≥ 1/n`` warning named ``n`` (``n=200`` against ``n=201``), even for a request the
ledger refused; GroupBy refused an empty table and released a one-row one (a free membership
test on an analyst-chosen subset); TableSynthesizer refused 0 and 1 rows; the Parquet
path's progress line said ``N rows released`` without the custodian-only note. Under
replace-one ``n`` is public, so its refusals and the warning stay.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, PrivacyLeakWarning
from ppdp.publish import GroupByPublisher, TableSynthesizer

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "income", "type": "numeric", "lower": 0, "upper": 1e6, "scale": "log"},
            {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
            {"name": "dx", "type": "categorical", "categories": ["flu", "hiv", "none"]},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
    }
)
#: The row the attacker asks about: every value at a bound, the rare diagnosis.
TARGET = {"age": 100.0, "income": 1e6, "sex": "M", "dx": "hiv", "y": "yes"}


def table(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` rows none of which has ``dx = hiv``."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.uniform(20, 60, n),
            "income": 10 ** rng.uniform(0, 6, n),
            "sex": rng.choice(["F", "M"], n),
            "dx": rng.choice(["flu", "none"], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )


def with_target(df: pd.DataFrame) -> pd.DataFrame:
    """The add/remove neighbour: ``df`` and the target row."""
    return pd.concat([df, pd.DataFrame([TARGET])], ignore_index=True)


#: A warning computed from the noisy release (post-processing, covered by the proof) ends
#: so; it may differ between neighbours as the release does, and is not compared.
POST_PROCESSING = "(read from the noisy tables: no privacy cost)"


def observe(fit: Callable[[], Any], acct: Accountant | None) -> dict[str, Any]:
    """Everything a caller of ``fit`` sees, but the noisy values and what is computed from
    them alone (:data:`POST_PROCESSING` warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            pub = fit()
            outcome: Any = "released"
        except Exception as exc:  # the attack compares whatever comes out
            pub, outcome = None, (type(exc).__name__, str(exc))
    seen: dict[str, Any] = {
        "outcome": outcome,
        "warnings": [
            (w.category.__name__, str(w.message))
            for w in caught
            if w.category.__name__ != "InsecureRandomnessWarning"
            and not str(w.message).endswith(POST_PROCESSING)
        ],
        "ledger": [
            (r.mechanism, r.budget, r.relation, r.seeded, r.details, r.event)
            for r in (acct.history() if acct is not None else [])
        ],
    }
    if pub is not None:
        data = pub.release_.data
        seen["columns"] = None if data is None else [(c, str(t)) for c, t in data.dtypes.items()]
        seen["statistics"] = sorted(pub.release_.statistics)
        seen["guarantee"] = (pub.release_.guarantee.kind, pub.release_.guarantee.relation)
    return seen


def add_remove(total: float = 10.0, delta: float = 0.9, mode: str = "raise") -> Accountant:
    acct = Accountant.in_memory(total=PrivacyBudget(total, delta), relation="add/remove")
    acct.on_invalid = mode
    return acct


# -- the δ ≥ 1/n warning ----------------------------------------------------------------------


@pytest.mark.parametrize("total", [0.1, 10.0], ids=["refused", "charged"])
def test_the_delta_warning_is_the_same_on_neighbours_that_differ_in_n(total) -> None:
    """Old: 'delta (0.5) >= 1/n (n=200)' against '(n=201)', before the budget check (so also
    on a refused request); now nothing depends on n (it is private under add/remove)."""
    seen = []
    for df in (table(200), with_target(table(200))):
        acct = add_remove(total)
        synth = TableSynthesizer(
            1.0, SCHEMA, delta=0.5, relation="add/remove", method="pairs", n_bins=4,
            random_state=3,
        )  # fmt: skip
        seen.append(observe(lambda s=synth, d=df, a=acct: s.fit(d, a, allow_seeded=True), acct))
    assert seen[0]["warnings"] == seen[1]["warnings"] == []
    assert seen[0]["outcome"] == seen[1]["outcome"]
    assert seen[0]["ledger"] == seen[1]["ledger"]


def test_the_delta_warning_stays_where_n_is_public() -> None:
    synth = TableSynthesizer(1.0, SCHEMA, delta=0.5, method="pairs", n_bins=4)
    with pytest.warns(PrivacyLeakWarning, match=r"delta \(0.5\) >= 1/n \(n=200\)"):
        synth.fit(table(200))


# -- GroupBy on an empty table ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["raise", "mask"])
@pytest.mark.parametrize("epsilon", [0.01, 1.0])
def test_groupby_releases_an_empty_table_like_a_one_row_table(mode, epsilon) -> None:
    """'Does any row have dx = hiv?': the analyst filters the table to that subset. Old:
    0 rows refused (DataValidationError, nothing charged), 1 row released — the refusal
    answered for free. Now both release noisy counts (and NaN means where the noisy count
    is below 1) with the same ledger entries, columns and dtypes."""
    seen = []
    for df in (table(0), with_target(table(0))):
        acct = add_remove(mode=mode)
        pub = GroupByPublisher(
            epsilon, SCHEMA, by=["sex", "dx"], means=["age", "income"], relation="add/remove",
            random_state=4,
        )  # fmt: skip
        seen.append(observe(lambda p=pub, d=df, a=acct: p.fit(d, a, allow_seeded=True), acct))
    assert seen[0]["outcome"] == "released"
    assert seen[0] == seen[1]


def test_an_empty_parquet_dataset_releases_like_a_one_row_one(tmp_path) -> None:
    seen = []
    for k, df in enumerate((table(0), with_target(table(0)))):
        folder = tmp_path / f"in{k}"
        folder.mkdir()
        df.astype({"sex": str, "dx": str, "y": str}).to_parquet(folder / "part-0.parquet")
        acct = add_remove()
        pub = GroupByPublisher(1.0, SCHEMA, by=["dx"], relation="add/remove", random_state=4)
        fit = lambda p=pub, f=folder, a=acct: p.fit(f, a, allow_seeded=True, scheduler="sync")  # noqa: E731
        seen.append(observe(fit, acct))
    assert seen[0]["outcome"] == "released"
    assert seen[0] == seen[1]


def test_an_empty_table_is_still_refused_where_n_is_public() -> None:
    with pytest.raises(DataValidationError, match="0 rows; there is nothing to publish"):
        GroupByPublisher(1.0, SCHEMA, by=["dx"]).fit(table(0))


# -- TableSynthesizer on 0 or 1 rows ----------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1])
@pytest.mark.parametrize("method", ["tree", "pairs"])
def test_table_synth_releases_on_zero_or_one_row_under_add_remove(n, method) -> None:
    """Old: n < 2 refused for free, n = 2 released. Now every table releases; the number of
    synthetic rows is the model's noisy estimate of n (so only the columns are compared)."""
    seen = []
    for df in (table(n), with_target(table(n))):
        acct = add_remove(delta=1e-3)
        synth = TableSynthesizer(
            0.5, SCHEMA, method=method, n_bins=2, relation="add/remove", random_state=5
        )
        seen.append(observe(lambda s=synth, d=df, a=acct: s.fit(d, a, allow_seeded=True), acct))
    assert seen[0]["outcome"] == "released"
    assert seen[0] == seen[1]


# -- the progress line of a Parquet release ------------------------------------------------


def test_the_parquet_progress_line_marks_n_custodian_only(tmp_path) -> None:
    from ppdp.publish.files import publish_table_file

    folder = tmp_path / "in"
    folder.mkdir()
    table(7).to_parquet(folder / "part-0.parquet")
    schema = tmp_path / "s.json"
    SCHEMA.to_file(schema)
    said: list[str] = []
    publish_table_file(
        "groupby", folder, schema=schema, output=tmp_path / "out", epsilon=1.0,
        options={"--by": "dx", "--relation": "add/remove"}, random_state=1, allow_seeded=True,
        scheduler="sync", say=said.append,
    )  # fmt: skip
    counted = [line for line in said if "7 rows" in line]
    assert counted, said
    assert all("(custodian only: n is private under add/remove)" in line for line in counted)
