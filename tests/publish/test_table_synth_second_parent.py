"""TableSynthesizer's second parents (issue 30, ``extra_parents``): a triangle the tree cannot
hold, kept by drawing one column given two.

Utility tests are seeded and deterministic. The triangle table: ``a`` and ``b`` strongly
associated, ``w`` built from both; the tree joins ``a–b`` and ``b–w``, so ``a × w`` passes
through ``b`` and comes out with 2-way TVD about 0.08 (seed 0). The check names ``a:w``
first; with ``extra_parents=1`` ``w`` is drawn given ``b`` and ``a`` and the pair's TVD falls
below 0.045 (0.028 at seed 0), the tree's own pairs staying within 0.02 of before. The broken
variant (the second parent's table computed and thrown away) must fail that check. The
budget test intercepts every draw: the pair tables are drawn at the planned σ and the whole
fit spends at most the stated ρ (the plan is charged whole).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from test_synth_persons import panel
from test_synth_persons import schema as persons_schema
from test_table_synth import _intercept, drawn_rho, make_df, make_schema

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth as ts
from ppdp.publish import table_synth_model as model
from ppdp.publish.table_synth_check import model_class_pair_table
from ppdp.random import resolve_random_state


def _triangle(n: int = 20_000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 8, n)
    b = np.clip(7 - a + rng.integers(-2, 3, n), 0, 7)
    w = np.clip((a + b) // 2 + rng.integers(-1, 2, n) + 4 * (rng.random(n) < 0.5), 0, 11)
    df = pd.DataFrame({"a": a, "b": b, "w": w, "c": rng.integers(0, 3, n)})
    bounds = [("a", 7), ("b", 7), ("w", 11), ("c", 2)]
    cols = [
        {"name": k, "type": "numeric", "lower": 0, "upper": u, "integer": True} for k, u in bounds
    ]
    return df, Schema.from_dict({"columns": cols})


def _tvd(x: pd.DataFrame, y: pd.DataFrame, cols: tuple[str, str]) -> float:
    px = x.groupby(list(cols)).size() / len(x)
    py = y.groupby(list(cols)).size() / len(y)
    return 0.5 * float(px.sub(py, fill_value=0.0).abs().sum())


def _fit(extra: int) -> TableSynthesizer:
    df, schema = _triangle()
    synth = TableSynthesizer(2.0, schema, method="tree", extra_parents=extra, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded; the check's warnings
        return synth.fit(df)


@pytest.mark.parametrize("broken", [False, True])
def test_a_second_parent_keeps_the_triangle_the_tree_drops(monkeypatch, broken) -> None:
    df, _ = _triangle()
    tree = _fit(0)
    if broken:  # the second parent's table thrown away: the tree's law again
        monkeypatch.setattr(ts, "with_second_parent", lambda m, *a, **k: m)
    two = _fit(1)
    names = two.plan().bins.names
    assert two.release_.guarantee.details["checked_pairs"][0]["pair"] == ["a", "w"]
    got = {names[c]: names[s] for c, (s, _) in two._model.extra.items()}
    before = {p: _tvd(df, tree.release_.data, p) for p in [("a", "w"), ("a", "b"), ("b", "w")]}
    after = {p: _tvd(df, two.release_.data, p) for p in before}
    assert before[("a", "w")] > 0.06  # the tree cannot hold it
    for p in [("a", "b"), ("b", "w")]:  # the tree's own pairs are kept
        assert after[p] < before[p] + 0.02, (p, before, after)
    if broken:
        assert got == {} and after[("a", "w")] > 0.045
    else:
        assert got == {"w": "a"} and after[("a", "w")] < 0.045, after


def test_the_sampler_draws_the_child_given_both_parents() -> None:
    """400,000 rows of the fitted model: the (second parent, child) and (parent, child)
    tables match the model's 4-way table to 0.005 TVD (sampling error about 0.002)."""
    m = _fit(1)._model
    (child, (second, q)) = next(iter(m.extra.items()))
    codes = model.sample_codes(m, 400_000, resolve_random_state(5))
    want_sc = q.sum(axis=(0, 1)) / q.sum()
    got_sc = model.table(codes, m.sizes, (second, child)) / codes.shape[0]
    assert 0.5 * np.abs(want_sc - got_sc).sum() < 0.005
    want_pc = q.sum(axis=(0, 2)) / q.sum()
    got_pc = model.table(codes, m.sizes, (m.parent[child], child)) / codes.shape[0]
    assert 0.5 * np.abs(want_pc - got_pc).sum() < 0.005
    assert m.order.index(child) > max(m.order.index(second), m.order.index(m.parent[child]))


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")
@pytest.mark.parametrize("swamped", [False, True])
@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
@pytest.mark.parametrize(("method", "label"), [("tree", True), ("tree", False), ("chow-liu", True)])
def test_the_pool_is_spent_whole_by_the_pair_tables_and_the_edges_again(
    monkeypatch, method, label, relation, swamped
):
    """Every draw intercepted: the pair tables at ``pair_sigmas`` and, where fewer than
    ``extra_parents`` are measured (``swamped``: the gate refuses every pair), each edge
    table again at ``remeasure_sigma``; the draws add up to the stated ρ from below and
    from above (before the pool, a skipped pair's share was reserved and never drawn)."""
    eps, delta = 0.7, 1e-6
    # the gate refuses every pair (swamped) or none
    monkeypatch.setattr(ts, "EXTRA_NOISE_RATIO", 0.0 if swamped else 1e9)
    synth = TableSynthesizer(
        eps, make_schema(label), delta=delta, method=method, relation=relation,
        extra_parents=2, random_state=3,
    )  # fmt: skip
    plan = synth.plan()  # before the data are read: the pair tables are planned and shown
    assert plan.extra_parents == 2 and plan.details()["second_parent_tables"] == 2
    assert plan.spent_rho() == pytest.approx(plan.rho, rel=1e-12)
    assert 2 * plan.table_sensitivity**2 / (2 * plan.sigma_extra**2) <= plan.extra_rho
    no_pool = TableSynthesizer(
        eps, make_schema(label), delta=delta, method=method, relation=relation,
        extra_parents=0,
    ).plan()  # fmt: skip
    # the pool comes from the edge tables alone: every other σ is the plan's without it
    assert (plan.sigma_first, plan.sigma_decode, plan.check) == (
        no_pool.sigma_first, no_pool.sigma_decode, no_pool.check
    )  # fmt: skip
    assert plan.sigma_second > no_pool.sigma_second
    seen = _intercept(monkeypatch, utility_sensitivity=plan.utility_sensitivity)
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=relation)
    synth.fit(make_df(2000, label=label), accountant=a, allow_seeded=True)
    stated = synth.release_.guarantee.details["rho"]
    assert stated * (1 - 1e-9) <= drawn_rho(seen, relation) <= stated * (1 + 1e-12)
    assert a.spent == PrivacyBudget(eps, delta)  # the plan is charged whole
    m = len(synth._model.extra)
    assert m == (0 if swamped else 2)
    # the pair tables: their share of the pool split by cells^(2/3)
    sizes = plan.bins.sizes  # pair_tables="labelled": each table on its codes
    sigmas = ts.pair_sigmas(plan, [sizes[c] * sizes[s] for c, (s, _) in synth._model.extra.items()])
    assert sorted(x for x in seen["sigma"] if x in sigmas) == sorted(sigmas)
    half_sq = plan.table_sensitivity**2 / 2
    assert sum(half_sq / x**2 for x in sigmas) <= plan.extra_rho * m / 2 * (1 + 1e-12)
    again = ts.remeasure_sigma(plan, m) if m < 2 else None
    assert seen["sigma"].count(again) == (plan.n_second if m < 2 else 0)
    # Every table drawn at a σ of the plan: nothing outside it.
    planned = {plan.sigma_first, plan.sigma_second, plan.sigma_decode, again, *sigmas}
    assert set(seen["sigma"]) <= planned


