"""The privacy unit: declared in the schema, bounded before any statistic, calibrated per
person (GroupByPublisher), refused by the methods that cannot honour it, pinned by the
ledger. Bad input: one line, nothing written, nothing spent."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import PrivacyUnit, Schema
from ppdp.data.contribution import (
    ContributionBounds,
    bound_dask,
    bound_table,
    bounding_keys,
)
from ppdp.exceptions import DataValidationError, ParameterError, SchemaError
from ppdp.publish import DPPCAPublisher, GroupByPublisher, LaplacePublisher, TableSynthesizer
from ppdp.random import resolve_random_state

COLUMNS = [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "ward", "type": "categorical", "categories": ["a", "b", "c"]},
]


def schema(max_rows: int = 3, **extra) -> Schema:
    return Schema.from_dict(
        {"columns": COLUMNS, "privacy_unit": {"column": "pid", "max_rows": max_rows}, **extra}
    )


def panel(n_persons: int = 200, seed: int = 0) -> pd.DataFrame:
    """Persons with 1 to 8 rows each, rows shuffled (a person's rows are scattered)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, n_persons)
    pid = np.repeat(np.arange(n_persons), sizes)
    n = len(pid)
    df = pd.DataFrame(
        {
            "pid": pid,
            "age": rng.integers(0, 100, n).astype(float),
            "sex": np.repeat(rng.choice(["F", "M"], n_persons), sizes),
            "ward": rng.choice(["a", "b", "c"], n),
        }
    )
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def keys(seed: int = 1) -> tuple[str, str]:
    with pytest.warns(Warning):  # a seeded source warns
        return bounding_keys(resolve_random_state(seed))


# -- the schema ---------------------------------------------------------------------------


def test_round_trips_through_json_and_yaml(tmp_path) -> None:
    s = schema(5)
    assert s.privacy_unit == PrivacyUnit("pid", 5)
    for suffix in (".json", ".yaml"):
        path = s.to_file(tmp_path / f"s{suffix}")
        assert Schema.from_file(path) == s
    assert "privacy_unit: {column: pid, max_rows: 5}" in s.to_yaml()
    assert s.data_columns == ("age", "sex", "ward", "pid")
    assert "pid" not in s.column_names and "pid" not in " ".join(s.feature_names)


@pytest.mark.parametrize(
    ("unit", "words"),
    [
        ({"column": "pid", "max_rows": 0}, "max_rows (0) must be an integer >= 1"),
        ({"column": "pid", "max_rows": -2}, "max_rows (-2) must be an integer >= 1"),
        ({"column": "pid", "max_rows": 2.5}, "max_rows (2.5) must be an integer >= 1"),
        ({"column": "pid", "max_rows": 5.0}, "max_rows (5.0) must be an integer >= 1"),
        ({"column": "pid", "max_rows": "5"}, "max_rows ('5') must be an integer >= 1"),
        ({"column": "pid", "max_rows": True}, "max_rows (True) must be an integer >= 1"),
        ({"column": "pid", "max_rows": "several"}, "must be an integer >= 1 (rows per person) or"),
        ({"column": "pid"}, "'max_rows' is missing"),
        ({"column": "", "max_rows": 2}, "name ('') must be a non-empty string"),
        ({"column": "age", "max_rows": 2}, "is also a feature column"),
        ({"column": "pid", "max_rows": 2, "max_rowz": 1}, "unknown key 'max_rowz'"),
        ("pid", "must be a mapping"),
    ],
)
def test_a_bad_unit_is_one_line(unit, words) -> None:
    with pytest.raises(SchemaError, match=None) as info:
        Schema.from_dict({"columns": COLUMNS, "privacy_unit": unit})
    message = str(info.value)
    assert words in message and "\n" not in message


# -- the bounding -------------------------------------------------------------------------


def test_each_person_keeps_at_most_max_rows_whatever_the_order() -> None:
    df = panel()
    bounds = ContributionBounds(schema(3).privacy_unit)
    kept, counts = bound_table(df, schema(3), bounds, keys(), log=False)
    per_person = kept.groupby("pid").size()
    sizes = df.groupby("pid").size()
    assert (per_person == np.minimum(sizes, 3)).all()  # never more, never needlessly fewer
    assert counts.kept == len(kept) and counts.persons == df["pid"].nunique()
    assert counts.by_rows == len(df) - len(kept)
    # Another order of the same rows: the same rows (as values) are kept.
    again, _ = bound_table(df.iloc[::-1], schema(3), bounds, keys(), log=False)
    cols = ["pid", "age", "sex", "ward"]
    pd.testing.assert_frame_equal(
        kept.sort_values(cols).reset_index(drop=True),
        again.sort_values(cols).reset_index(drop=True),
    )


def test_the_bounding_is_a_per_person_map() -> None:
    """Lemma 1 of docs/proofs/privacy-unit.md: removing one person (any number of rows)
    leaves every other person's kept rows unchanged, for one key, with all three caps."""
    df = panel(150, seed=9)
    s = schema(4)

    def ward(X, y):
        return np.argmax(X[:, s.layout().blocks["ward"]], axis=1).astype(np.int64)

    bounds = ContributionBounds(s.privacy_unit, max_groups=2, max_rows_per_group=2, group_fn=ward)
    k = keys(3)
    kept, _ = bound_table(df, s, bounds, k, log=False)
    cols = ["pid", "age", "sex", "ward"]
    for p in (0, 7, 42):
        without, _ = bound_table(df[df["pid"] != p], s, bounds, k, log=False)
        pd.testing.assert_frame_equal(
            kept[kept["pid"] != p][cols].sort_values(cols).reset_index(drop=True),
            without[cols].sort_values(cols).reset_index(drop=True),
        )
        assert (kept["pid"] == p).sum() <= bounds.max_contribution


def test_the_rows_kept_are_uniformly_random_not_the_first() -> None:
    """2,000 persons with the same 4 rows, max_rows 1: each row is kept w.p. 1/4, persons
    independently (their ids key the priorities). The chi-square test (3 d.o.f.) rejects
    uniformity at p < 1e-4 (false-positive rate 1e-4); the broken variant that keeps each
    person's first row gives counts (2000, 0, 0, 0) and is rejected."""
    from scipy.stats import chisquare

    n = 2000
    df = pd.DataFrame(
        {"pid": np.repeat(np.arange(n), 4), "age": np.tile([1.0, 2.0, 3.0, 4.0], n)}
    ).assign(sex="F", ward="a")
    s = schema(1)
    bounds = ContributionBounds(s.privacy_unit)
    source = resolve_random_state(None)  # the secure source, as a release uses
    kept, _ = bound_table(df, s, bounds, bounding_keys(source), log=False)
    hits = kept["age"].value_counts().reindex([1.0, 2.0, 3.0, 4.0], fill_value=0).to_numpy()
    assert hits.sum() == n
    assert chisquare(hits).pvalue > 1e-4
    first = df.groupby("pid").head(1)["age"].value_counts().reindex([1.0, 2.0, 3.0, 4.0])
    assert chisquare(first.fillna(0).to_numpy()).pvalue < 1e-4  # the broken variant fails


def test_group_caps_bound_groups_and_rows_per_group() -> None:
    df = panel(300, seed=2)
    s = schema(6)
    codes = {"a": 0, "b": 1, "c": 2}

    def ward(X, y):
        return np.argmax(X[:, s.layout().blocks["ward"]], axis=1).astype(np.int64)

    bounds = ContributionBounds(s.privacy_unit, max_groups=2, max_rows_per_group=1, group_fn=ward)
    kept, counts = bound_table(df, s, bounds, keys(), log=False)
    assert kept.groupby(["pid", "ward"]).size().max() == 1
    assert kept.groupby("pid")["ward"].nunique().max() <= 2
    assert bounds.max_contribution == 2
    assert counts.by_rows_per_group > 0 and counts.by_groups > 0
    assert set(kept["ward"].map(codes)) <= {0, 1, 2}


def test_the_share_dropped_goes_to_the_custodians_log_only(caplog) -> None:
    df = panel()
    with caplog.at_level(logging.INFO, logger="ppdp.custodian"), pytest.warns(Warning):
        pub = GroupByPublisher(1.0, schema(3), by=["sex"], random_state=0).fit(df)
    lines = [r.getMessage() for r in caplog.records if r.name == "ppdp.custodian"]
    assert any("custodian only" in m and "% dropped" in m and "max_rows=3" in m for m in lines)
    shown = str(pub.guarantee) + pub.release_.data.to_string()
    assert "dropped" not in shown


# -- GroupByPublisher per person ----------------------------------------------------------


def test_groupby_sensitivities_scale_with_the_rows_of_one_person() -> None:
    row = Schema.from_dict({"columns": COLUMNS})
    base = GroupByPublisher(1.0, row, by=["ward"], means=["age"]).plan()
    per = GroupByPublisher(1.0, schema(5), by=["ward"], means=["age"]).plan()
    assert per.count_sensitivity == 5 * base.count_sensitivity
    assert per.sum_sensitivity == 5 * base.sum_sensitivity
    capped = GroupByPublisher(
        1.0, schema(5), by=["ward"], means=["age"], max_groups=2, max_rows_per_group=1
    ).plan()
    assert capped.count_sensitivity == 2 * base.count_sensitivity  # min(5, 2 x 1)
    addrm = GroupByPublisher(1.0, schema(5), by=["ward"], relation="add/remove").plan()
    assert addrm.count_sensitivity == 5


def test_groupby_guarantee_reads_per_person_and_the_ledger_records_the_unit(tmp_path) -> None:
    acct = Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(3.0))
    with pytest.warns(Warning):
        pub = GroupByPublisher(1.0, schema(4), by=["sex"], max_groups=1, random_state=0)
        pub.fit(panel(), accountant=acct, allow_seeded=True)
    summary = pub.guarantee.summary()
    assert "per person (pid, ≤ 4 rows each, ≤ 1 group(s))" in summary
    assert acct.privacy_unit == "pid"
    details = acct.history()[-1].details
    assert details["privacy_unit"] == {"column": "pid", "max_rows": 4, "max_groups": 1}
    assert "n" not in details  # rows are not public under a unit


