"""TableSynthesizer (issue 13): budget, bad input, decoding, utility on planted structure.

Randomised tests take the ``seed`` fixture and pass for any seed 0-99; the thresholds are
set several standard errors away from what a correct fit gives, and each utility test also
runs a deliberately broken variant (the structure thrown away) that must fail the same check.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from ppdp import noise
from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
    SchemaError,
)
from ppdp.mechanisms import ExponentialMechanism
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth_model as model
from ppdp.random import resolve_random_state

N = 3000


def make_schema(label: bool = True, classes: int = 2) -> Schema:
    cols = [
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
        {"name": "score", "type": "numeric", "lower": -1.0, "upper": 1.0},
        {"name": "level", "type": "numeric", "lower": 1, "upper": 5, "integer": True},
        {"name": "colour", "type": "categorical", "categories": ["red", "green", "blue"]},
        {"name": "shape", "type": "categorical", "categories": ["o", "x"]},
    ]
    d: dict = {"columns": cols}
    if label:
        d["label"] = {"name": "cls", "classes": [f"c{k}" for k in range(classes)]}
    return Schema.from_dict(d)


def make_df(n: int = N, *, label: bool = True, classes: int = 2, seed: int = 0) -> pd.DataFrame:
    """Planted structure: cls drives colour and age; shape copies colour; level follows age."""
    rng = np.random.default_rng(seed)
    cls = rng.integers(0, classes, n)
    colour = np.where(rng.random(n) < 0.8, cls % 3, rng.integers(0, 3, n))
    age = np.clip(rng.normal(25 + 20 * cls, 6), 0, 100).round()
    level = np.clip(1 + age // 20, 1, 5)
    shape = np.where(rng.random(n) < 0.9, colour == 0, rng.random(n) < 0.5)
    df = pd.DataFrame(
        {
            "age": age.astype(int),
            "score": rng.uniform(-1, 1, n),
            "level": level.astype(int),
            "colour": np.array(["red", "green", "blue"])[colour],
            "shape": np.where(shape, "o", "x"),
        }
    )
    if label:
        df["cls"] = [f"c{k}" for k in cls]
    return df


def acct(total: float = 10.0, delta: float = 1e-3) -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(total, delta))


def tvd(a: pd.DataFrame, b: pd.DataFrame, cols: tuple[str, ...]) -> float:
    pa = a.groupby(list(cols)).size() / len(a)
    pb = b.groupby(list(cols)).size() / len(b)
    return 0.5 * float(pa.sub(pb, fill_value=0.0).abs().sum())


# -- zCDP conversion -----------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 8.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-6, 1e-3])
def test_rho_converts_back_within_delta_and_beats_the_classic_bound(eps, delta) -> None:
    rho = model.cdp_rho(eps, delta)
    assert model.cdp_delta(rho, eps) <= delta
    assert model.cdp_delta(rho * 1.001, eps) > delta  # the largest such ρ, to 0.1 %
    L = math.log(1 / delta)
    classic = (math.sqrt(L + eps) - math.sqrt(L)) ** 2  # ε = ρ + 2√(ρ ln 1/δ) [BS16]
    assert rho >= classic * (1 - 1e-9)


# -- the budget: every draw intercepted ------------------------------------------------------


def _intercept(monkeypatch, utility_sensitivity: float = 2.0) -> dict[str, list]:
    """Every noise draw of a fit: tables (``sigma``, ``size``), the pair check's scalar
    residuals (``check``: σ and the grid the residual is snapped to) and every exponential-
    mechanism choice (``eps``), whose utility sensitivity must be ``utility_sensitivity``."""
    seen: dict[str, list] = {"sigma": [], "size": [], "eps": [], "check": []}
    real_gaussian = noise.gaussian
    real_select = ExponentialMechanism.randomise

    def gaussian(sigma, size=None, **kw):
        if kw.get("granularity") is not None:  # the pair check's residual, snapped to it
            seen["check"].append((float(sigma), float(kw["granularity"])))
        else:
            seen["sigma"].append(float(sigma))
            seen["size"].append(float(np.prod(size)))  # one table per draw
        return real_gaussian(sigma, size, **kw)

    def randomise(self, utilities, random_state=None):
        assert self.sensitivity == utility_sensitivity
        seen["eps"].append(float(self.epsilon))
        return real_select(self, utilities, random_state=random_state)

    monkeypatch.setattr(noise, "gaussian", gaussian)
    monkeypatch.setattr(ExponentialMechanism, "randomise", randomise)
    return seen


def drawn_rho(seen: dict[str, list], relation: str = "replace-one") -> float:
    """ρ of the intercepted draws: ``Δ²/(2σ²)`` per table (Δ = √2 under replace-one, 1 under
    add/remove), ``(Δ_r + Λ)²/(2σ²)`` per check residual (its L1 sensitivity Δ_r = 2 or 1,
    plus the grid it is snapped to) and ``ε²/8`` per exponential-mechanism choice."""
    table_sq, resid = (2.0, 2.0) if relation == "replace-one" else (1.0, 1.0)
    rho = sum(table_sq / (2.0 * s**2) for s in seen["sigma"])
    rho += sum((resid + lam) ** 2 / (2.0 * s**2) for s, lam in seen["check"])
    return rho + sum(e**2 / 8 for e in seen["eps"])


@pytest.mark.parametrize(
    ("method", "label", "classes"),
    [
        ("tree", True, 2),
        ("tree", False, 2),
        ("chow-liu", True, 3),
        ("pairs", True, 3),
        ("pairs", False, 2),
    ],
)
@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # the pair check's
def test_every_draw_sums_to_the_stated_rho_and_the_charge(
    monkeypatch, method, label, classes
) -> None:
    """Σ 1/σ² over the Gaussian tables (L2 sensitivity √2) + Σ ε²/8 over the selections = ρ,
    and ρ-zCDP converts to the (ε, δ) charged in the ledger."""
    eps, delta = 0.7, 1e-6
    schema = make_schema(label, classes)
    synth = TableSynthesizer(eps, schema, delta=delta, method=method, n_bins=5, random_state=3)
    seen = _intercept(monkeypatch)
    a = acct()
    synth.fit(make_df(500, label=label, classes=classes), accountant=a, allow_seeded=True)
    rho = drawn_rho(seen)
    stated = synth.release_.guarantee.details["rho"]
    assert rho <= stated * (1 + 1e-12)
    assert rho >= stated * (1 - 1e-9)  # nothing planned is left unspent either
    assert model.cdp_delta(rho, eps) <= delta
    assert a.spent == PrivacyBudget(eps, delta) and len(synth.release_.ledger_indices) == 1
    d = len(schema.columns) + (schema.label is not None)
    f = len(schema.columns)
    # the pair check's rounds (check_pairs="auto": 6 without a label, the tree leaving at
    # most 50 pairs off; 3 with one): one choice and one residual each
    k = 3 if label else 6
    # extra_parents="auto" (one per round): the pairs the check names that pass the gate
    # get a pair table each; if fewer do, the pool's rest measures every edge table again
    x = 0 if method == "pairs" else len(synth._model.extra)
    plan = synth.plan()
    assert x <= plan.extra_parents == (0 if method == "pairs" else k) == plan.check_pairs
    again = plan.n_second if x < plan.extra_parents else 0
    x += again
    # decode="sub-bins" (the default): one sub-bin histogram per column binned at equal
    # widths, here age (101 integers) and score; level has 5 integers, one code each
    h = 2
    assert [synth.plan().bins.names[a] for a in synth.plan().decode_columns] == ["age", "score"]
    if method == "pairs":  # every pair measured: no check
        assert len(seen["sigma"]) == d * (d - 1) // 2 + h and not seen["eps"]
        assert not seen["check"]
    elif method == "chow-liu":  # the label is one more node of the tree
        assert len(seen["sigma"]) == d + (d - 1) + h + x and len(seen["eps"]) == d - 1 + k
    else:
        assert len(seen["sigma"]) == f + (f - 1) + h + x and len(seen["eps"]) == f - 1 + k
    assert len(seen["check"]) == (0 if method == "pairs" else k)
    # The sampling that follows uses uniforms only: no further noise was drawn.
    n_draws = len(seen["sigma"])
    synth.sample(50, random_state=1)
    assert len(seen["sigma"]) == n_draws


@pytest.mark.parametrize(
    ("method", "label", "classes"),
    [("tree", True, 2), ("tree", False, 2), ("chow-liu", True, 3), ("pairs", True, 2)],
)
@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")
def test_add_remove_draws_sum_to_rho_at_sensitivity_one_and_never_read_n(
    monkeypatch, method, label, classes
) -> None:
    """Under add/remove each table has L2 sensitivity 1 (Σ 1/(2σ²)), each selection utility
    sensitivity 1, and ``n`` is private: the exact row count is never read (the counts'
    ``n`` raises), the model stands for the noisy estimate, and the ledger omits ``n``."""
    eps, delta = 0.7, 1e-6
    schema = make_schema(label, classes)
    kw = {"delta": delta, "method": method, "n_bins": 5, "random_state": 3}
    synth = TableSynthesizer(eps, schema, relation="add/remove", **kw)
    seen = _intercept(monkeypatch, utility_sensitivity=1.0)
    real_of = model.MarginalCounts.of.__func__

    class PrivateN(model.MarginalCounts):
        def __getattribute__(self, name):
            if name == "n":  # the exact size: private under add/remove
                raise AssertionError("the exact n was read")
            return super().__getattribute__(name)

    def of(cls, codes, sizes, cliques):
        counts = real_of(model.MarginalCounts, codes, sizes, cliques)
        return PrivateN(counts.n, counts.sizes, counts.cliques, counts.tables)

    monkeypatch.setattr(model.MarginalCounts, "of", classmethod(of))
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation="add/remove")
    df = make_df(500, label=label, classes=classes)
    synth.fit(df, accountant=a, allow_seeded=True)
    rho = drawn_rho(seen, "add/remove")
    stated = synth.release_.guarantee.details["rho"]
    assert stated * (1 - 1e-9) <= rho <= stated * (1 + 1e-12)
    assert model.cdp_delta(rho, eps) <= delta and a.spent == PrivacyBudget(eps, delta)
    # the same ρ buys σ smaller by √2 than under replace-one
    plan = synth.plan()
    replace = TableSynthesizer(eps, schema, **kw).plan()
    assert plan.sigma_first == pytest.approx(replace.sigma_first / math.sqrt(2.0), rel=1e-12)
    assert synth.release_.guarantee.relation.value == "add/remove"
    assert "n" not in a.history()[0].details and synth.release_.guarantee.details["relation"] == (
        "add/remove"
    )
    # the rows released are the noisy estimate of n from the first-round tables
    names = plan.bins.names
    first = [
        model.Measurement(
            c, synth.release_.statistics["noisy:" + "|".join(names[x] for x in c)],
            plan.sigma_first,
        )
        for c in plan.first
    ]  # fmt: skip
    n_hat = max(1, round(model.noisy_total(first)))
    assert len(synth.release_.data) == n_hat == synth._model.n != len(df)
    assert len(synth.sample()) == n_hat


def test_a_relation_other_than_the_ledgers_is_refused_before_the_data_are_read(
    monkeypatch,
) -> None:
    def encode(*args, **kwargs):
        raise AssertionError("the data were read")

    monkeypatch.setattr(TableSynthesizer, "_encode", encode)
    for ledger, relation in (("add/remove", "replace-one"), ("replace-one", "add/remove")):
        a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=ledger)
        synth = TableSynthesizer(1.0, make_schema(), relation=relation)
        with pytest.raises(ParameterError, match="differs from this ledger's relation"):
            synth.fit(make_df(100), accountant=a)
        assert a.spent.is_zero


def test_cli_add_remove_release_states_its_relation(tmp_path, capsys) -> None:
    make_df(400).to_csv(tmp_path / "d.csv", index=False)
    make_schema().to_file(tmp_path / "s.json")
    ledger = str(tmp_path / "b.db")
    init = ["budget", "init", ledger, "--dataset-id", "d", "--epsilon", "3", "--delta", "1e-6"]
    assert main([*init, "--relation", "add/remove"]) == 0
    out = tmp_path / "out.csv"
    args = ["publish", "synth", "--schema", str(tmp_path / "s.json"), "--epsilon", "1"]
    args += ["--ledger", ledger, str(tmp_path / "d.csv"), "-o", str(out)]
    capsys.readouterr()
    assert main(args) == 2 and not out.exists()  # the ledger's relation is not the default
    err = capsys.readouterr().err
    assert "--relation" in err and len(err.strip().splitlines()) == 1
    assert main([*args, "--relation", "add/remove"]) == 0
    assert "400 rows (custodian only: n is private under add/remove)" in capsys.readouterr().err
    side = json.loads(out.with_name("out.csv.guarantee.json").read_text())
    assert side["guarantee"]["relation"] == "add/remove"
    assert 300 < len(pd.read_csv(out)) < 500


def test_budget_refused_before_the_data_are_read() -> None:
    a = acct(0.5)
    with pytest.raises(BudgetExceededError):
        TableSynthesizer(1.0, make_schema()).fit(make_df(100), accountant=a)
    assert a.spent.is_zero


# -- bad input: one clear error, nothing spent -------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": 0.0}, ParameterError, r"epsilon \(0.0\)"),
        ({"epsilon": -1.0}, ParameterError, "epsilon"),
        ({"epsilon": 20.0}, ParameterError, "allow_large_epsilon"),
        ({"delta": 0.0}, ParameterError, r"delta \(0.0\) must be in \(0, 1\)"),
        ({"delta": 1.0}, ParameterError, "delta"),
        ({"delta": -1e-9}, ParameterError, "delta"),
        ({"method": "mst"}, ParameterError, "method"),
        ({"n_bins": 1}, ParameterError, "n_bins"),
        ({"n_bins": 2.5}, ParameterTypeError, "n_bins"),
        ({"allow_large_epsilon": 1}, ParameterTypeError, "allow_large_epsilon"),
        ({"relation": "both"}, ParameterError, r"relation \('both'\) must be one of"),
    ],
)
def test_bad_parameters_cost_nothing(kwargs, error, match) -> None:
    params = {"epsilon": 1.0} | kwargs
    eps = params.pop("epsilon")
    a = acct()
    with pytest.raises(error, match=match):
        TableSynthesizer(eps, make_schema(), **params).fit(make_df(100), accountant=a)
    assert a.spent.is_zero


def test_pairs_refuses_a_huge_domain() -> None:
    with pytest.raises(ParameterError, match="method='tree'"):
        TableSynthesizer(1.0, make_schema(), method="pairs", n_bins=200).plan()


def _bad_tables() -> list[tuple[str, pd.DataFrame, str]]:
    df = make_df(100)
    nan = df.copy()
    nan.loc[3, "score"] = np.nan
    undeclared = df.copy()
    undeclared.loc[5, "colour"] = "purple"
    bad_class = df.copy()
    bad_class.loc[7, "cls"] = "c9"
    return [
        ("missing column", df.drop(columns="shape"), "shape"),
        ("NaN", nan, "score"),
        ("undeclared category", undeclared, "colour"),
        ("undeclared class", bad_class, "cls"),
        ("no rows", df.iloc[:0], "0 row"),
        ("one row", df.iloc[:1], "1 row"),
    ]


@pytest.mark.parametrize(("case", "df", "match"), _bad_tables(), ids=lambda v: str(v)[:20])
def test_bad_data_is_one_clear_error_and_costs_nothing(case, df, match) -> None:
    a = acct()
    with pytest.raises((DataValidationError, SchemaError), match=match):
        TableSynthesizer(1.0, make_schema()).fit(df, accountant=a)
    assert a.spent.is_zero and a.history() == []


@pytest.mark.parametrize(("case", "df", "match"), _bad_tables(), ids=lambda v: str(v)[:20])
def test_cli_bad_data_exits_2_in_one_line_writes_nothing(tmp_path, capsys, case, df, match):
    df.to_csv(tmp_path / "in.csv", index=False)
    make_schema().to_file(tmp_path / "s.json")
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "t", "--epsilon", "5"]) == 0
    capsys.readouterr()
    out = tmp_path / "out.csv"
    argv = ["publish", "synth", str(tmp_path / "in.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "--ledger", str(ledger), "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("ppdp: error")]
    assert len(lines) == 1 and "Traceback" not in err
    assert not out.exists() and not out.with_name("out.csv.guarantee.json").exists()
    from ppdp.accounting import budget_report

    assert budget_report(ledger).spends == ()


@pytest.mark.parametrize(
    ("flags", "match"),
    [(["--epsilon", "0"], "epsilon"), (["--epsilon", "1", "--delta", "1"], "delta")],
)
def test_cli_bad_budget_exits_2(tmp_path, capsys, flags, match) -> None:
    make_df(50).to_csv(tmp_path / "in.csv", index=False)
    make_schema().to_file(tmp_path / "s.json")
    out = tmp_path / "out.csv"
    argv = ["publish", "synth", str(tmp_path / "in.csv"), "--schema", str(tmp_path / "s.json")]
    assert main([*argv, *flags, "-o", str(out)]) == 2
    assert match in capsys.readouterr().err and not out.exists()


def test_cli_writes_the_table_and_its_guarantee(tmp_path, capsys) -> None:
    make_df(400).to_csv(tmp_path / "in.csv", index=False)
    make_schema().to_file(tmp_path / "s.json")
    out = tmp_path / "out.csv"
    argv = ["publish", "synth", str(tmp_path / "in.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "--method", "tree", "--bins", "8", "--seed", "2", "-o", str(out)]
    assert main(argv) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == list(make_schema().column_names) and len(table) == 400
    side = json.loads(out.with_name("out.csv.guarantee.json").read_text())
    g = side["guarantee"]
    assert side["method"] == "synth" and g["epsilon"] == 1.0 and g["delta"] == 1e-9
    assert g["details"]["method"] == "tree" and g["details"]["bins"]["score"] == 8 + 2


# -- what is released -----------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # the pair check's
def test_release_respects_the_schema_and_decodes_within_the_bins(seed) -> None:
    schema = make_schema()
    synth = TableSynthesizer(2.0, schema, method="tree", n_bins=8, random_state=seed)
    data = synth.fit(make_df(800)).release_.data
    assert list(data.columns) == list(schema.column_names) and len(data) == 800
    assert set(data["colour"]) <= {"red", "green", "blue"} and set(data["cls"]) <= {"c0", "c1"}
    assert data["age"].between(0, 100).all() and (data["age"] == data["age"].round()).all()
    assert data["score"].between(-1, 1).all() and data["level"].isin(range(1, 6)).all()
    # Re-coding the decoded rows gives back codes the model drew: the bins round-trip.
    bins = synth._plan.bins
    X, y = schema.encode(data)
    codes = bins.codes(schema, X, y)
    Z, yy = bins.encode_codes(schema, codes, resolve_random_state(seed))
    assert np.array_equal(bins.codes(schema, Z, yy), codes)
    assert bins.sizes == (8 + 2, 8 + 2, 5, 3, 2, 2)  # each bound has a code of its own
    rel = synth.release_
    assert any(k.startswith("noisy:cls|") for k in rel.statistics)
    assert "replace-one" in str(rel.guarantee) and "zCDP" in str(rel.guarantee)


def test_sample_is_free_and_checks_its_arguments() -> None:
    synth = TableSynthesizer(1.0, make_schema(), n_bins=5, random_state=0)
    with pytest.raises(NotFittedError):
        synth.sample(10)
    synth.fit(make_df(300))
    assert synth.sample(25, random_state=1).shape == (25, 6)
    assert len(synth.sample()) == 300
    with pytest.raises(ParameterError, match="n"):
        synth.sample(0)


# -- utility on planted structure ----------------------------------------------------------


def _broken(data: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Every column shuffled on its own: right 1-way marginals, no structure."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(data[c].to_numpy()) for c in data.columns})


@pytest.mark.parametrize(
    ("method", "label", "classes"),
    [
        ("auto", True, 2),
        ("tree", True, 3),
        ("tree", False, 2),
        ("chow-liu", True, 2),
        ("pairs", False, 2),
    ],
)
def test_planted_pairs_are_kept_and_the_broken_variant_loses_them(
    seed, method, label, classes
) -> None:
    """At ε = 4 on 3,000 rows the 2-way TVD of each planted pair (age in the synthesizer's
    5 bins) stays below 0.12: a correct fit gives 0.01-0.04 on average and at most 0.05
    over seeds 0-9, so a failure is many standard deviations out. The shuffled table (the
    broken variant) scores above 0.38 on each pair."""
    df = make_df(N, label=label, classes=classes, seed=seed + 100)
    synth = TableSynthesizer(
        4.0, make_schema(label, classes), method=method, n_bins=5, random_state=seed
    )
    data = synth.fit(df).release_.data
    pairs = [("colour", "shape"), ("age", "level")]
    if label:
        pairs += [("cls", "colour"), ("cls", "age")]
    binned = {"age": lambda s: (s * 5 // 100).clip(upper=4)}  # the synthesizer's bins

    def view(t: pd.DataFrame) -> pd.DataFrame:
        return t.assign(**{c: f(t[c]) for c, f in binned.items()})

    for cols in pairs:
        assert tvd(view(data), view(df), cols) < 0.12, cols
        assert tvd(view(_broken(df, seed)), view(df), cols) > 0.3, cols


def test_the_label_is_predictable_from_the_synthetic_rows(seed) -> None:
    """A classifier trained on synthetic rows (ε = 1) predicts the real label: accuracy
    above 0.8 (a correct fit gives about 0.9; the majority class is 0.5), and the mean
    probability it gives the true class is above 0.7. Trained on the broken variant (the
    columns shuffled apart), that probability stays below 0.6 (it is about 0.5)."""
    from sklearn.linear_model import LogisticRegression

    df = make_df(N, seed=seed + 200)
    synth = TableSynthesizer(1.0, make_schema(), n_bins=5, random_state=seed)
    data = synth.fit(df).release_.data

    def xy(t: pd.DataFrame):
        X = pd.get_dummies(t[["colour", "shape"]]).assign(age=t["age"] / 100)
        return X.reindex(sorted(X.columns), axis=1).to_numpy(float), t["cls"].to_numpy()

    X, y = xy(df)

    def true_class_probability(clf) -> float:
        p = clf.predict_proba(X)
        return float(p[np.arange(len(y)), np.searchsorted(clf.classes_, y)].mean())

    clf = LogisticRegression().fit(*xy(data))
    assert clf.score(X, y) > 0.8 and true_class_probability(clf) > 0.7
    shuffled = LogisticRegression().fit(*xy(_broken(data, seed)))
    assert true_class_probability(shuffled) < 0.6


def test_values_at_a_declared_bound_keep_their_mass(seed) -> None:
    """A zero-heavy column (60 % of rows exactly at the lower bound -1): the bound has a code
    of its own, so at ε = 4 on 800 rows the synthetic share of exact zeros is within 0.08 of
    0.6 (its noise is a few counts; 0.08 is more than 10 standard deviations) and the mean
    stays near the real one. The old decoding (uniform across the first of 8 bins) gave no
    exact zero at all, so it fails the first check."""
    df = make_df(800, seed=seed + 300)
    rng = np.random.default_rng(seed)
    df["score"] = np.where(rng.random(len(df)) < 0.6, -1.0, rng.uniform(-1, 1, len(df)))
    synth = TableSynthesizer(4.0, make_schema(), n_bins=8, random_state=seed)
    data = synth.fit(df).release_.data
    share = float((data["score"] == -1.0).mean())
    assert abs(share - 0.6) < 0.08, share
    assert abs(data["score"].mean() - df["score"].mean()) < 0.1


# -- the Chow-Liu tree's compressed levels ---------------------------------------------------


def test_class_splits_of_codes_within_noise_are_pulled_to_the_overall_split() -> None:
    """A code counted within a few σ keeps about the overall class split; a well-measured
    code keeps its own; class counts and code totals are unchanged. Without the weight
    (the broken variant) the noisy code's split stays 100 % one class."""
    table = np.array([[4000.0, 1000.0, 40.0], [1000.0, 4000.0, 0.0]])
    classes = table.sum(axis=1)
    weight = np.full(3, 3.0 * 30.0)  # 3σ pseudo-rows, σ = 30 per cell
    out = model._smooth_class_splits(table, classes, weight)
    np.testing.assert_allclose(out.sum(axis=1), classes, rtol=1e-6)
    np.testing.assert_allclose(out.sum(axis=0), table.sum(axis=0), rtol=1e-6)
    share = out[0] / out.sum(axis=0)
    assert abs(share[0] - 0.8) < 0.01 and abs(share[1] - 0.2) < 0.01
    assert 0.5 < share[2] < 0.7  # the overall split is about 0.5; the raw one was 1.0
    raw = model._smooth_class_splits(table, classes, np.zeros(3))
    assert raw[0, 2] / raw[:, 2].sum() == pytest.approx(1.0)