def test_auto_plans_one_pair_table_per_check_round() -> None:
    plan = TableSynthesizer(1.0, make_schema(False), method="tree").plan()
    assert plan.extra_parents == plan.check_pairs == ts.DEFAULT_EXTRA_PARENTS == 6
    assert plan.details()["second_parent_tables"] == 6
    labelled = TableSynthesizer(1.0, make_schema(), method="tree").plan()
    assert labelled.extra_parents == labelled.check_pairs == 3
    two = TableSynthesizer(1.0, make_schema(), method="tree", check_pairs=2).plan()
    assert two.extra_parents == 2
    # many columns (more than 50 pairs off the tree): 3 rounds, 3 second parents
    wide = Schema.from_dict(
        {"columns": [{"name": f"c{i}", "type": "categorical", "categories": ["a", "b"]}
                     for i in range(12)]}
    )  # fmt: skip
    assert TableSynthesizer(1.0, wide, method="tree").plan().extra_parents == 3
    off = TableSynthesizer(1.0, make_schema(), method="tree", check_pairs=0).plan()
    assert off.extra_parents == 0 and "second_parent_tables" not in off.details()
    zero = TableSynthesizer(1.0, make_schema(), method="tree", extra_parents=0).plan()
    assert zero.extra_parents == 0 and zero.check_pairs == labelled.check_pairs
    # with synthetic persons "auto" is 0 (the person model's tree: one parent per column)
    assert TableSynthesizer(2.0, persons_schema()).plan().extra_parents == 0


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"extra_parents": -1}, ParameterError, r"^extra_parents \(-1\) must be an integer in "),
        ({"extra_parents": 11}, ParameterError, r"^extra_parents \(11\) must be an integer in "),
        ({"extra_parents": 1.5}, ParameterTypeError, r"^extra_parents \(1\.5\) must be an int"),
        ({"extra_parents": "all"}, ParameterError, r"^extra_parents \('all'\) must be 'auto' or "),
        (
            {"extra_parents": 2, "check_pairs": 1},
            ParameterError,
            r"^extra_parents \(2\) must be at most check_pairs \(1\): ",
        ),
    ],
)
def test_bad_extra_parents_is_one_line_and_costs_nothing(kw, error, match) -> None:
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    synth = TableSynthesizer(1.0, make_schema(), **kw)
    with pytest.raises(error, match=match):
        synth.fit(make_df(200), accountant=a)
    assert a.spent == PrivacyBudget(0.0, 0.0) and not a.history()


