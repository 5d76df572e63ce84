"""Synthetic persons: TableSynthesizer on a schema with a privacy unit and per_person columns.

The schema: the unit ``pid`` (at most K rows per person), per-person columns ``sex`` and
``birth``, row-level columns ``w`` (shifted by sex within a person) and ``year``.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp import noise
from ppdp.accounting import Accountant
from ppdp.accounting.events import zcdp_rho_of
from ppdp.budget import PrivacyBudget
from ppdp.data import CategoricalColumn, NumericColumn, PrivacyUnit, Schema
from ppdp.exceptions import ParameterError, SchemaError
from ppdp.mechanisms.exponential import ExponentialMechanism
from ppdp.publish import TableSynthesizer, synth_persons
from ppdp.publish import table_synth_model as model

K = 4
COLUMNS = [
    {"name": "sex", "type": "categorical", "categories": ["F", "M"], "per_person": True},
    {"name": "birth", "type": "numeric", "lower": 40, "upper": 59, "integer": True,
     "per_person": True},
    {"name": "w", "type": "numeric", "lower": 0, "upper": 1},
    {"name": "year", "type": "numeric", "lower": 0, "upper": 9, "integer": True},
]  # fmt: skip


def schema(per_person: bool = True, max_rows: int = K) -> Schema:
    cols = [{k: v for k, v in c.items() if per_person or k != "per_person"} for c in COLUMNS]
    return Schema.from_dict(
        {"columns": cols, "privacy_unit": {"column": "pid", "max_rows": max_rows}}
    )


def panel(persons: int = 600, seed: int = 0) -> pd.DataFrame:
    """Persons with 1 to 6 rows; a man's w near 0.3, a woman's near 0.7."""
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, persons)
    birth = rng.integers(40, 60, persons)
    count = rng.integers(1, 7, persons)
    owner = np.repeat(np.arange(persons), count)
    return pd.DataFrame(
        {
            "pid": np.array([f"id{p}" for p in range(persons)])[owner],
            "sex": np.where(sex == 1, "F", "M")[owner],
            "birth": birth[owner],
            "w": np.clip(0.3 + 0.4 * sex[owner] + rng.normal(0, 0.08, owner.size), 0, 1),
            "year": rng.integers(0, 10, owner.size),
        }
    )


def fit(synth: TableSynthesizer, df: pd.DataFrame, **kw) -> TableSynthesizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded; low-utility warnings of a small table
        return synth.fit(df, **kw)


def acct() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))


# -- the output ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["tree", "pairs", "chow-liu"])
def test_persons_are_constant_have_synthetic_ids_and_at_most_max_rows(method) -> None:
    df = panel()
    synth = fit(TableSynthesizer(3.0, schema(), method=method, random_state=1), df)
    out = synth.release_.data
    assert list(out.columns) == ["pid", "sex", "birth", "w", "year"]
    per = out.groupby("pid", sort=False)
    assert (per[["sex", "birth"]].nunique() == 1).all().all()  # exact: one value each
    sizes = per.size()
    assert sizes.min() >= 1 and sizes.max() <= K
    ids = out["pid"].unique()
    assert all(re.fullmatch(r"P\d{6}", i) for i in ids)
    assert not set(ids) & set(df["pid"])
    assert ids[0] == "P000001" and len(ids) == df["pid"].nunique()  # n persons public
    # A person's rows are drawn given the person's columns: w follows sex.
    means = out.groupby("sex")["w"].mean()
    assert means["F"] - means["M"] > 0.2


def test_the_rows_per_person_histogram_is_kept() -> None:
    df = panel(3000)
    synth = fit(TableSynthesizer(2.0, schema(), random_state=2), df)
    true = np.minimum(df.groupby("pid").size(), K).value_counts(normalize=True).sort_index()
    got = synth.release_.data.groupby("pid").size().value_counts(normalize=True).sort_index()
    assert 0.5 * np.abs(got.reindex(true.index, fill_value=0) - true).sum() < 0.05


def test_sample_draws_n_persons_and_is_free() -> None:
    synth = fit(TableSynthesizer(2.0, schema(), random_state=3), panel())
    out = synth.sample(25, random_state=4)
    assert out["pid"].nunique() == 25 and out["pid"].iloc[0] == "P000001"
    assert (out.groupby("pid")[["sex", "birth"]].nunique() == 1).all().all()
    with pytest.raises(ParameterError, match="sample_to_parquet"):
        synth.sample_to_parquet(10, "never-written")


def test_a_unit_without_per_person_still_releases_rows() -> None:
    synth = fit(TableSynthesizer(2.0, schema(per_person=False), random_state=3), panel())
    assert "pid" not in synth.release_.data.columns
    assert synth._params().persons is None


# -- privacy: every draw intercepted --------------------------------------------------------


def _intercept(monkeypatch, utility: float = 2.0) -> dict[str, list]:
    """Every noise draw, marked with the phase it belongs to: ``rows`` (the row model, planned
    per row at ρ/k²) until the person table is built, then ``persons`` (one row per person)."""
    seen: dict[str, list] = {"gauss": [], "check": [], "eps": []}
    phase = ["rows"]
    real_gaussian, real_select = noise.gaussian, ExponentialMechanism.randomise
    real_rows = synth_persons.person_rows

    def person_rows(*args, **kw):
        phase[0] = "persons"
        return real_rows(*args, **kw)

    def gaussian(sigma, size=None, **kw):
        key = "check" if kw.get("granularity") is not None else "gauss"
        seen[key].append((phase[0], float(sigma), float(kw.get("granularity") or 0.0)))
        return real_gaussian(sigma, size, **kw)

    def randomise(self, utilities, random_state=None):
        assert self.sensitivity == utility  # one row's: 2 under replace-one, 1 add/remove
        seen["eps"].append((phase[0], float(self.epsilon)))
        return real_select(self, utilities, random_state=random_state)

    monkeypatch.setattr(synth_persons, "person_rows", person_rows)
    monkeypatch.setattr(noise, "gaussian", gaussian)
    monkeypatch.setattr(ExponentialMechanism, "randomise", randomise)
    return seen


def _per_person_rho(seen: dict[str, list], k: int, d: float = 2.0) -> tuple[float, float]:
    """(ρ of the row phase per person, ρ of the person phase): a row-phase draw costs k²
    times its row cost (replace-one: tables Δ = √2, check residuals Δ = 2 + grid, choices
    ε²/8; under add/remove ``d = 1``: tables Δ = 1, residuals 1 + grid); a person-phase draw
    its row cost (each person is one row of the person table)."""
    cost = {"rows": 0.0, "persons": 0.0}
    for phase, sigma, _ in seen["gauss"]:
        cost[phase] += d / (2.0 * sigma**2)
    for phase, sigma, grid in seen["check"]:
        cost[phase] += (d + grid) ** 2 / (2.0 * sigma**2)
    for phase, eps in seen["eps"]:
        cost[phase] += eps**2 / 8.0
    return k * k * cost["rows"], cost["persons"]


@pytest.mark.parametrize(
    ("method", "relation", "levels"),
    [("tree", "replace-one", None), ("pairs", "replace-one", None), ("tree", "add/remove", None),
     ("chow-liu", "add/remove", None), ("tree", "replace-one", ("w", "year")),
     ("chow-liu", "add/remove", "w"), ("pairs", "replace-one", "w")],
)  # fmt: skip
def test_every_draw_composes_to_the_stated_rho_per_person(
    monkeypatch, method, relation, levels
) -> None:
    """With ``person_levels`` too: the hidden levels are per-person columns of both models,
    so the row model's draws are still k rows per person and the person model's one row."""
    eps, delta = 0.8, 1e-6
    synth = TableSynthesizer(
        eps, schema(), delta=delta, method=method, n_bins=5, relation=relation,
        person_levels=levels, random_state=5,
    )  # fmt: skip
    d = 2.0 if relation == "replace-one" else 1.0
    seen = _intercept(monkeypatch, utility=d)
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=relation)
    fit(synth, panel(), accountant=a, allow_seeded=True)
    rows, people = _per_person_rho(seen, K, d)
    rho = synth.release_.guarantee.details["rho"]
    assert rows + people <= rho * (1 + 1e-12) and rows + people >= rho * (1 - 1e-9)
    share = synth_persons.PERSON_SHARE
    assert people == pytest.approx(share * rho, rel=1e-9)
    assert rows == pytest.approx((1 - share) * rho, rel=1e-9)
    assert model.cdp_delta(rows + people, eps) <= delta
    # The histogram is one of the person-phase draws: one count per person, Δ = √2.
    sigma_h = synth._params().persons.sigma_histogram
    assert ("persons", sigma_h, 0.0) in seen["gauss"]
    # The ledger: one charge of (ε, δ), whose ZCDP event lists draws of the same ρ.
    assert a.spent == PrivacyBudget(eps, delta) and len(synth.release_.ledger_indices) == 1
    (event,) = synth.privacy_events()
    assert sum(zcdp_rho_of(e) for e in event.events) == pytest.approx(rows + people, rel=1e-9)
    assert event.rho == rho
    # Sampling draws no noise.
    n = len(seen["gauss"])
    synth.sample(20, random_state=1)
    assert len(seen["gauss"]) == n


def test_the_guarantee_and_ledger_say_persons() -> None:
    a = acct()
    synth = fit(TableSynthesizer(2.0, schema(), random_state=0), panel(), accountant=a,
                allow_seeded=True)  # fmt: skip
    text = str(synth.guarantee)
    assert "synthetic persons" in text and "per person (pid, ≤ 4 rows each)" in text
    details = synth.guarantee.details["persons"]
    assert details["per_person"] == ["sex", "birth"] and details["persons"] == 600
    (entry,) = a.history()
    assert entry.details["persons"]["rho_share"] == synth_persons.PERSON_SHARE
    assert "noisy-rows-per-person:rows_per_person" in synth.release_.statistics


# -- bad input: one line, nothing spent -------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.pop("privacy_unit"), r"per_person \(sex, birth\) needs a privacy_unit"),
        (
            lambda d: d["columns"].append(
                {"name": "pid", "type": "numeric", "lower": 0, "upper": 9, "per_person": True}
            ),
            "per_person names 'pid', the privacy unit's identifier column",
        ),
        (
            lambda d: d["columns"][0].update(per_person="yes"),
            r"column 'sex': per_person \('yes'\) must be true or false",
        ),
    ],
)
def test_bad_per_person_in_a_file_is_one_line(change, match) -> None:
    d = schema().to_dict()
    change(d)
    with pytest.raises(SchemaError, match=match) as info:
        Schema.from_dict(d)
    assert "\n" not in str(info.value)


def test_bad_per_person_in_python_is_one_line() -> None:
    cols = (CategoricalColumn("sex", ("F", "M")), NumericColumn("w", 0, 1))
    unit = PrivacyUnit("pid", 3)
    bad = [
        ({"per_person": ("sex",)}, "needs a privacy_unit"),
        ({"per_person": ("pid",), "privacy_unit": unit}, "identifier column"),
        ({"per_person": ("age",), "privacy_unit": unit}, "'age', which is not a declared"),
        ({"per_person": ("sex", "sex"), "privacy_unit": unit}, "'sex' twice"),
        ({"per_person": "sex", "privacy_unit": unit}, "must be a list of column names"),
    ]
    for kw, match in bad:
        with pytest.raises(SchemaError, match=match):
            Schema(cols, **kw)
    from ppdp.data import LabelSpec

    with pytest.raises(SchemaError, match="the label; only feature columns"):
        Schema(cols, label=LabelSpec("y", (0, 1)), per_person=("y",), privacy_unit=unit)


def test_per_person_round_trips_through_python_json_and_yaml(tmp_path) -> None:
    s = schema()
    assert s.per_person == ("sex", "birth")
    built = Schema(
        (
            CategoricalColumn("sex", ("F", "M")),
            NumericColumn("birth", 40, 59, integer=True),
            NumericColumn("w", 0, 1),
            NumericColumn("year", 0, 9, integer=True),
        ),
        privacy_unit=PrivacyUnit("pid", K),
        per_person=("birth", "sex"),  # kept in column order
    )
    assert built == s
    for suffix in (".json", ".yaml"):
        path = s.to_file(tmp_path / f"s{suffix}")
        assert Schema.from_file(path) == s
    assert "per_person: true" in s.to_yaml()
    assert s.without_label().per_person == s.per_person


def test_unsupported_options_are_refused_before_anything_is_spent(tmp_path) -> None:
    a = acct()
    with pytest.raises(ParameterError, match=r"binning \('private-quantiles'\) cannot go"):
        TableSynthesizer(1.0, schema(), binning="private-quantiles").fit(panel(), accountant=a)
    pytest.importorskip("dask.dataframe")
    import dask.dataframe as dd

    frame = dd.from_pandas(panel(), npartitions=2)
    with pytest.raises(ParameterError, match="synthesises persons from a pandas DataFrame"):
        TableSynthesizer(1.0, schema()).fit(frame, output=tmp_path / "out", accountant=a)
    assert a.spent == PrivacyBudget(0.0, 0.0) and not (tmp_path / "out").exists()


# -- the conditional sampler -----------------------------------------------------------------


def test_rows_are_drawn_from_the_model_given_the_persons_columns() -> None:
    """The tree sampler given evidence matches the model's exact conditional (χ², from a
    tree model built by hand: x0 → x1 → x2, the evidence on x2)."""
    from scipy.stats import chisquare

    from ppdp.random import SeededRandom

    rng = np.random.default_rng(0)
    sizes = (3, 2, 4)
    pairs = {0: rng.random((1, 3)) + 0.1}
    triples = {1: rng.random((1, 3, 2)) + 0.1, 2: rng.random((1, 2, 4)) + 0.1}
    tree = model.Model(100, sizes, None, np.array([100.0]), pairs, (0, 1, 2), {1: 0, 2: 1},
                       triples)  # fmt: skip
    p0 = pairs[0][0] / pairs[0][0].sum()
    p1 = triples[1][0] / triples[1][0].sum(1, keepdims=True)
    p2 = triples[2][0] / triples[2][0].sum(1, keepdims=True)
    joint = p0[:, None, None] * p1[:, :, None] * p2[None, :, :]
    given = joint[:, :, 2] / joint[:, :, 2].sum()  # x2 = 2
    n = 60_000
    out = synth_persons.sample_given(
        tree, (2,), np.array([[2]]), np.zeros(n, dtype=np.int64), SeededRandom(1)
    )
    assert (out[:, 2] == 2).all()
    counts = np.bincount(out[:, 0] * 2 + out[:, 1], minlength=6)
    # False-positive rate 1e-6 (one χ² test, 5 degrees of freedom).
    assert chisquare(counts, given.ravel() * n).pvalue > 1e-6
    # The broken sampler (the evidence ignored, its column overwritten as the persons'
    # columns are) fails the same test.
    free = synth_persons.sample_given(
        tree, (), np.zeros((1, 0), dtype=np.int64), np.zeros(n, dtype=np.int64), SeededRandom(1)
    )
    broken = np.bincount(free[:, 0] * 2 + free[:, 1], minlength=6)
    assert chisquare(broken, given.ravel() * n).pvalue < 1e-6


# -- schema draft (custodian side: a proposal read from the data) ---------------------------


def test_draft_proposes_per_person_for_columns_constant_within_every_person(tmp_path) -> None:
    from ppdp.data import draft_schema

    df = panel(200).rename(columns={"pid": "patient_id"})
    df.loc[df.index[1], "birth"] = 40 if df["birth"].iloc[1] != 40 else 41  # varies once
    with pytest.warns(UserWarning) as record:
        drafted = draft_schema(df)
    assert drafted.privacy_unit is not None and drafted.privacy_unit.column == "patient_id"
    assert drafted.per_person == ("sex",)  # not birth (it changes within one person), not w
    assert any("per_person: true" in str(w.message) for w in record)
    back = Schema.from_file(drafted.to_file(tmp_path / "draft.yaml"))
    assert back.per_person == ("sex",)


def test_the_person_table_is_a_per_person_map_whatever_the_row_order() -> None:
    """A person's entry (representative values, rows kept) depends on that person's rows as
    a multiset: shuffling the rows, or removing another person, changes no other entry."""
    synth = TableSynthesizer(1.0, schema())
    params = synth._params()
    df = panel(80, seed=5)
    df.loc[df.index[:3], "birth"] = [41, 42, 41]  # a person whose birth varies (a tie)

    def entries(frame: pd.DataFrame) -> dict[str, tuple]:
        X, y = synth.schema.encode(frame)
        codes = params.plan.bins.codes(synth.schema, X, y)
        values = synth_persons.person_values(synth.schema, X)
        person = synth_persons.person_index(frame, synth.schema)
        rep, rows = synth_persons.person_rows(person, codes, params.persons.attributes, values)
        ids = frame["pid"].to_numpy()[rep]
        return {i: (*values[r].tolist(), int(n)) for i, r, n in zip(ids, rep, rows, strict=True)}

    base = entries(df)
    assert entries(df.sample(frac=1.0, random_state=1)) == base
    other = df["pid"].iloc[-1]
    less = entries(df[df["pid"] != other])
    assert less == {i: e for i, e in base.items() if i != other}


def test_the_ui_schema_form_keeps_per_person_and_drops_it_with_the_unit() -> None:
    from ppdp.ui._schema_form import schema_from_form

    raw = schema().to_dict()
    form = {
        "c0-type": "categorical", "c0-categories": "F, M",
        "c1-type": "numeric", "c1-lower": "40", "c1-upper": "59", "c1-integer": "on",
        "c2-type": "numeric", "c2-lower": "0", "c2-upper": "1",
        "c3-type": "numeric", "c3-lower": "0", "c3-upper": "9", "c3-integer": "on",
    }  # fmt: skip
    kept, _ = schema_from_form(raw, form)
    assert Schema.from_dict(kept).per_person == ("sex", "birth")
    dropped, _ = schema_from_form(raw, {**form, "unit-column": ""})
    back = Schema.from_dict(dropped)
    assert back.privacy_unit is None and back.per_person == ()


@pytest.mark.parametrize("method", ["tree", "chow-liu", "pairs"])
def test_persons_with_a_label(method) -> None:
    df = panel()
    df["y"] = np.where(df["w"] > 0.5, "hi", "lo")
    labelled = Schema.from_dict(
        {**schema().to_dict(), "label": {"name": "y", "classes": ["hi", "lo"]}}
    )
    out = fit(TableSynthesizer(2.0, labelled, method=method, random_state=0), df).release_.data
    assert list(out.columns) == ["pid", "sex", "birth", "w", "year", "y"]
    assert (out.groupby("pid")[["sex", "birth"]].nunique() == 1).all().all()
    assert set(out["y"]) <= {"hi", "lo"} and out.groupby("pid").size().max() <= K


# -- person levels: a person's persistent level of a varying column ---------------------------


def leveled_panel(persons: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Persons whose w sits near their own level (uniform in [0.15, 0.85], spread 0.05 within
    a person): a strong person effect that sex and birth do not carry."""
    rng = np.random.default_rng(seed)
    count = rng.integers(1, 7, persons)
    owner = np.repeat(np.arange(persons), count)
    level = rng.uniform(0.15, 0.85, persons)
    return pd.DataFrame(
        {
            "pid": np.array([f"id{p}" for p in range(persons)])[owner],
            "sex": np.where(rng.integers(0, 2, persons) == 1, "F", "M")[owner],
            "birth": rng.integers(40, 60, persons)[owner],
            "w": np.clip(level[owner] + rng.normal(0, 0.05, owner.size), 0, 1),
            "year": rng.integers(0, 10, owner.size),
        }
    )


