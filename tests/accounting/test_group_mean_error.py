"""The expected error of a group-by's mean that the dry run states
(:func:`ppdp.accounting.plan.group_mean_error`, from public quantities only) against the
errors of real releases (seeded :class:`~ppdp.publish.GroupByPublisher` fits).

Each check compares the root mean square of 2,000 group errors (400 groups of 100 rows, 5
seeded releases) with the formula, within 10 %. The error is a sum of two discrete-Laplace
terms over the count (excess kurtosis at most 3), so the sample RMS has a relative standard
error of at most sqrt(5 / 2000) / 2 = 2.5 %: 10 % is four of them, a false-positive rate
below 1e-4 per check (the first-order bias, (count_sd / rows)² ≈ 0.5 % here, is inside it).
The formula without the count's noise (what the sums' noise alone says) fails the check.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting.plan import charge_lines, group_mean_error, group_mean_errors
from ppdp.data import Schema
from ppdp.data.columns import CategoricalColumn, NumericColumn
from ppdp.publish import GroupByPublisher

GROUPS, ROWS, SEEDS = 400, 100, range(5)
LOWER, UPPER = 0.0, 100.0


def _publisher(seed: int | None = None) -> GroupByPublisher:
    schema = Schema([NumericColumn("x", LOWER, UPPER),
                     CategoricalColumn("g", [f"g{i}" for i in range(GROUPS)])])  # fmt: skip
    # ε 2, a fifth to the counts: the count's noise weighs as much as the sum's
    return GroupByPublisher(2.0, schema, by=["g"], means=["x"], count_share=0.2,
                            random_state=seed)  # fmt: skip


def _terms() -> dict[str, float]:
    charges = _publisher()._planned_charges(GROUPS * ROWS)
    e = next(c.details["mean_error"] for c in charges if "mean_error" in c.details)
    return {k: e[k] for k in ("sum_sd", "count_sd", "half_range")}


def _simulated_rms(value: float) -> float:
    """The RMS error of the released means when every row holds ``value``."""
    df = pd.DataFrame({"x": np.full(GROUPS * ROWS, value),
                       "g": np.repeat([f"g{i}" for i in range(GROUPS)], ROWS)})  # fmt: skip
    errors = []
    for seed in SEEDS:
        pub = _publisher(seed).fit(df)
        errors.append(np.asarray(pub.release_.statistics["mean_x"]) - value)
    errors = np.concatenate(errors)
    assert np.isfinite(errors).all()  # every noisy count is at least 1 at 100 rows
    return float(np.sqrt(np.mean(errors**2)))


@pytest.mark.parametrize("value", [50.0, 75.0])  # the midpoint, and a quarter range off it
def test_the_stated_error_of_a_group_mean_matches_the_releases(value):
    terms = _terms()
    stated = group_mean_error(**terms, rows=ROWS, offset=abs(value - (LOWER + UPPER) / 2))
    simulated = _simulated_rms(value)
    assert simulated == pytest.approx(stated, rel=0.10)
    if value != 50.0:  # the broken variant: the sum's noise alone, the count's left out
        broken = math.sqrt(terms["sum_sd"] ** 2) / ROWS
        assert simulated != pytest.approx(broken, rel=0.10)


def test_the_stated_most_bounds_the_error_at_a_bound():
    terms = _terms()
    most = group_mean_error(**terms, rows=ROWS)  # the true mean at a bound
    # the release clamps the mean to the bounds: at a bound half the errors are cut
    assert 0.5 * most < _simulated_rms(UPPER) <= most * 1.10


def test_the_dry_run_states_the_error_by_group_size_from_public_quantities():
    pub = _publisher()
    charges = pub._planned_charges(None)
    terms = _terms()
    (errors,) = group_mean_errors(charges).values()
    assert [n for n, _, _ in errors] == [100, 1000, 10000]  # count_sd ≈ 7: all sizes hold
    for n, low, high in errors:
        assert low == pytest.approx(terms["sum_sd"] / n)
        assert high == pytest.approx(group_mean_error(**terms, rows=n))
    text = "\n".join(charge_lines(charges))
    n, low, high = errors[0]
    assert f"100 rows ±{low:.3g} to ±{high:.3g}" in text
    assert "the mean of x in a group (noisy sum over noisy count)" in text


def test_the_cli_dry_run_prints_the_same_figures(tmp_path, capsys):
    from ppdp.cli import main

    df = pd.DataFrame({"x": np.linspace(0, 100, 200), "g": ["g0", "g1"] * 100})
    df.to_csv(tmp_path / "t.csv", index=False)
    _publisher().schema.to_file(tmp_path / "s.json")
    argv = ["publish", "groupby", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json"),
            "--epsilon", "2", "--by", "g", "--means", "x", "--count-share", "0.2",
            "-o", str(tmp_path / "out.csv"), "--dry-run"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    (errors,) = group_mean_errors(_publisher()._planned_charges(None)).values()
    said = "; ".join(f"{n:,} rows ±{lo:.3g} to ±{hi:.3g}" for n, lo, hi in errors)
    assert said in out
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize(
    ("count_sd", "sizes"),
    [(7.0, [100, 1000, 10000]), (45.25, [300, 1000, 10000]), (100.0, [500, 1000, 10000]),
     (300.0, [2000, 10000]), (2500.0, [20000])],
)  # fmt: skip
def test_a_noisy_count_too_large_for_100_rows_states_the_smallest_round_size_that_holds(
    count_sd, sizes
):
    """A panel under a privacy unit (8 rows per person: a count's noise of 45) had its
    group means' errors stated from 1,000 rows only, for groups of 139 to 2,482 rows (the
    second new-user trial of ``ppdp ui``): the smallest round size where the first order
    holds (rows ≥ 5 count_sd) leads."""
    from types import SimpleNamespace

    e = {"column": "wage", "sum_sd": 203.6, "count_sd": count_sd, "half_range": 4.5}
    (errors,) = group_mean_errors([SimpleNamespace(details={"mean_error": e})]).values()
    assert [n for n, _, _ in errors] == sizes
    assert all(n >= 5 * count_sd for n in sizes)
