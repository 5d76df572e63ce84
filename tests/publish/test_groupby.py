"""GroupByPublisher: noisy counts, centred sums and means per declared group.

The noise scales follow from ε, the relation and the declared ranges alone; the groups are
the declared domain (empty ones included); the sensitivities the proof uses (counts 2 / 1,
centred sums the range / half the range, in integer units) hold on random neighbouring
pairs, moves between groups included; bad input costs nothing; the ledger is charged ε;
the command line writes the table and its guarantee.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.accounting.events import DiscreteLaplace
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import HALF_UNIT, UNIT, centred_units, group_statistics
from ppdp.random import resolve_random_state


def make_schema(*, impute: bool = False) -> Schema:
    cols: list[dict] = [
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
        {"name": "income", "type": "numeric", "lower": 0, "upper": 1e6, "scale": "log"},
        {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
        {"name": "region", "type": "categorical", "categories": ["N", "S", "E"]},
    ]
    d: dict = {"columns": cols, "label": {"name": "y", "classes": ["no", "yes"]}}
    if impute:
        for c, v in zip(cols, (50, 1000, "F", "N"), strict=True):
            c["impute"] = v
        d["nan_policy"] = "impute"
    return Schema.from_dict(d)


def make_df(n: int, seed: int = 0) -> pd.DataFrame:
    """Regions N and S only (E is declared but empty); ages depend on sex and region."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    region = rng.choice(["N", "S"], n)
    age = rng.uniform(20, 40, n) + 10 * (sex == "M") + 20 * (region == "S")
    return pd.DataFrame(
        {
            "age": age,
            "income": rng.uniform(1e4, 1e5, n),
            "sex": sex,
            "region": region,
            "y": rng.choice(["no", "yes"], n),
        }
    )


#: The columns of one count and one mean (intervals on by default).
COLUMNS = ["count", "count_lo", "count_hi", "mean_age", "mean_age_lo", "mean_age_hi", "mean_age_sd"]


def fit(df: pd.DataFrame, seed: int = 0, **kw) -> GroupByPublisher:
    with pytest.warns(Warning):  # a seeded random_state warns
        return GroupByPublisher(kw.pop("epsilon", 1.0), make_schema(), random_state=seed, **kw).fit(
            df
        )


# -- parameters ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relation", "count_sens", "sum_sens"),
    [("replace-one", 2, UNIT), ("add/remove", 1, HALF_UNIT)],
)
def test_noise_scales_and_sensitivities_follow_from_the_parameters(
    relation, count_sens, sum_sens
) -> None:
    pub = GroupByPublisher(
        1.5, make_schema(), by=["sex"], means=["age", "income"], relation=relation
    )
    plan = pub.plan()
    assert (plan.count_sensitivity, plan.sum_sensitivity) == (count_sens, sum_sens)
    assert plan.epsilon_count == pytest.approx(0.5) and plan.epsilon_mean == pytest.approx(0.5)
    events = pub.privacy_events()
    assert all(isinstance(e, DiscreteLaplace) for e in events) and len(events) == 3
    assert events[0].l1_sensitivity == count_sens and events[0].scale == pytest.approx(
        count_sens / 0.5
    )
    for e in events[1:]:
        assert e.l1_sensitivity == sum_sens and e.scale == pytest.approx(sum_sens / 0.5)
        assert e.dimension == 2  # one coordinate per declared group
    # In the column's own units: the range (or half of it) over the column's ε.
    assert events[1].scale * 100 / UNIT == pytest.approx(100 * (sum_sens / UNIT) / 0.5)
    assert pub.privacy_budget().epsilon == pytest.approx(1.5)
    assert pub.privacy_budget().epsilon <= 1.5