def test_synthetic_persons_refuse_second_parents() -> None:
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    synth = TableSynthesizer(2.0, persons_schema(), extra_parents=1)
    with pytest.raises(ParameterError, match=r"^extra_parents \(1\) must be 0 with synthetic"):
        synth.fit(panel(), accountant=a)
    assert a.spent == PrivacyBudget(0.0, 0.0) and not a.history()


def test_the_dry_run_names_the_second_parent_and_person_tables() -> None:
    """The dry run's words cover every planned part: the reserved second-parent tables and,
    under a privacy unit with per_person columns, the person table and the histogram."""
    from ppdp.accounting.plan import charge_lines

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = TableSynthesizer(1.0, make_schema(), method="tree", extra_parents=2)
        rows = rows.planned_charges()
        people = TableSynthesizer(1.0, persons_schema()).planned_charges()
    d = rows[-1].details
    text = "\n".join(charge_lines(rows))
    assert f"sigma = {d['sigma_second_parent']:.4g} per cell of up to 2 pair table(s)" in text
    p = people[-1].details["persons"]
    text = "\n".join(charge_lines(people))
    assert f"{p['rho_share']:.0%} of rho for synthetic persons" in text
    assert f"sigma = {p['sigma_rows_per_person_histogram']:.4g} per cell of the" in text
    assert f"sigma = {p['person_model']['noise_scale']:.4g} per cell" in text


