"""GroupByPublisher(keys="private"): keys of open columns selected privately.

Declared keys are always released (empty ones included); other keys only through the
selection, whose thresholds meet δ exactly as the proof states (and are the least that
do); the order of the released keys depends on the key set only; the ledger and the
guarantee carry δ; bad input is one line and spends nothing.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.publish import GroupByPublisher
from ppdp.publish.partition_selection import PartitionSelection, keep_probabilities

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "dx", "type": "categorical", "open": True, "categories": ["Z99"]},
            {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
            {"name": "los", "type": "numeric", "lower": 1, "upper": 365},
        ]
    }
)


def hospital(n_common: int = 400, seed: int = 0) -> pd.DataFrame:
    """Five common codes of ``n_common`` rows each and 30 codes of one row each."""
    rng = np.random.default_rng(seed)
    codes = [f"C{i}" for i in range(5) for _ in range(n_common)] + [f"R{i}" for i in range(30)]
    n = len(codes)
    return pd.DataFrame(
        {"dx": codes, "sex": rng.choice(["F", "M"], n), "los": rng.integers(1, 30, n)}
    )


def fit(df: pd.DataFrame, **kw) -> GroupByPublisher:
    kw = {"by": ["dx"], "keys": "private", "delta": 1e-6, "random_state": 0, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GroupByPublisher(kw.pop("epsilon", 1.0), SCHEMA, **kw).fit(df)


@pytest.mark.parametrize("selection", ["laplace", "gaussian", "truncated-geometric"])
def test_common_keys_are_released_rare_ones_not_and_declared_ones_always(selection) -> None:
    table = fit(hospital(), selection=selection, means=["los"]).release_.data
    assert table["dx"].tolist() == ["Z99", "C0", "C1", "C2", "C3", "C4"]  # Z99 declared, empty
    assert table.columns.tolist()[:2] == ["dx", "count"] and "mean_los_hi" in table.columns
    assert np.all(np.abs(table["count"].to_numpy()[1:] - 400) < 60)


def test_declared_and_private_columns_mix_and_the_order_ignores_the_rows_order() -> None:
    df = hospital()
    a = fit(df, by=["sex", "dx"]).release_.data
    b = fit(df.sample(frac=1.0, random_state=1), by=["sex", "dx"]).release_.data
    pd.testing.assert_frame_equal(a, b)  # same seed, rows shuffled: the same release
    assert a[["sex", "dx"]].head(2).values.tolist() == [["F", "Z99"], ["M", "Z99"]]
    rest = list(map(tuple, a[["sex", "dx"]].iloc[2:].values.tolist()))
    assert rest == sorted(rest)


@pytest.mark.parametrize("relation", list(Neighbouring))
@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_laplace_threshold_is_the_least_that_meets_delta(relation, m, delta) -> None:
    """P(Z ≥ t) = q^t/(1+q) for the discrete Laplace: τ − c is the least t ≥ 1 with
    m·q^t/(1+q) ≤ δ (docs/proofs/partition-selection.md)."""
    sel = PartitionSelection("laplace", 1.0, delta, relation, max_groups=m)
    q = math.exp(-1.0 / sel.laplace().scale)
    t = sel.threshold_ - 1
    assert sel.laplace().scale == (2 if relation is Neighbouring.REPLACE_ONE else 1) * m
    assert m * q**t / (1 + q) <= delta
    assert t == 1 or m * q ** (t - 1) / (1 + q) > delta


def test_gaussian_threshold_meets_its_share_of_delta() -> None:
    from scipy.stats import norm

    sel = PartitionSelection("gaussian", 1.0, 1e-6, Neighbouring.ADD_REMOVE, max_groups=4)
    mech = sel.gaussian()
    # the grid moves a noisy count by at most Λ: the tail is taken at τ − c − Λ
    tail = 4 * norm.sf((sel.threshold_ - 1 - mech._granularity) / mech.sigma)
    assert tail == pytest.approx(1e-6 / (2 * (1 + math.e)), rel=2e-9)  # without Λ: 3e-9


def test_truncated_geometric_probabilities_meet_both_dp_inequalities() -> None:
    eps, delta = 0.7, 1e-5
    pi = keep_probabilities(eps, delta)
    assert pi[0] == 0 and pi[-1] == 1 and np.all(np.diff(pi) >= 0)
    e = math.exp(eps)
    assert np.all(pi[1:] <= e * pi[:-1] + delta + 1e-15)
    assert np.all(1 - pi[:-1] <= e * (1 - pi[1:]) + delta + 1e-15)
    assert pi[1] == pytest.approx(delta)  # a key of one person: kept with probability δ


def test_the_ledger_and_the_guarantee_carry_delta() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(1.0, SCHEMA, by=["dx"], means=["los"], keys="private", delta=1e-6)
        pub.fit(hospital(), accountant=acct)
    assert acct.spent.delta == pytest.approx(1e-6) and acct.spent.epsilon == pytest.approx(1.0)
    first = acct.history()[0].details
    assert first["selection"] == "laplace" and first["threshold"] == pub.plan().selection.threshold_
    g = pub.release_.guarantee
    assert g.delta == 1e-6 and "selected privately" in " ".join(g.assumptions)
    assert g.details["selection"]["delta"] == 1e-6


def test_truncated_geometric_charges_keys_then_counts() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GroupByPublisher(
            1.0, SCHEMA, by=["dx"], keys="private", delta=1e-6, selection="truncated-geometric"
        ).fit(hospital(), accountant=acct)
    keys, counts = acct.history()
    assert keys.budget.epsilon == pytest.approx(0.5) and keys.budget.delta == 1e-6
    assert counts.budget.epsilon == pytest.approx(0.5) and counts.budget.delta == 0


def test_a_missing_open_key_is_refused_before_anything_is_spent() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    df = hospital()
    df.loc[3, "dx"] = None
    with pytest.raises(DataValidationError, match=r"column 'dx': 1 value\(s\) are missing"):
        GroupByPublisher(1.0, SCHEMA, by=["dx"], keys="private", delta=1e-6).fit(
            df, accountant=acct
        )
    assert acct.history() == []


# -- bad input: one line, nothing spent ---------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"by": ["dxx"], "keys": "private", "delta": 1e-6}, r"^by \('dxx'\) is not a column"),
        ({"by": ["dx"]}, r"^by \('dx'\) is an open column .*keys='private'"),
        ({"by": ["dx"], "keys": "private"}, r"^delta \(None\): keys='private' needs delta > 0"),
        ({"by": ["sex"], "keys": "private", "delta": 1e-6}, r"names none; declare a column open"),
        ({"by": ["sex"], "delta": 1e-6}, r"^delta \(1e-06\) applies to keys='private' only"),
        ({"by": ["dx"], "keys": "public"}, r"^keys \('public'\) must be 'declared'"),
        ({"by": ["dx"], "keys": "private", "delta": 1.5}, r"^delta \(1.5\) must be in \(0, 1\)"),
        (
            {"by": ["dx"], "keys": "private", "delta": 1e-6, "threshold": 5},
            r"^threshold \(5.0\) is below 28, the least",
        ),
        (
            {"by": ["dx"], "keys": "private", "delta": 1e-6, "selection": "sips"},
            r"^selection \('sips'\) must be one of",
        ),
        (
            {"by": ["dx"], "keys": "private", "delta": 0.5},
            r"^delta \(0.5\) must be below 1 - e\^\(-1/b\)",
        ),
    ],
)
def test_bad_input_is_one_line_and_spends_nothing(kw, match) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    with pytest.raises(ParameterError, match=match) as err:
        GroupByPublisher(1.0, SCHEMA, **kw).fit(hospital(), accountant=acct)
    assert "\n" not in str(err.value)
    assert acct.history() == []


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"max_groups": 0}, r"^max_groups \(0\) must be an integer >= 1"),
        ({"max_rows_per_group": 1.5}, r"^max_rows_per_group \(1.5\) must be"),
        (
            {"method": "truncated-geometric", "max_groups": 2},
            r"^max_groups \(2\): selection 'truncated-geometric' is for one group",
        ),
    ],
)
def test_a_cap_that_is_not_allowed_is_refused(kw, match) -> None:
    args = {"method": "laplace", "epsilon": 1.0, "delta": 1e-6, **kw}
    with pytest.raises(ParameterError, match=match):
        PartitionSelection(relation=Neighbouring.ADD_REMOVE, **args)


def test_the_command_line_selects_keys_and_writes_delta(tmp_path, capsys) -> None:
    data, schema = tmp_path / "h.csv", tmp_path / "s.json"
    hospital().to_csv(data, index=False)
    SCHEMA.to_file(schema)
    out = tmp_path / "by-dx.csv"
    base = ["publish", "groupby", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*base, "--by", "dx", "-o", str(out)]) != 0
    assert "is an open column" in capsys.readouterr().err and not out.exists()
    args = [*base, "--by", "dx", "--keys", "private", "--delta", "1e-6", "-o", str(out)]
    assert main(args) == 0
    table = pd.read_csv(out)
    assert table["dx"].tolist() == ["Z99", "C0", "C1", "C2", "C3", "C4"]
    guarantee = json.loads((tmp_path / "by-dx.csv.guarantee.json").read_text())
    assert guarantee["guarantee"]["delta"] == 1e-6


# -- statistics, intervals, rounding, suppression ------------------------------------------


def test_variances_intervals_rounding_and_min_count_are_stated_and_applied() -> None:
    df = hospital(n_common=800)
    pub = fit(df, means=["los"], variances=["los"], min_count=500)
    table = pub.release_.data
    assert table["dx"].tolist() == ["C0", "C1", "C2", "C3", "C4"]  # Z99 (about 0) suppressed
    for col in ("count", "mean_los", "var_los", "std_los"):
        assert np.all(table[f"{col}_lo"] <= table[col]) and np.all(table[col] <= table[f"{col}_hi"])
    text = " ".join(pub.release_.guarantee.assumptions)
    assert "intervals (0.95) are post-processing" in text
    assert "below 500 are left out" in text and "rounded to what each value's interval" in text
    assert "var_los/std_los" in pub.release_.guarantee.details["columns"]
    # auto rounding: two significant digits of the interval's half-width
    half = (table["mean_los_hi"] - table["mean_los_lo"]) / 2
    decimals = 1 - np.floor(np.log10(half.to_numpy()))
    assert np.allclose(table["mean_los"] * 10**decimals, np.round(table["mean_los"] * 10**decimals))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"min_count": -1}, r"^min_count \(-1\) must be a number >= 0"),
        ({"interval": 1.0}, r"^interval \(1.0\) is the coverage of each released interval"),
        ({"rounding": "some"}, r"^rounding \('some'\) must be 'auto'"),
        ({"variances": ["sex"]}, r"^variances \('sex'\) is not a numeric column"),
    ],
)
def test_bad_statistics_parameters_are_one_line_and_spend_nothing(kw, match) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    with pytest.raises(ParameterError, match=match):
        GroupByPublisher(1.0, SCHEMA, by=["sex"], **kw).fit(hospital(), accountant=acct)
    assert acct.history() == []


@pytest.mark.parametrize(
    ("method", "kinds"),
    [
        ("tree", ["discrete-laplace", "discrete-laplace"]),  # one tree for both probabilities
        ("exponential", ["discrete-laplace", "exponential", "exponential"]),
        # the intervals' tree, then one draw per probability (sequential composition)
        ("exponential+tree", ["discrete-laplace"] * 2 + ["exponential"] * 2),
    ],
)
def test_quantiles_are_near_the_truth_and_charged_as_their_mechanisms(method, kinds) -> None:
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"dx": "C0", "sex": np.repeat(["F", "M"], 3000), "los": 0.0})
    df["los"] = np.r_[rng.uniform(10, 30, 3000), rng.uniform(100, 200, 3000)]
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            2.0, SCHEMA, by=["sex"], quantiles=["los"], q=[0.5, 0.9], random_state=3,
            quantile_method=method,
        )  # fmt: skip
        pub.fit(df, accountant=acct, allow_seeded=True)
    table = pub.release_.data
    truth = df.groupby("sex")["los"].quantile([0.5, 0.9]).unstack().to_numpy()
    # 6,000 rows; the quantiles get ε = 1 (tree) or 2/3 per probability (the others)
    atol = {"tree": 6.0, "exponential": 2.0, "exponential+tree": 2.0}[method]
    np.testing.assert_allclose(table[["p50_los", "p90_los"]].to_numpy(), truth, atol=atol)
    assert [h.event.kind for h in acct.history()] == kinds
    assert acct.spent.epsilon == pytest.approx(2.0)
    names = {"p50_los_lo", "p50_los_hi", "p90_los_lo", "p90_los_hi"}
    if method != "exponential":
        lo, hi = table[["p50_los_lo", "p90_los_lo"]], table[["p50_los_hi", "p90_los_hi"]]
        assert np.all((lo.to_numpy() <= truth + 0.1) & (truth - 0.1 <= hi.to_numpy()))
        assert "p50_los_lo/hi" in pub.release_.guarantee.details["columns"]
    else:
        assert not names & set(table.columns)


def test_the_hybrid_charges_its_tree_and_draws_in_one_plan_and_clips_into_the_interval():
    """exponential+tree: each (column, p) part ε/3 (the counts the third), 0.8 of it to the
    draw, the column's rest (0.2 · 2 parts) to the tree; the parts add up to ε, the
    ledger and the guarantee say so, and every quantile lies in its interval."""
    rng = np.random.default_rng(6)
    df = pd.DataFrame({"dx": "C0", "sex": np.repeat(["F", "M"], 400), "los": 0.0})
    df["los"] = np.r_[rng.uniform(10, 30, 400), rng.uniform(100, 200, 400)]
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            1.5, SCHEMA, by=["sex"], quantiles=["los"], q=[0.5, 0.9], random_state=4
        ).fit(df, accountant=acct, allow_seeded=True)
    assert pub.plan().quantile_method == "exponential+tree"  # the default
    eps = [h.event.epsilon for h in acct.history()]
    assert eps == pytest.approx([0.5, 0.2 * 2 * 0.5, 0.8 * 0.5, 0.8 * 0.5])
    assert acct.spent.epsilon == pytest.approx(1.5)
    for h in acct.history()[1:]:
        assert h.details["composition"].startswith("sequential")
    line = next(a for a in pub.release_.guarantee.assumptions if a.startswith("quantiles"))
    assert "exponential mechanism" in line and "noisy tree" in line and "sequentially" in line
    table = pub.release_.data
    for key in ("p50_los", "p90_los"):
        assert np.all((table[f"{key}_lo"] <= table[key]) & (table[key] <= table[f"{key}_hi"]))


def test_the_hybrid_without_intervals_spends_everything_on_the_draws() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            1.0, SCHEMA, by=["sex"], quantiles=["los"], interval=None, random_state=0
        ).fit(hospital(), accountant=acct, allow_seeded=True)
    assert [h.event.kind for h in acct.history()] == ["discrete-laplace", "exponential"]
    assert acct.history()[1].event.epsilon == pytest.approx(0.5)
    assert "p50_los_lo" not in pub.release_.data.columns


def test_a_quantile_method_not_known_is_one_line_and_spends_nothing() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    match = r"^quantile_method \('median'\) must be 'exponential\+tree'"
    with pytest.raises(ParameterError, match=match):
        GroupByPublisher(1.0, SCHEMA, by=["sex"], quantiles=["los"], quantile_method="median").fit(
            hospital(), accountant=acct
        )
    assert acct.history() == []


@pytest.mark.parametrize("q", [0.0, 1.0, 1.5, -0.1])
def test_a_quantile_outside_zero_one_is_one_line_and_spends_nothing(q) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    with pytest.raises(ParameterError, match=r"^q \(.*\) must be a probability strictly between"):
        GroupByPublisher(1.0, SCHEMA, by=["sex"], quantiles=["los"], q=[0.5, q]).fit(
            hospital(), accountant=acct
        )
    assert acct.history() == []