def test_count_share_sets_the_counts_share_and_splits_the_rest() -> None:
    pub = GroupByPublisher(1.0, make_schema(), by=["sex"], means=["age", "income"], count_share=0.4)
    plan = pub.plan()
    assert plan.epsilon_count == pytest.approx(0.4) and plan.epsilon_mean == pytest.approx(0.3)
    assert pub.privacy_budget().epsilon <= 1.0
    only = GroupByPublisher(0.7, make_schema(), by=["region"]).plan()
    assert only.epsilon_count == 0.7 and only.n_groups == 3


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"by": ["nope"]}, r"^by \('nope'\) is not a column of the schema"),
        ({"by": ["age"]}, r"^by \('age'\) is a numeric column"),
        ({"by": ["sex", "sex"]}, r"names a column twice"),
        ({"means": ["sex"]}, r"^means \('sex'\) is a categorical column"),
        ({"means": ["nope"]}, r"^means \('nope'\) is not a column"),
        ({"means": ["age"], "count_share": 0.0}, r"^count_share \(0.0\) must be in \(0, 1\)"),
        ({"means": ["age"], "count_share": 1.0}, r"^count_share \(1.0\) must be in \(0, 1\)"),
        ({"means": ["age"], "count_share": 1.5}, r"^count_share \(1.5\) must be in \(0, 1\)"),
        ({"count_share": 0.5}, r"^count_share \(0.5\) splits .* but means is empty"),
        ({"relation": "sideways"}, r"^relation \('sideways'\) must be one of"),
        ({"epsilon": -1.0}, r"^epsilon"),
        (
            {"epsilon": 1e-6, "means": ["age"]},
            r"^epsilon \(1e-06\): the share of each mean column .* use epsilon >= 3.05e-05$",
        ),
    ],
)
def test_bad_parameters_are_one_line_and_spend_nothing(kw, match) -> None:
    eps = kw.pop("epsilon", 1.0)
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    pub = GroupByPublisher(eps, make_schema(), **kw)
    with pytest.raises(ParameterError, match=match) as info:
        pub.fit(make_df(50), accountant=acct)
    assert "\n" not in str(info.value)
    assert acct.spent.epsilon == 0 and acct.history() == []


def test_non_string_column_names_are_a_type_error() -> None:
    with pytest.raises(ParameterTypeError, match=r"^by \(3\) must be a list of column names"):
        GroupByPublisher(1.0, make_schema(), by=3).plan()


def test_a_binding_row_norm_bound_is_refused() -> None:
    d = make_schema().to_dict()
    d["row_norm_bound"] = 1.0
    with pytest.raises(ParameterError, match=r"^schema declares row_norm_bound \(1\)"):
        GroupByPublisher(1.0, Schema.from_dict(d)).plan()


# -- the release --------------------------------------------------------------------------


def test_every_declared_group_appears_in_declared_order_empty_ones_included() -> None:
    pub = fit(make_df(300), by=["sex", "region"], means=["age"])
    data = pub.release_.data
    assert list(data.columns) == ["sex", "region", *COLUMNS]
    assert list(zip(data["sex"], data["region"], strict=True)) == [
        (s, r) for s in ("F", "M") for r in ("N", "S", "E")
    ]
    assert data["count"].dtype.kind == "i"
    # Region E has no rows: its count is pure noise; its mean is NaN exactly when the
    # noisy count is below 1 (and within the bounds otherwise).
    mean = data["mean_age"].to_numpy()
    assert np.array_equal(np.isnan(mean), data["count"].to_numpy() < 1)
    assert np.all((mean[~np.isnan(mean)] >= 0) & (mean[~np.isnan(mean)] <= 100))
    whole = fit(make_df(300), by=(), means=["age"]).release_.data
    assert list(whole.columns) == COLUMNS and len(whole) == 1


def test_statistics_hold_counts_sums_and_means() -> None:
    pub = fit(make_df(400), by=["region"], means=["age"])
    stats, data = pub.release_.statistics, pub.release_.data
    assert {"count", "sum_age", "mean_age", "sum_age_lo", "mean_age_hi"} <= set(stats)
    counts = data["count"].to_numpy(dtype=float)
    ok = counts >= 1
    # mean = midpoint + centred sum / count and sum = centred sum + midpoint * count.
    np.testing.assert_allclose(
        stats["sum_age"][ok] / counts[ok], np.clip(stats["mean_age"][ok], 0, 100), rtol=1e-12
    )
    np.testing.assert_array_equal(stats["count"], counts)