def test_in_memory_and_dask_give_the_same_release_when_persons_span_partitions() -> None:
    dd = pytest.importorskip("dask.dataframe")
    df = panel(400, seed=5)  # shuffled: each person's rows are spread over partitions
    frame = dd.from_pandas(df, npartitions=4)
    spans = sum(
        frame.partitions[i].compute()["pid"].isin(frame.partitions[j].compute()["pid"]).any()
        for i in range(4)
        for j in range(4)
        if i < j
    )
    assert spans > 0
    kw = {"by": ["sex", "ward"], "means": ["age"], "max_groups": 2, "max_rows_per_group": 2}
    with pytest.warns(Warning):
        mem = GroupByPublisher(1.0, schema(3), random_state=11, **kw).fit(df)
    with pytest.warns(Warning):
        dist = GroupByPublisher(1.0, schema(3), random_state=11, **kw)
        dist.fit(frame, scheduler="sync")
    pd.testing.assert_frame_equal(dist.release_.data, mem.release_.data)
    assert dist.release_.guarantee == mem.release_.guarantee


def test_dask_bounding_keeps_exactly_the_in_memory_rows() -> None:
    dd = pytest.importorskip("dask.dataframe")
    df = panel(300, seed=6)
    s = schema(2)
    bounds = ContributionBounds(s.privacy_unit)
    k = keys()
    mem, _ = bound_table(df, s, bounds, k, log=False)
    frame, counts = bound_dask(dd.from_pandas(df, npartitions=5), s, bounds, k)
    dist = frame.compute(scheduler="sync")
    cols = ["pid", "age", "sex", "ward"]
    pd.testing.assert_frame_equal(
        mem[cols].sort_values(cols).reset_index(drop=True),
        dist[cols].sort_values(cols).reset_index(drop=True),
        check_dtype=False,
    )
    import dask

    total = sum(dask.compute(*counts, scheduler="sync"), type(dask.compute(counts[0])[0])())
    assert total.kept == len(mem) and total.rows == len(df)