def within_share(df: pd.DataFrame, column: str = "w") -> float:
    """Share of the column's variance within persons (persons with 2+ rows)."""
    v = df.groupby("pid")[column]
    many = v.transform("size") > 1
    centred = df[column] - v.transform("mean")
    return float((centred[many] ** 2).mean() / df.loc[many, column].var())


@pytest.mark.parametrize("method", ["tree", "chow-liu", "pairs"])
def test_person_levels_keep_a_persons_persistent_level(method) -> None:
    """w's within-person share of variance is 0.04 in the data; rows drawn independently
    given sex and birth (the behaviour without person_levels) put it near 0.6; with w's
    level kept it falls below half of that. Seeded."""
    df = leveled_panel()
    real = within_share(df)
    plain = fit(TableSynthesizer(2.0, schema(), method=method, random_state=1), df)
    kept = fit(
        TableSynthesizer(2.0, schema(), method=method, person_levels="w", random_state=1), df
    )
    out = kept.release_.data
    assert list(out.columns) == ["pid", "sex", "birth", "w", "year"]  # the level is hidden
    assert (out.groupby("pid")[["sex", "birth"]].nunique() == 1).all().all()
    independent = within_share(plain.release_.data)
    assert real < 0.1 and independent > 0.45
    assert within_share(out) < 0.5 * independent
    assert kept._params().fit_schema.per_person == ("sex", "birth", "w_level")
    details = kept.guarantee.details["persons"]
    assert details["person_levels"] == {"w": "w_level"}
    assert details["deviation"] == synth_persons.DEVIATION
    assert "each person's level of w" in str(kept.guarantee)