def test_codes_below_three_sigma_share_one_level_and_a_lone_one_keeps_its_own() -> None:
    sigma = 10.0  # over 2 classes a code needs a noisy total of 3·10·√2 ≈ 42.4
    first = np.array([[100.0, 20.0, 30.0, 5.0, 60.0], [100.0, 20.0, 15.0, 5.0, -3.0]])
    assert model.compress_levels(first, sigma).tolist() == [0, 3, 1, 3, 2]
    lone = np.array([100.0, 20.0, 60.0])  # one unsupported code: nothing to merge
    assert model.compress_levels(lone, sigma / math.sqrt(2)).tolist() == [0, 1, 2]


def test_grouped_tables_keep_every_count_in_its_level() -> None:
    rng = np.random.default_rng(0)
    exact = rng.integers(0, 50, size=(2, 5, 4)).astype(float)
    maps = (None, np.array([0, 2, 1, 2, 2]), np.array([0, 1, 1, 0]))
    out = model.group_table(exact, maps)
    assert out.shape == (2, 3, 2) and out.sum() == exact.sum()
    assert out[1, 2, 0] == exact[1][np.ix_([1, 3, 4], [0, 3])].sum()
    assert np.array_equal(model.group_table(exact, (None, None, None)), exact)


def test_chow_liu_releases_its_levels_and_decodes_the_label() -> None:
    df = make_df(2000, label=True, classes=2, seed=5)
    synth = TableSynthesizer(1.0, make_schema(True, 2), method="chow-liu", random_state=2)
    rel = synth.fit(df).release_
    levels = {k: v for k, v in rel.statistics.items() if k.startswith("levels:")}
    details = rel.guarantee.details
    # every endpoint of every edge has its level map (chow-liu merges rare codes)
    assert set(levels) == {f"levels:{i}|{j}:{a}" for i, j in details["edges"] for a in (i, j)}
    assert details["method"] == "chow-liu"
    assert set(rel.data["cls"]) <= set(df["cls"]) and len(rel.data) == len(df)
    # each edge table is measured over its attributes' levels, as its shape says
    for (i, j), shape in zip(details["edges"], details["edge_tables_shape"], strict=True):
        table = rel.statistics[f"noisy:{i}|{j}"]
        sizes = tuple(int(levels[f"levels:{i}|{j}:{a}"].max()) + 1 for a in (i, j))
        assert table.shape == sizes and shape == f"{sizes[0]} x {sizes[1]}"


