"""``max_rows: auto``: the cap chosen under DP per release (a noisy quantile of rows per
person), charged in the same plan, stated in the guarantee; the choice's exact privacy loss
between neighbours that differ by one person, and a broken choice over rows that exceeds it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import AutoMaxRows, PrivacyUnit, Schema
from ppdp.data.contribution import auto_utilities, rows_per_person
from ppdp.exceptions import DataValidationError, SchemaError
from ppdp.mechanisms import ExponentialMechanism
from ppdp.publish import GroupByPublisher, LaplacePublisher, TableSynthesizer
from ppdp.publish.unit_choice import choose_max_rows
from ppdp.random import SeededRandom
from ppdp.release import ReleaseOptions

COLUMNS = [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
]


def auto_schema(**auto) -> Schema:
    unit = {"column": "pid", "max_rows": "auto", **({"auto": auto} if auto else {})}
    return Schema.from_dict({"columns": COLUMNS, "privacy_unit": unit})


def panel(n_persons: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Persons with 1 + Poisson(4) rows (90th percentile 8), rows shuffled."""
    rng = np.random.default_rng(seed)
    sizes = rng.poisson(4, n_persons) + 1
    pid = np.repeat(np.arange(n_persons), sizes)
    n = len(pid)
    df = pd.DataFrame({"pid": pid, "age": rng.uniform(0, 100, n), "sex": rng.choice(["F", "M"], n)})
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def true_quantile(df: pd.DataFrame, q: float = 0.9) -> int:
    sizes = np.sort(df.groupby("pid").size().to_numpy())
    return int(sizes[math.ceil(q * len(sizes)) - 1])


def _acct(tmp_path) -> Accountant:
    return Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(3.0, 1e-6))


# -- the schema ---------------------------------------------------------------------------


def test_auto_round_trips_and_reads_as_its_upper_cap_until_chosen(tmp_path) -> None:
    s = auto_schema(upper=40, quantile=0.95, epsilon=0.2)
    unit = s.privacy_unit
    assert unit.is_auto and unit.max_rows == 40 and unit.auto == AutoMaxRows(40, 0.95, 0.2)
    for suffix in (".json", ".yaml"):
        assert Schema.from_file(s.to_file(tmp_path / f"s{suffix}")) == s
    assert s.to_dict()["privacy_unit"]["max_rows"] == "auto"
    assert auto_schema().privacy_unit.auto == AutoMaxRows()  # documented defaults
    chosen = unit.resolved(7)
    assert chosen.max_rows == 7 and chosen.chosen and not chosen.is_auto
    assert chosen.ledger_dict()["max_rows_chosen_under_dp"] == unit.auto.to_dict()
    assert "max_rows chosen under DP: 7" in chosen.describe()


@pytest.mark.parametrize(
    ("auto", "words"),
    [
        ({"upper": 0}, "auto: upper (0) must be an integer in 1..10000"),
        ({"upper": 2.5}, "auto: upper (2.5) must be an integer"),
        ({"quantile": 0}, "auto: quantile (0) must be a number in (0, 1]"),
        ({"quantile": 1.5}, "auto: quantile (1.5) must be a number in (0, 1]"),
        ({"epsilon": -1}, "auto: epsilon (-1) must be a number in (0, 1]"),
        ({"epsilon": "small"}, "auto: epsilon ('small') must be a number in (0, 1]"),
        ({"eps": 0.1}, "unknown key 'eps'"),
    ],
)
def test_a_bad_auto_is_one_line(auto, words) -> None:
    with pytest.raises(SchemaError) as info:
        auto_schema(**auto)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_auto_settings_with_a_declared_max_rows_are_refused() -> None:
    with pytest.raises(SchemaError, match="auto is only for max_rows: auto"):
        Schema.from_dict(
            {"columns": COLUMNS, "privacy_unit": {"column": "pid", "max_rows": 5, "auto": {}}}
        )
    with pytest.raises(SchemaError, match="chosen is set by the release"):
        PrivacyUnit("pid", "auto", chosen=True)


# -- the choice -----------------------------------------------------------------------------


def test_utility_is_zero_at_the_quantile_and_ties_prefer_the_smaller_cap() -> None:
    u = auto_utilities(np.full(100, 5), AutoMaxRows(upper=10, quantile=0.9))
    assert int(np.argmax(u)) + 1 == 5 and u[4] == 0
    assert list(u[:4]) == [-90] * 4 and list(u[5:]) == [-10] * 5  # above: 10 persons of rank