def test_a_level_is_a_per_person_map_whatever_the_row_order() -> None:
    """A row's hidden level is its person's median over the person's rows (the same on each
    of them, unchanged by shuffling the rows or removing another person), its column the
    row's deviation from it; ``from_levels`` puts the value back (within the clamp)."""
    s = schema()
    d = synth_persons.DEVIATION
    df = leveled_panel(60, seed=3)

    def levels(frame: pd.DataFrame) -> dict[str, tuple[float, ...]]:
        X, _ = s.encode(frame)
        person = synth_persons.person_index(frame, s)
        out = synth_persons.with_levels(X, s, ("w",), person)
        assert out.shape == (X.shape[0], X.shape[1] + 1)
        level, at = out[:, -1], s.blocks["w"].start
        assert (pd.Series(level).groupby(person).nunique() == 1).all()
        back = synth_persons.from_levels(out, s, ("w",), level[:, None])
        inside = np.abs(X[:, at] - level) <= d
        np.testing.assert_allclose(back[inside], X[inside], atol=1e-12)
        rows = zip(frame["pid"], level, out[:, at], strict=True)
        return {i: (m, v) for i, m, v in sorted(rows, key=lambda r: (r[0], r[2]))}

    base = levels(df)
    assert levels(df.sample(frac=1.0, random_state=2)) == base
    other = df["pid"].iloc[0]
    assert levels(df[df["pid"] != other]) == {i: v for i, v in base.items() if i != other}
    w = df[df["pid"] == "id1"]["w"]
    assert base["id1"][0] == pytest.approx(w.median())  # w is declared on [0, 1]