# -- bad input: one line, nothing written, nothing spent ----------------------------------


def _acct(tmp_path) -> Accountant:
    return Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(3.0, 1e-6))


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        (lambda df: df.drop(columns="pid"), DataValidationError, "lacks column 'pid'"),
        (
            lambda df: df.assign(pid=df["pid"].where(df.index != 3)),
            DataValidationError,
            "has 1 missing id(s)",
        ),
    ],
)
def test_bad_unit_data_is_refused_before_any_spend(tmp_path, change, error, words) -> None:
    acct = _acct(tmp_path)
    with pytest.raises(error) as info, pytest.warns(Warning):
        GroupByPublisher(1.0, schema(3), by=["sex"], random_state=0).fit(
            change(panel()), accountant=acct, allow_seeded=True
        )
    assert words in str(info.value) and "\n" not in str(info.value)
    assert acct.spent == PrivacyBudget(0.0)


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"max_groups": 0}, "max_groups (0) must be an integer >= 1"),
        ({"max_rows_per_group": 1.5}, "max_rows_per_group (1.5) must be an integer >= 1"),
        ({"max_groups": True}, "max_groups (True) must be an integer >= 1"),
    ],
)
def test_bad_group_caps_are_one_line(tmp_path, kw, words) -> None:
    acct = _acct(tmp_path)
    with pytest.raises(ParameterError) as info:
        GroupByPublisher(1.0, schema(3), by=["sex"], **kw).fit(panel(), accountant=acct)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert acct.spent == PrivacyBudget(0.0)