def test_choice_lands_near_the_quantile() -> None:
    df = panel(3000, seed=1)
    sizes = rows_per_person(df["pid"], PrivacyUnit("pid", "auto"))
    ks = [
        choose_max_rows(sizes, AutoMaxRows(), SeededRandom(i), relation="add/remove")
        for i in range(20)
    ]
    q = true_quantile(df)
    # 3,000 persons at ε = 0.1: within one row of the 0.9-quantile in every seed here
    assert all(abs(k - q) <= 1 for k in ks), (q, ks)


def test_rows_per_person_is_exact_on_dask_when_persons_span_partitions() -> None:
    dd = pytest.importorskip("dask.dataframe")
    df = panel(300, seed=2)
    unit = PrivacyUnit("pid", "auto")
    mem = np.sort(rows_per_person(df["pid"], unit))
    dist = np.sort(
        rows_per_person(dd.from_pandas(df, npartitions=4)["pid"], unit, scheduler="sync")
    )
    assert np.array_equal(mem, dist)
    with pytest.raises(DataValidationError, match="has 1 missing id"):
        bad = df.assign(pid=df["pid"].where(df.index != 3))
        rows_per_person(dd.from_pandas(bad, npartitions=3)["pid"], unit, scheduler="sync")


# -- exact privacy loss of the choice: neighbours differ by one person ----------------------


def _max_log_ratio(mech: ExponentialMechanism, u: np.ndarray, v: np.ndarray) -> float:
    return float(np.max(np.abs(np.log(mech.probabilities(u)) - np.log(mech.probabilities(v)))))


def _row_utilities(sizes: np.ndarray, spec: AutoMaxRows) -> np.ndarray:
    """Broken: the quantile of rows (each row counts its person's size), not of persons."""
    return auto_utilities(np.repeat(sizes, sizes), spec)


@pytest.mark.parametrize("relation", ["add/remove", "replace-one"])
def test_the_choice_is_epsilon_dp_per_person_and_a_choice_over_rows_is_not(relation) -> None:
    """Every neighbour of 30 random tables (one person of 1..upper+3 rows added, removed or
    replaced): the exact output distributions' log ratio stays within ε; the same mechanism
    on the rows' quantile (calibrated as if one row moved) exceeds ε on some neighbour."""
    spec = AutoMaxRows(upper=12, quantile=0.9, epsilon=0.5)
    mech = ExponentialMechanism(epsilon=spec.epsilon, sensitivity=1.0)
    rng = np.random.default_rng(0)
    worst = worst_broken = 0.0
    for _ in range(30):
        sizes = rng.integers(1, 16, rng.integers(5, 40))
        for m in range(1, spec.upper + 4):
            if relation == "add/remove":
                pairs = [(sizes, np.append(sizes, m)), (sizes, sizes[1:])]
            else:
                pairs = [(sizes, np.append(sizes[1:], m))]
            for a, b in pairs:
                worst = max(
                    worst, _max_log_ratio(mech, auto_utilities(a, spec), auto_utilities(b, spec))
                )
                worst_broken = max(
                    worst_broken,
                    _max_log_ratio(mech, _row_utilities(a, spec), _row_utilities(b, spec)),
                )
    assert worst <= spec.epsilon + 1e-9
    assert worst > 0.4 * spec.epsilon  # the pairs reach the bound's order (ε/2 here)
    assert worst_broken > 3 * spec.epsilon


# -- a release with max_rows: auto ----------------------------------------------------------


def test_the_spend_is_recorded_and_the_chosen_k_is_in_the_guarantee(tmp_path) -> None:
    acct = _acct(tmp_path)
    df = panel()
    with pytest.warns(Warning):
        pub = GroupByPublisher(1.0, auto_schema(), by=["sex"], means=["age"], random_state=3)
        pub.fit(df, accountant=acct, allow_seeded=True)
    history = acct.history()
    assert history[0].mechanism.endswith("max_rows auto (exponential mechanism)")
    assert history[0].budget == PrivacyBudget(0.1)
    assert acct.spent.epsilon == pytest.approx(1.1)
    k = history[1].details["privacy_unit"]["max_rows"]
    assert abs(k - true_quantile(df)) <= 1
    g = pub.guarantee
    assert g.epsilon == pytest.approx(1.1)
    assert f"max_rows chosen under DP: {k}" in g.summary()
    assert any(f"max_rows chosen under DP: {k}" in a for a in g.assumptions)
    assert g.details["count_sensitivity"] == 2 * k  # calibrated to the chosen k, not upper
    assert pub.schema.privacy_unit.is_auto  # the declared schema is left as declared
    assert acct.privacy_unit == "pid"