def _fit_many(monkeypatch) -> TableSynthesizer:
    """The triangle fitted with 3 second parents (the gate opened: every named pair)."""
    monkeypatch.setattr(ts, "EXTRA_NOISE_RATIO", 1e9)
    df, schema = _triangle()
    synth = TableSynthesizer(2.0, schema, method="tree", extra_parents=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return synth.fit(df)


def _sampled(m: model.Model, codes: np.ndarray, cols: tuple[int, ...]) -> np.ndarray:
    """The (class, *cols) table of sampled rows (one class without a label)."""
    cls = codes[:, m.label] if m.label is not None else np.zeros(len(codes), dtype=np.int64)
    out = np.zeros((m.class_counts.size, *(m.sizes[c] for c in cols)))
    np.add.at(out, (cls, *(codes[:, c] for c in cols)), 1.0)
    return out / len(codes)


def test_the_model_law_with_second_parents_is_the_samplers() -> None:
    """``model_class_law`` of a model with several second parents against 400,000 sampled
    rows, every pair: within 0.005 TVD (sampling error about 0.002); the tree's path law
    (which ignores the second parents) misses the triangle's pair by far more."""
    mp = pytest.MonkeyPatch()
    try:
        m = _fit_many(mp)._model
    finally:
        mp.undo()
    assert len(m.extra) >= 2
    codes = model.sample_codes(m, 400_000, resolve_random_state(7))
    for a, b in [(0, 1), (0, 2), (1, 2), (2, 3), (0, 3)]:
        law = model.model_class_law(m, (a, b)) / m.class_counts.sum()
        assert 0.5 * np.abs(law - _sampled(m, codes, (a, b))).sum() < 0.005, (a, b)
    tree = model_class_pair_table(m, 0, 2) / m.class_counts.sum()
    assert 0.5 * np.abs(tree - _sampled(m, codes, (0, 2))).sum() > 0.02


@pytest.mark.parametrize("broken", [False, True])
def test_each_second_parent_is_fitted_to_the_law_with_the_earlier_ones(monkeypatch, broken):
    """The last child given a second parent: its (class, parent, second) law in sampled rows
    is the margin its 4-way table was fitted to, so the sampled (second, child) table is the
    fitted one. The broken variant reads that law from the tree alone (before, exact only
    for one second parent): its fitted margin misses the sampled one."""
    if broken:
        monkeypatch.setattr(
            ts, "model_class_law",
            lambda m, cols: model_class_pair_table(m, *cols) if len(cols) == 2 else
            model.model_class_law(m, cols),
        )  # fmt: skip
    m = _fit_many(monkeypatch)._model
    child = next(c for c in reversed(m.order) if c in m.extra)
    second, q = m.extra[child]
    cols = (m.parent[child], second) if child in m.parent else (second,)
    codes = model.sample_codes(m, 400_000, resolve_random_state(8))
    fitted = q.sum(axis=3) / q.sum() if child in m.parent else q.sum(axis=(1, 3)) / q.sum()
    gap = 0.5 * np.abs(fitted - _sampled(m, codes, cols)).sum()
    assert (gap > 0.01) if broken else (gap < 0.005), gap


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")
@pytest.mark.parametrize("broken", [False, True])
def test_a_skipped_pairs_share_is_drawn_not_only_charged(monkeypatch, broken) -> None:
    """The gate shut: the drawn ρ reaches the stated ρ only because the pool measures the
    edge tables again; the broken variant (the old behaviour: the skipped share reserved
    and never drawn) falls short by the whole pool."""
    monkeypatch.setattr(ts, "EXTRA_NOISE_RATIO", 0.0)
    if broken:
        monkeypatch.setattr(ts, "_measure_edges_again", lambda p, c, e, second, *a: second)
    synth = TableSynthesizer(0.7, make_schema(), delta=1e-6, method="tree", random_state=3)
    seen = _intercept(monkeypatch)
    synth.fit(make_df(2000), allow_seeded=True)
    plan = synth.plan()
    short = synth.release_.guarantee.details["rho"] - drawn_rho(seen)
    assert not synth._model.extra
    if broken:
        assert short == pytest.approx(plan.extra_rho, rel=1e-6)
    else:
        assert abs(short) <= 1e-9 * plan.rho