@pytest.mark.parametrize(
    ("levels", "per_person", "match"),
    [
        (["sex"], True, "names 'sex', which is not a numeric feature column"),
        (["birth"], True, "names 'birth', which is not a numeric feature column"),
        (["age"], True, "names 'age', which is not a numeric feature column"),
        (["w"], False, "needs a schema with per_person columns"),
        (["w", "w"], True, "names a column twice"),
        (["w", "year", "w2", "w3"], True, "at most 3"),
        (3, True, r"person_levels \(3\) must be None, a column name or a list of names"),
    ],
)
def test_bad_person_levels_are_one_line_and_spend_nothing(levels, per_person, match) -> None:
    a = acct()
    synth = TableSynthesizer(1.0, schema(per_person), person_levels=levels)
    with pytest.raises(ParameterError, match=match) as info:
        synth.fit(panel(), accountant=a)
    assert "\n" not in str(info.value)
    assert a.spent == PrivacyBudget(0.0, 0.0)


def test_person_levels_from_the_command_line(tmp_path) -> None:
    from ppdp.cli import main

    leveled_panel(300).to_csv(tmp_path / "in.csv", index=False)
    schema().to_file(tmp_path / "s.json")
    argv = ["publish", "synth", str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv")]
    argv += ["--schema", str(tmp_path / "s.json"), "--epsilon", "2", "--person-levels", "w"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*argv, "--seed", "1", "--allow-seeded"]) == 0
    out = pd.read_csv(tmp_path / "out.csv")
    assert list(out.columns) == ["pid", "sex", "birth", "w", "year"]
    assert (out.groupby("pid")[["sex", "birth"]].nunique() == 1).all().all()