def test_a_dry_run_plans_the_choice_and_spends_nothing(tmp_path) -> None:
    acct = _acct(tmp_path)
    pub = GroupByPublisher(1.0, auto_schema(upper=30), by=["sex"], random_state=3)
    with pytest.warns(Warning):
        run = pub.run(panel(), ReleaseOptions(accountant=acct, allow_seeded=True, dry_run=True))
    assert run.dry_run and [c.budget.epsilon for c in run.charges] == [0.1, 1.0]
    assert run.charges[0].mechanism.endswith("max_rows auto (exponential mechanism)")
    assert run.charges[1].details["privacy_unit"]["max_rows"] == "auto"  # planned for upper
    assert acct.spent == PrivacyBudget(0.0) and not acct.history()
    assert pub.privacy_budget() == PrivacyBudget(1.1)


def test_in_memory_and_dask_choose_the_same_k_and_release_the_same() -> None:
    dd = pytest.importorskip("dask.dataframe")
    df = panel(400, seed=5)
    kw = {"by": ["sex"], "means": ["age"]}
    with pytest.warns(Warning):
        mem = GroupByPublisher(1.0, auto_schema(upper=20), random_state=11, **kw).fit(df)
    with pytest.warns(Warning):
        dist = GroupByPublisher(1.0, auto_schema(upper=20), random_state=11, **kw)
        dist.fit(dd.from_pandas(df, npartitions=4), scheduler="sync")
    pd.testing.assert_frame_equal(dist.release_.data, mem.release_.data)
    assert dist.release_.guarantee == mem.release_.guarantee


def test_synthesizer_with_auto_adds_the_choice_to_its_guarantee(tmp_path) -> None:
    acct = _acct(tmp_path)
    with pytest.warns(Warning):
        synth = TableSynthesizer(1.0, auto_schema(upper=20), random_state=0)
        synth.fit(panel(300), accountant=acct, allow_seeded=True)
    k = acct.history()[-1].details["privacy_unit"]["max_rows"]
    assert 1 <= k <= 20 and f"max_rows chosen under DP: {k}" in synth.guarantee.summary()
    assert acct.history()[0].budget == PrivacyBudget(0.1)


def test_a_row_level_method_refuses_an_auto_unit_in_one_line(tmp_path) -> None:
    acct = _acct(tmp_path)
    with pytest.raises(SchemaError) as info:
        LaplacePublisher(1.0, auto_schema()).fit(panel(50), accountant=acct)
    assert "max_rows auto" in str(info.value) and "\n" not in str(info.value)
    assert acct.spent == PrivacyBudget(0.0)


def test_missing_ids_with_auto_are_refused_before_any_spend(tmp_path) -> None:
    acct = _acct(tmp_path)
    df = panel(100).pipe(lambda d: d.assign(pid=d["pid"].where(d.index != 3)))
    with pytest.raises(DataValidationError) as info, pytest.warns(Warning):
        GroupByPublisher(1.0, auto_schema(), by=["sex"], random_state=0).fit(
            df, accountant=acct, allow_seeded=True
        )
    assert "has 1 missing id(s)" in str(info.value)
    assert acct.spent == PrivacyBudget(0.0) and not acct.history()


def test_cli_dry_run_names_the_choice_and_the_worst_case_plan(tmp_path, capsys) -> None:
    from ppdp.cli import main

    panel(200).to_csv(tmp_path / "t.csv", index=False)
    auto_schema(upper=30).to_file(tmp_path / "s.json")
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "t", "--epsilon", "3"]) == 0
    argv = ["publish", "groupby", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += [
        "--epsilon",
        "1",
        "--by",
        "sex",
        "--ledger",
        str(ledger),
        "-o",
        str(tmp_path / "o.csv"),
    ]
    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would charge ε=1.1 in 2 ledger entries" in out
    assert "a selection (exponential mechanism, utility sensitivity 1)" in out
    assert "planned for max_rows = 30 (the most it can be)" in out
    assert not (tmp_path / "o.csv").exists()
    assert main(argv) == 0
    said = capsys.readouterr()
    assert "max_rows chosen under DP:" in said.out and "% dropped" in said.err