def test_group_caps_without_a_unit_are_refused() -> None:
    row = Schema.from_dict({"columns": COLUMNS})
    with pytest.raises(ParameterError, match="declares no privacy_unit"):
        GroupByPublisher(1.0, row, by=["sex"], max_groups=2).plan()


@pytest.mark.parametrize(
    "make",
    [
        lambda s: DPPCAPublisher(1.0, 2, s),
        lambda s: LaplacePublisher(1.0, s),
    ],
)
def test_a_method_that_cannot_honour_a_unit_refuses_it(tmp_path, make) -> None:
    acct = _acct(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(SchemaError) as info:
        make(schema(3)).fit(panel(), accountant=acct)
    message = str(info.value)
    assert "privacy_unit" in message and "cannot honour" in message and "\n" not in message
    assert acct.spent == PrivacyBudget(0.0) and not out.exists()


def test_a_learner_refuses_a_unit_it_cannot_honour() -> None:
    from ppdp.learn import PrivateLogisticRegression, PrivateRBFSVM

    s = schema(3, label={"name": "y", "classes": [0, 1]})
    df = panel().assign(y=0)
    with pytest.raises(SchemaError, match="cannot honour a person-level unit"):
        PrivateRBFSVM(epsilon=1.0, schema=s).fit(df.drop(columns="y"), df["y"])
    # the linear learners train per person by output perturbation only
    with pytest.raises(ParameterError, match="perturbation='output' only"):
        PrivateLogisticRegression(epsilon=1.0, schema=s).fit(df.drop(columns="y"), df["y"])


def test_a_ledger_refuses_a_release_under_another_unit(tmp_path) -> None:
    acct = _acct(tmp_path)
    with pytest.warns(Warning):
        GroupByPublisher(1.0, schema(3), by=["sex"], random_state=0).fit(
            panel(), accountant=acct, allow_seeded=True
        )
    spent = acct.spent
    entries = len(acct.history())
    other = Schema.from_dict(
        {"columns": COLUMNS, "privacy_unit": {"column": "household", "max_rows": 3}}
    )
    rows = Schema.from_dict({"columns": COLUMNS})
    for s, df in ((other, panel().rename(columns={"pid": "household"})), (rows, panel())):
        with pytest.raises(ParameterError) as info, pytest.warns(Warning):
            GroupByPublisher(1.0, s, by=["sex"], random_state=0).fit(
                df, accountant=acct, allow_seeded=True
            )
        assert "differs from the unit this ledger's spends protect" in str(info.value)
        assert "\n" not in str(info.value)
    assert acct.spent == spent and len(acct.history()) == entries


# -- schema draft -------------------------------------------------------------------------


def test_draft_proposes_a_repeating_identifier_as_the_unit() -> None:
    from ppdp.data import draft_schema

    df = panel(300, seed=3).rename(columns={"pid": "idcode"})
    with pytest.warns(Warning) as caught:
        s = draft_schema(df)
    assert s.privacy_unit is not None and s.privacy_unit.column == "idcode"
    assert "idcode" not in s.column_names  # never a feature
    assert any("proposes privacy_unit" in str(w.message) for w in caught)
    text = s.to_yaml()
    assert text.split("privacy_unit:")[0].rstrip().splitlines()[-1].startswith("# ")
    assert "# PROPOSED" in text and Schema.from_dict(s.to_dict()) == s
    sizes = df.groupby("idcode").size()
    assert s.privacy_unit.max_rows == int(np.ceil(np.quantile(sizes, 0.9)))


def test_draft_proposes_no_unit_for_codes_or_unique_ids() -> None:
    from ppdp.data import draft_schema

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "id": np.arange(200),
            "ward_id": rng.integers(0, 3, 200),
            "education-num": rng.integers(1, 17, 200),  # Adult's: 16 values, a category
            "age": rng.random(200),
        }
    )
    with pytest.warns(Warning):
        s = draft_schema(df)
    assert s.privacy_unit is None