def test_a_delta_of_at_least_one_over_n_warns_before_the_spend(tmp_path) -> None:
    """δ ≥ 1/n lets a mechanism publish a whole record: said before the charge, as for
    lda-projection (one check in the Publisher base); a δ well below 1/n says nothing."""
    from ppdp.exceptions import PrivacyLeakWarning

    df = make_df(400)
    acct = Accountant.open(tmp_path / "b.db", dataset_id="t", total=PrivacyBudget(9.0, 0.5))
    synth = TableSynthesizer(epsilon=1.0, delta=1 / 400, schema=make_schema(), random_state=0)
    with pytest.warns(PrivacyLeakWarning, match=r"delta \(0.0025\) >= 1/n \(n=400\)"):
        synth.fit(df, accountant=acct, allow_seeded=True)
    assert len(acct.history()) == 1  # a warning, not a refusal: the release happened
    quiet = TableSynthesizer(epsilon=1.0, delta=1 / 4000, schema=make_schema(), random_state=0)
    quiet.fit(df)  # filterwarnings=error: any warning here fails the test


@pytest.mark.parametrize("binning", ["equal-width", "private-quantiles"])
def test_values_at_either_bound_keep_their_share(binning) -> None:
    """A rate at 1 in 70 % of the rows (KDD Cup's ``same_srv_rate``: 77 %) and at 0 in 10 %:
    each bound has a code of its own, so the synthetic shares at the bounds follow the real
    ones. Seeded; at ε = 1 a count's noise is a few rows out of 5,000, so 0.03 is many
    standard errors. Before the upper bound had its code, the 70 % were spread over the last
    bin [0.9375, 1) and almost no synthetic value was 1 (0.06 on KDD's column)."""
    rng = np.random.default_rng(4)
    n = 5000
    rate = np.where(rng.random(n) < 0.7, 1.0, rng.uniform(0.0, 1.0, n))
    rate[rng.random(n) < 0.1] = 0.0
    y = np.where(rate > 0.5, "c1", "c0")
    schema = Schema.from_dict(
        {
            "columns": [{"name": "rate", "type": "numeric", "lower": 0, "upper": 1}],
            "label": {"name": "cls", "classes": ["c0", "c1"]},
        }
    )
    df = pd.DataFrame({"rate": rate, "cls": y})
    synth = TableSynthesizer(1.0, schema, binning=binning, random_state=0).fit(df)
    out = synth.release_.data["rate"].to_numpy(dtype=float)
    assert abs(np.mean(out == 1.0) - np.mean(rate == 1.0)) < 0.03
    assert abs(np.mean(out == 0.0) - np.mean(rate == 0.0)) < 0.03
    inside = (out > 0) & (out < 1)
    assert abs(np.mean(inside) - np.mean((rate > 0) & (rate < 1))) < 0.03