def test_means_are_close_to_the_truth_on_a_large_table() -> None:
    """n = 200,000 in 4 groups of about 50,000; ε = 1 split 1/2, 1/2 (one mean column).

    Count noise: discrete Laplace of scale 2/0.5 = 4 rows; centred-sum noise: scale
    100/0.5 = 200 years. |noise| > 10 b has probability e⁻¹⁰ ≈ 5e-5 per value, so with
    probability > 0.999 every count is within 40 and every mean within
    (2,000 + 50 · 40) / 49,960 ≈ 0.08 years of the truth. The seed is fixed; the bounds
    are what the test asserts (0.1 years, 40 rows).
    """
    df = make_df(200_000, seed=3)
    pub = fit(df, seed=4, by=["sex", "region"], means=["age"])
    truth = df.groupby(["sex", "region"])["age"].agg(["count", "mean"]).reset_index()
    got = pub.release_.data.merge(truth, on=["sex", "region"], how="left")
    full = got.dropna(subset=["mean"])
    assert len(full) == 4
    assert np.all(np.abs(full["count_x"] - full["count_y"]) <= 40)
    assert np.all(np.abs(full["mean_age"] - full["mean"]) <= 0.1)


def test_release_is_the_noise_path_on_the_exact_integer_statistics() -> None:
    """``fit`` releases ``_noisy`` of :func:`group_statistics` (the path the audit samples)."""
    df = make_df(500)
    pub = fit(df, seed=11, by=["sex", "y"], means=["age", "income"], rounding=None)
    plan = pub.plan()
    X, y = make_schema().encode(df)
    stats = group_statistics(make_schema(), plan, X, y)
    counts, sums = pub._noisy(plan, stats, resolve_random_state(11))
    np.testing.assert_array_equal(pub.release_.data["count"].to_numpy(), counts)
    span, centre = 100.0, 50.0
    expected = np.clip(centre + sums[0] * (span / UNIT) / counts, 0, 100)
    np.testing.assert_allclose(pub.release_.data["mean_age"], expected, rtol=1e-12)
    # The label may group; its classes are the keys.
    assert list(pub.release_.data["y"])[:2] == ["no", "yes"]