# -- the command line ---------------------------------------------------------------------


def test_cli_groupby_reads_the_unit_column_and_never_writes_it(tmp_path, capsys) -> None:
    import json

    from ppdp.cli import main

    panel().to_csv(tmp_path / "t.csv", index=False)
    schema(3).to_file(tmp_path / "s.json")
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "t", "--epsilon", "3"]) == 0
    argv = ["publish", "groupby", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "--by", "ward", "--means", "age", "--ledger", str(ledger)]
    out = tmp_path / "out.csv"
    assert main([*argv, "-o", str(out), "--max-groups", "2", "--max-rows-per-group", "1"]) == 0
    table = pd.read_csv(out)
    assert list(table.columns)[:2] == ["ward", "count"] and "mean_age" in table.columns
    assert "pid" not in table.columns  # the unit's id is read, never written
    said = capsys.readouterr().err
    assert "(custodian only, not released)" in said and "% dropped" in said
    assert "n is private under a privacy unit" in said
    side = json.loads((tmp_path / "out.csv.guarantee.json").read_text())
    assert side["guarantee"]["details"]["privacy_unit"]["max_groups"] == 2
    assert "dropped" not in json.dumps(side)
    assert side["guarantee"]["details"]["count_sensitivity"] == 4  # 2 x min(3, 2 x 1)
    capsys.readouterr()
    assert main(["budget", "show", str(ledger)]) == 0
    assert "unit:      persons of column 'pid'" in capsys.readouterr().out
    bad = main([*argv, "-o", str(tmp_path / "b.csv"), "--max-groups", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert bad != 0 and "--max-groups (0) must be an integer >= 1" in err[-1]
    assert not (tmp_path / "b.csv").exists()


# -- TableSynthesizer per person ----------------------------------------------------------


def test_synth_plan_per_person_is_the_row_plan_at_rho_over_k_squared() -> None:
    from ppdp.accounting.events import Exponential, Gaussian

    row = TableSynthesizer(
        1.0, Schema.from_dict({"columns": COLUMNS}), method="tree", check_pairs=1
    )
    per = TableSynthesizer(1.0, schema(4), method="tree", check_pairs=1)
    p1, p4 = row.plan(), per.plan()
    assert p4.rho == p1.rho and p4.contribution == 4 and not p4.n_public
    for name in ("sigma_first", "sigma_second"):
        assert math.isclose(getattr(p4, name), 4 * getattr(p1, name), rel_tol=1e-9)
    assert math.isclose(p4.epsilon_select, p1.epsilon_select / 4, rel_tol=1e-9)
    assert p1.rho * (1 - 1e-9) <= p4.spent_rho() <= p4.rho
    (e1,), (e4,) = row.privacy_events(), per.privacy_events()
    assert e4.rho == e1.rho
    # Each draw costs what the row plan's does: sensitivity and σ both k times, selection ε
    # the same (k times the ε of a row plan at ρ/k²).
    assert len(e1.events) == len(e4.events) > 3
    for a, b in zip(e1.events, e4.events, strict=True):
        assert type(a) is type(b)
        if isinstance(a, Gaussian):
            assert math.isclose(b.l2_sensitivity, 4 * a.l2_sensitivity, rel_tol=1e-6)
            assert math.isclose(b.sigma, 4 * a.sigma, rel_tol=1e-6)
        else:
            assert isinstance(b, Exponential)
            assert math.isclose(b.epsilon, a.epsilon, rel_tol=1e-6)


def test_synth_fits_per_person_and_says_so(tmp_path) -> None:
    acct = _acct(tmp_path)
    with pytest.warns(Warning):
        synth = TableSynthesizer(1.0, schema(4), random_state=0)
        synth.fit(panel(), accountant=acct, allow_seeded=True)
    assert "per person (pid, ≤ 4 rows each)" in synth.guarantee.summary()
    text = str(synth.guarantee)
    assert "4 × √2 (per person)" in text and "n private" in text
    details = acct.history()[-1].details
    assert details["privacy_unit"] == {"column": "pid", "max_rows": 4} and "n" not in details
    out = synth.sample(50, random_state=1)
    assert "pid" not in out.columns and len(out) == 50


@pytest.mark.parametrize("binning", ["equal-width", "private-quantiles"])
def test_synth_on_dask_measures_what_it_measures_in_memory(binning) -> None:
    dd = pytest.importorskip("dask.dataframe")
    df = panel(300, seed=8)
    kw = {"method": "tree", "binning": binning, "check_pairs": 1}
    with pytest.warns(Warning):
        mem = TableSynthesizer(1.0, schema(2), random_state=5, **kw).fit(df)
    with pytest.warns(Warning):
        dist = TableSynthesizer(1.0, schema(2), random_state=5, **kw)
        dist.fit(dd.from_pandas(df, npartitions=4), scheduler="sync")
    sa, sb = mem.release_.statistics, dist.release_.statistics
    assert sa.keys() == sb.keys() and len(sa) > 0
    for key in sa:
        np.testing.assert_allclose(sb[key], sa[key], rtol=1e-9, atol=0, err_msg=key)
    assert mem.release_.guarantee == dist.release_.guarantee


def test_dask_refuses_missing_ids_and_a_missing_unit_column_before_any_spend(tmp_path) -> None:
    dd = pytest.importorskip("dask.dataframe")
    acct = _acct(tmp_path)
    df = panel()
    holes = df.assign(pid=df["pid"].astype("float64").where(df.index != 5))
    cases = [
        (holes, "has 1 missing id(s)"),
        (df.drop(columns="pid"), "missing column(s) 'pid' declared in the schema"),
    ]
    for data, words in cases:
        with pytest.raises(DataValidationError) as info, pytest.warns(Warning):
            GroupByPublisher(1.0, schema(3), by=["sex"], random_state=0).fit(
                dd.from_pandas(data, npartitions=3),
                accountant=acct,
                allow_seeded=True,
                scheduler="sync",
            )
        assert words in str(info.value) and "\n" not in str(info.value)
    assert acct.spent == PrivacyBudget(0.0) and acct.history() == []


def test_schema_check_shows_rows_per_person_and_what_max_rows_drops(tmp_path) -> None:
    from ppdp.data.schema_files import check_table

    df = panel()
    df.to_csv(tmp_path / "t.csv", index=False)
    result = check_table(schema(3), tmp_path / "t.csv")
    text = "\n".join(result.all_lines())
    sizes = df.groupby("pid").size()
    dropped = int((sizes - 3).clip(lower=0).sum())
    assert f"{sizes.size:,} persons" in text and f"max_rows 3 drops {dropped:,}" in text
    df.assign(pid=df["pid"].where(df.index != 0)).to_csv(tmp_path / "h.csv", index=False)
    holes = check_table(schema(3), tmp_path / "h.csv")
    assert any("has 1 missing id(s)" in r for r in holes.refusals)


def test_a_parquet_dataset_gives_the_in_memory_release(tmp_path) -> None:
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    df = panel(300, seed=12)
    folder = tmp_path / "in"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(df)), 3)):  # persons span files
        df.iloc[part].to_parquet(folder / f"part-{i}.parquet", index=False)
    kw = {"by": ["ward"], "means": ["age"], "max_rows_per_group": 1}
    with pytest.warns(Warning):
        mem = GroupByPublisher(1.0, schema(3), random_state=4, **kw).fit(df)
    with pytest.warns(Warning):
        dist = GroupByPublisher(1.0, schema(3), random_state=4, **kw)
        dist.fit(folder, scheduler="sync")
    pd.testing.assert_frame_equal(dist.release_.data, mem.release_.data)