def test_centred_units_are_exact_integers_within_half_a_unit() -> None:
    schema = make_schema()
    age = schema.column("age")
    u = np.array([0.0, 0.5, 1.0, 0.25])
    np.testing.assert_array_equal(
        centred_units(age, u), [-HALF_UNIT, 0, HALF_UNIT, -HALF_UNIT // 2]
    )
    income = schema.column("income")  # log scale: the position of the value, not its log
    values = np.array([0.0, 250_000.0, 1e6])
    units = centred_units(income, income.to_unit(values))
    np.testing.assert_allclose(units, [-HALF_UNIT, -HALF_UNIT // 2, HALF_UNIT], atol=2)


@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
def test_sensitivities_hold_on_random_neighbours_moves_between_groups_included(relation) -> None:
    """The exact statistics of neighbouring tables differ by at most the stated L1
    sensitivities: counts 2 / 1, each column's centred sums UNIT / UNIT/2 (values at the
    bounds, rows moved between groups, rows replaced within a group)."""
    schema = make_schema()
    pub = GroupByPublisher(1.0, schema, by=["sex", "region"], means=["age"], relation=relation)
    plan = pub.plan()
    rng = np.random.default_rng(5)
    worst_c = worst_s = 0
    for _ in range(300):
        df = make_df(12, seed=int(rng.integers(1 << 30)))
        df.loc[rng.integers(12), "age"] = rng.choice([0.0, 100.0, 150.0])
        i = int(rng.integers(12))
        if relation == "replace-one":
            other = df.copy()
            other.loc[i, ["age", "sex", "region"]] = [
                rng.choice([-5.0, 0.0, 100.0, 50.0]),
                rng.choice(["F", "M"]),
                rng.choice(["N", "S", "E"]),
            ]
        else:
            other = df.drop(index=i).reset_index(drop=True)
        a = group_statistics(schema, plan, *schema.encode(df))
        b = group_statistics(schema, plan, *schema.encode(other))
        worst_c = max(worst_c, int(np.abs(a.counts - b.counts).sum()))
        worst_s = max(worst_s, int(np.abs(a.sums - b.sums).sum()))
    assert worst_c == plan.count_sensitivity  # reached, never exceeded
    assert 0 < worst_s <= plan.sum_sensitivity


def test_missing_values_follow_the_nan_policy() -> None:
    df = make_df(200)
    df.loc[:9, "age"] = np.nan
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    with pytest.raises(DataValidationError, match="age"):
        GroupByPublisher(1.0, make_schema(), means=["age"]).fit(df, accountant=acct)
    assert acct.history() == []
    schema = make_schema(impute=True)
    plan = GroupByPublisher(1.0, schema, means=["age"]).plan()
    X, y = schema.encode(df)
    stats = group_statistics(schema, plan, X, y)
    filled = df.assign(age=df["age"].fillna(50.0))
    X2, y2 = schema.encode(filled)
    np.testing.assert_array_equal(stats.sums, group_statistics(schema, plan, X2, y2).sums)


def test_values_outside_the_bounds_are_clipped() -> None:
    schema = make_schema()
    plan = GroupByPublisher(1.0, schema, means=["age"]).plan()
    df = make_df(10).assign(age=1_000.0)
    stats = group_statistics(schema, plan, *schema.encode(df))
    assert stats.sums.tolist() == [[10 * HALF_UNIT]]


# -- accounting and the command line ------------------------------------------------------


def test_the_ledger_is_charged_epsilon_with_typed_events() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    pub = GroupByPublisher(1.2, make_schema(), by=["sex"], means=["age", "income"])
    pub.fit(make_df(100), accountant=acct)
    history = acct.history()
    assert len(history) == 3 and pub.release_.ledger_indices == tuple(r.index for r in history)
    assert acct.spent.epsilon == pytest.approx(1.2) and acct.spent.epsilon <= 1.2 + 1e-12
    assert history[0].details["n"] == 100 and history[0].details["units"] == "rows"
    assert pub.release_.guarantee.epsilon == 1.2
    assert pub.release_.guarantee.relation is Neighbouring.REPLACE_ONE


def test_add_remove_keeps_n_out_of_the_ledger_and_must_match_it() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0), relation="add/remove")
    pub = GroupByPublisher(1.0, make_schema(), by=["sex"], relation="add/remove")
    pub.fit(make_df(100), accountant=acct)
    assert "n" not in acct.history()[0].details
    assert "n private" in " ".join(pub.release_.guarantee.assumptions)
    other = Accountant.in_memory(total=PrivacyBudget(5.0))
    with pytest.raises(ParameterError, match="relation"):
        GroupByPublisher(1.0, make_schema(), relation="add/remove").fit(
            make_df(100), accountant=other
        )
    assert other.history() == []


def test_cli_writes_the_table_and_its_guarantee(tmp_path, capsys) -> None:
    df = make_df(500)
    df.to_csv(tmp_path / "t.csv", index=False)
    make_schema().to_file(tmp_path / "s.json")
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "t", "--epsilon", "3"]) == 0
    argv = ["publish", "groupby", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "--by", "sex,region", "--means", "age", "--ledger", str(ledger)]
    out = tmp_path / "out.csv"
    assert main([*argv, "-o", str(out), "--dry-run"]) == 0
    assert not out.exists()
    said = capsys.readouterr().out
    # counts: b = 2/(1/2) rows; age sums: b = 100/(1/2) years, not 2**24 internal steps
    assert "discrete Laplace noise, scale b = 4 per released value" in said
    assert (
        "scale b = 200 per released value, standard deviation about 282.8, in the column's units"
        in said
    )
    assert main([*argv, "-o", str(out), "--count-share", "0.5"]) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["sex", "region", *COLUMNS]
    assert len(table) == 6
    side = json.loads((tmp_path / "out.csv.guarantee.json").read_text())
    assert side["method"] == "groupby" and side["guarantee"]["epsilon"] == 1.0
    capsys.readouterr()
    report = ["report", str(out), "--original", str(tmp_path / "t.csv")]
    report += ["--schema", str(tmp_path / "s.json"), "-o", str(tmp_path / "r.html")]
    # the report of a group-by release compares its groups, not rows; --target is refused
    assert main([*report, "--target", "sex"]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [
        f"ppdp: error: --target does not apply to a group-by release ({str(out)!r}): its "
        "report compares each group's statistics with the original's; leave it out"
    ]
    assert not (tmp_path / "r.html").exists()
    assert main([*report, "--json", str(tmp_path / "r.json")]) == 0
    numbers = json.loads((tmp_path / "r.json").read_text())
    assert numbers["kind"] == "groupby" and numbers["bounding"] is None  # no privacy unit
    assert [e["statistic"] for e in numbers["groups"]["statistics"]] == ["count", "mean_age"]
    assert "Quality report of a group-by release" in (tmp_path / "r.html").read_text()
    assert side["guarantee"]["details"]["count_sensitivity"] == 2
    assert math.isclose(side["guarantee"]["details"]["epsilon_count"], 0.5)
    capsys.readouterr()
    bad = main([*argv[:-6], "--by", "age", "--ledger", str(ledger), "-o", str(tmp_path / "b.csv")])
    err = capsys.readouterr().err.strip().splitlines()
    assert bad != 0 and err[-1].startswith("ppdp: error: --by ('age') is a numeric column")
    assert not (tmp_path / "b.csv").exists()


def test_each_mean_says_its_noise_standard_deviation() -> None:
    """``mean_x_sd`` is the sum noise's standard deviation over the noisy count: exactly
    √(2q)/(1 − q)·range/U/count with q = e^(−1/b) (≈ √2·range/(ε_mean·count)); over 300
    seeds the released means of a 2,000-row group spread by that much (the count's noise,
    ±2/ε_count on 2,000 rows, adds under 1 %). The spread's sampling error over 300 draws is
    about 4 %; the bound is 15 %."""
    df = make_df(4000)
    eps_mean = 0.5  # ε = 1, equal shares between the counts and one column
    deviations, sds = [], []
    for seed in range(300):
        pub = GroupByPublisher(
            1.0, make_schema(), by=["sex"], means=["age"], random_state=seed, rounding=None
        )
        with pytest.warns(Warning):
            pub.fit(df)
        out = pub.release_.data
        counts = out["count"].to_numpy(dtype=float)
        sd = out["mean_age_sd"].to_numpy()
        b = UNIT / eps_mean
        q = np.exp(-1.0 / b)
        exact = np.sqrt(2 * q) / -np.expm1(-1.0 / b) * 100.0 / UNIT / counts
        np.testing.assert_allclose(sd, exact, rtol=1e-12)
        np.testing.assert_allclose(sd, np.sqrt(2) * 100.0 / eps_mean / counts, rtol=1e-6)
        truth = df.groupby("sex")["age"].mean().loc[out["sex"]].to_numpy()
        deviations.append(out["mean_age"].to_numpy() - truth)
        sds.append(sd)
    spread = np.std(np.array(deviations), axis=0)
    assert np.all(np.abs(spread / np.mean(sds, axis=0) - 1) < 0.15), spread


def test_names_keep_the_spaces_a_schema_gives_them_and_a_near_name_is_named() -> None:
    """A spreadsheet header ' Age ' kept in the schema: '--means " Age ,x"' finds it (spaces
    are dropped only from names the schema does not have), and 'Age' is refused with the
    schema's own spelling (the fourth trial's survey export)."""
    spec = make_schema().to_dict()
    spec["columns"][0]["name"] = " Age "
    schema = Schema.from_dict(spec)
    df = make_df(200).rename(columns={"age": " Age "})
    pub = GroupByPublisher(1.0, schema, by="sex", means=" Age ,income", random_state=0)
    with pytest.warns(Warning):
        pub.fit(df)
    assert {"mean_ Age ", "mean_ Age _sd"} <= set(pub.release_.data.columns)
    with pytest.raises(ParameterError, match=r"the schema has ' Age ' for 'Age' \(spaces"):
        GroupByPublisher(1.0, schema, by="sex", means="Age").fit(df)
    with pytest.raises(ParameterError, match=r"the schema has 'sex' for 'Sex' \(other capitals"):
        GroupByPublisher(1.0, schema, by="Sex").fit(df)


def test_a_numeric_or_date_column_with_declared_cuts_groups_by_its_intervals() -> None:
    """Age bands from public cuts: the groups are the intervals between the bounds and the
    cuts (empty ones included), a value equal to a cut opens the next interval, the upper
    bound closes the last; a date column with yearly cuts groups by year. At ε = 50 a count's
    noise has scale 2/50 and is 0 but with probability about 3e-11: the exact counts show."""
    spec = make_schema().to_dict()
    spec["columns"][0]["cuts"] = [30, 45, 90]
    spec["columns"].append(
        {"name": "seen", "type": "numeric", "date": True, "lower": "2020-01-01",
         "upper": "2022-12-31", "cuts": ["2021-01-01", "2022-01-01"]}
    )  # fmt: skip
    schema = Schema.from_dict(spec)
    df = pd.DataFrame(
        {
            "age": [0, 29.9, 30, 44, 45, 100, 100],
            "income": 1e4,
            "sex": "F",
            "region": "N",
            "y": "no",
            "seen": ["2020-05-01", "2021-01-01", "2021-06-30", "2022-12-31", "2020-01-01",
                     "2022-01-01", "2021-12-31"],
        }
    )  # fmt: skip
    pub = GroupByPublisher(50.0, schema, by=["age"], allow_large_epsilon=True, random_state=0)
    with pytest.warns(Warning):
        pub.fit(df)
    out = pub.release_.data
    assert out["age"].tolist() == ["[0, 30)", "[30, 45)", "[45, 90)", "[90, 100]"]
    assert out["count"].tolist() == [2, 2, 1, 2]
    years = GroupByPublisher(50.0, schema, by=["seen"], allow_large_epsilon=True, random_state=0)
    with pytest.warns(Warning):
        years.fit(df)
    table = years.release_.data
    assert table["seen"].tolist() == [
        "[2020-01-01, 2021-01-01)",
        "[2021-01-01, 2022-01-01)",
        "[2022-01-01, 2022-12-31]",
    ]
    assert table["count"].tolist() == [2, 3, 2]
    with pytest.raises(ParameterError, match=r"'income'\) is a numeric column without declared"):
        GroupByPublisher(1.0, schema, by=["income"]).fit(df)


def test_the_means_refusal_lists_only_columns_means_take_quoted() -> None:
    """A date column is not offered for means (it is refused there), and names are quoted,
    so a spreadsheet's ' Age ' is visible as such."""
    spec = make_schema().to_dict()
    spec["columns"][0]["name"] = " Age "
    spec["columns"].append(
        {"name": "seen", "type": "numeric", "date": True, "lower": "2020-01-01",
         "upper": "2020-12-31"}
    )  # fmt: skip
    schema = Schema.from_dict(spec)
    with pytest.raises(ParameterError, match=r"numeric columns \(' Age ', 'income'\); group by"):
        GroupByPublisher(1.0, schema, means="sex").plan()


def test_rounding_to_the_noise_never_writes_a_negative_zero() -> None:
    """A small negative value rounded to zero is written 0, not -0 (both roundings)."""
    from ppdp.publish.intervals import round_to_noise

    auto = round_to_noise(np.array([-0.03, -0.2, 1.26]), np.array([1.7, 1.7, 1.7]), None)
    fixed = round_to_noise(np.array([-0.004, 2.346]), np.array([1.0, 1.0]), 2)
    assert auto.tolist() == [0.0, -0.2, 1.3] and not np.signbit(auto[0])
    assert fixed.tolist() == [0.0, 2.35]
    assert not np.signbit(fixed[0])
