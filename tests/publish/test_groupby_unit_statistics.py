"""GroupByPublisher's newer statistics under a privacy unit (docs/proofs/privacy-unit.md §5).

The sums of squares (variances) and the private key selection are calibrated per person:
on neighbours that differ by one person's whole set of rows, the exact statistics move by
at most the sensitivity the plan states, and by exactly that for a worst-case person.
The group caps with keys="private" are the selection's L0 and L∞; a bad cap is refused in
one line, nothing spent.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import SQ_HALF
from ppdp.publish.partition_selection import PartitionSelection
from ppdp.random import resolve_random_state

COLUMNS = [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    {"name": "ward", "type": "categorical", "categories": ["a", "b", "c"]},
]
OPEN = [{"name": "dx", "type": "categorical", "open": True, "categories": ["Z99"]}]


def schema(max_rows: int | None = 3, columns=COLUMNS) -> Schema:
    d: dict = {"columns": columns}
    if max_rows is not None:
        d["privacy_unit"] = {"column": "pid", "max_rows": max_rows}
    return Schema.from_dict(d)


def crowd(seed: int = 0) -> pd.DataFrame:
    """60 persons of 1 to 4 rows, ages inside the bounds."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, 60)
    pid = np.repeat(np.arange(60), sizes)
    n = len(pid)
    return pd.DataFrame(
        {
            "pid": pid,
            "age": rng.uniform(20, 80, n),
            "ward": rng.choice(["a", "b", "c"], n),
            "dx": rng.choice(["C0", "C1"], n),
        }
    )


def many(copies: int) -> pd.DataFrame:
    """``copies`` crowds of distinct persons (60 each)."""
    parts = [crowd(s) for s in range(copies)]
    for s, part in enumerate(parts):
        part["pid"] += 100 * s
    return pd.concat(parts, ignore_index=True)


def person(pid: int, k: int, age: float, wards, dx=None) -> pd.DataFrame:
    wards = list(wards) if not isinstance(wards, str) else [wards] * k
    rows = {"pid": [pid] * k, "age": [age] * k, "ward": wards}
    rows["dx"] = dx if dx is not None else ["C0"] * k
    return pd.DataFrame(rows)


def exact(pub: GroupByPublisher, df: pd.DataFrame):
    """The exact statistics a fit reads: bounded per person, encoded, summed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = pub._bounded(df, resolve_random_state(0), "raise")
    X, y = pub._encode(kept)
    if pub.plan().key_mode == "private":
        return pub._private_statistics(pub.plan(), X, y)
    return pub._partition_statistics(X, y)


@pytest.mark.parametrize("relation", list(Neighbouring))
def test_square_sensitivity_is_the_rows_of_one_person_times_the_rows(relation) -> None:
    row = GroupByPublisher(1.0, schema(None), variances=["age"], relation=relation).plan()
    per = GroupByPublisher(1.0, schema(4), variances=["age"], relation=relation).plan()
    assert per.square_sensitivity == 4 * row.square_sensitivity
    capped = GroupByPublisher(
        1.0, schema(4), by=["ward"], variances=["age"], max_groups=1, max_rows_per_group=2
    ).plan()
    assert capped.square_sensitivity == 2 * 2 * SQ_HALF**2  # replace-one, min(4, 1 x 2) rows


def test_squares_move_by_the_stated_sensitivity_when_one_person_is_replaced() -> None:
    """Replace-one, k = 3: a person with 3 rows at the lower bound in ward a replaced by one
    with 3 rows at the upper bound in ward b moves the squares' vector by exactly
    2·3·SQ_HALF² (the plan's sensitivity); the 5 extra rows of each are dropped first."""
    pub = GroupByPublisher(1.0, schema(3), by=["ward"], means=["age"], variances=["age"])
    base = crowd()
    d = pd.concat([base, person(900, 8, 0.0, "a")], ignore_index=True)
    d2 = pd.concat([base, person(901, 8, 100.0, "b")], ignore_index=True)
    s, s2 = exact(pub, d), exact(pub, d2)
    moved = int(np.abs(s.squares - s2.squares).sum())
    assert moved == pub.plan().square_sensitivity == 2 * 3 * SQ_HALF**2
    assert int(np.abs(s.counts - s2.counts).sum()) == pub.plan().count_sensitivity == 6


def test_squares_never_move_by_more_than_the_sensitivity_for_any_person() -> None:
    pub = GroupByPublisher(
        1.0, schema(3), by=["ward"], variances=["age"], relation="add/remove", random_state=0
    )
    base = crowd(1)
    full = exact(pub, base)
    for pid in np.unique(base["pid"]):  # remove each person in turn
        less = exact(pub, base[base["pid"] != pid])
        assert int(np.abs(full.squares - less.squares).sum()) <= pub.plan().square_sensitivity
        assert int(np.abs(full.counts - less.counts).sum()) <= pub.plan().count_sensitivity


def test_private_keys_count_one_persons_rows_within_the_selections_caps() -> None:
    """Add/remove, k = 3: a person with 6 rows in 6 new keys brings 3 new keys of one row
    each (bounded first); one with 6 rows in one new key brings one key of 3 rows. Both are
    within L0 = L∞ = 3 and the L1 sensitivity 3 of the selection."""
    sch = schema(3, [*COLUMNS, *OPEN])
    kw = {"by": ["dx"], "keys": "private", "delta": 1e-6, "relation": "add/remove"}
    pub = GroupByPublisher(1.0, sch, **kw)
    sel = pub.plan().selection
    assert (sel.max_groups, sel.max_rows_per_group, sel.count_sensitivity_l1) == (3, 3, 3)
    assert sel.threshold_ > 3  # above the 3 rows one person can give one key
    base = crowd()
    _, keys0, cand0 = exact(pub, base)
    for dx in ([f"N{i}" for i in range(6)], ["N0"] * 6):
        _, keys1, cand1 = exact(pub, pd.concat([base, person(900, 6, 50.0, "a", dx)]))
        new = ~keys1["dx"].isin(keys0["dx"]).to_numpy()
        assert new.sum() <= sel.max_groups
        assert cand1.counts[new].max() <= sel.max_rows_per_group
        old = cand1.counts[~new] - cand0.counts
        assert int(cand1.counts[new].sum() + np.abs(old).sum()) <= sel.count_sensitivity_l1


def test_caps_with_private_keys_bound_each_persons_keys_and_rows() -> None:
    """Add/remove, k = 3, max_groups = 2, max_rows_per_group = 1: whoever is removed, the
    candidates' counts move by at most the selection's L1 sensitivity min(2·1, 3) = 2, new
    keys are at most 2, each of at most 1 row; the declared keys and sums likewise."""
    sch = schema(3, [*COLUMNS, *OPEN])
    kw = {"by": ["dx"], "keys": "private", "delta": 1e-6, "relation": "add/remove"}
    pub = GroupByPublisher(1.0, sch, means=["age"], max_groups=2, max_rows_per_group=1, **kw)
    sel, plan = pub.plan().selection, pub.plan()
    assert (sel.max_groups, sel.max_rows_per_group, sel.max_contribution) == (2, 1, 3)
    assert sel.count_sensitivity_l1 == plan.count_sensitivity == plan.contribution == 2
    rng = np.random.default_rng(5)
    base = crowd(2)
    base["dx"] = rng.choice([f"C{i}" for i in range(6)], len(base))
    extra = person(900, 6, 50.0, "a", ["N0", "N1", "N2", "C0", "C0", "C1"])
    full = pd.concat([base, extra], ignore_index=True)
    d0, k0, c0 = exact(pub, full)
    for pid in [*np.unique(base["pid"])[:20], 900]:
        d1, k1, c1 = exact(pub, full[full["pid"] != pid])
        old = k0["dx"].isin(k1["dx"]).to_numpy()
        assert (~old).sum() <= sel.max_groups
        assert (c0.counts[~old] <= sel.max_rows_per_group).all()
        moved = int(np.abs(c0.counts[old] - c1.counts).sum() + c0.counts[~old].sum())
        moved += int(np.abs(d0.counts - d1.counts).sum())
        assert moved <= sel.count_sensitivity_l1
        sums = np.abs(c0.sums[:, old] - c1.sums).sum() + np.abs(c0.sums[:, ~old]).sum()
        assert sums <= plan.sum_sensitivity


def test_a_persons_kept_keys_depend_on_their_rows_alone() -> None:
    """The L0 choice among a person's keys is keyed by the keys' texts, not by codes
    numbered over the table: the person keeps the same rows among any other persons."""
    sch = schema(4, [*COLUMNS, *OPEN])
    pub = GroupByPublisher(
        1.0, sch, by=["dx"], keys="private", delta=1e-6, max_groups=2, random_state=0
    )
    me = person(900, 8, 50.0, "a", [f"K{i}" for i in range(8)])
    kept = []
    for seed in range(3):
        others = crowd(seed)
        others["dx"] = np.random.default_rng(seed).choice(["K3", "K5", "A", "Z"], len(others))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = pub._bounded(pd.concat([others, me]), resolve_random_state(0), "raise")
        kept.append(sorted(rows.loc[rows["pid"] == 900, "dx"]))
    assert len(kept[0]) == 2 and kept[0] == kept[1] == kept[2]


def test_caps_with_private_keys_fit_and_say_so() -> None:
    sch = schema(3, [*COLUMNS, *OPEN])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            1.0, sch, by=["dx"], means=["age"], keys="private", delta=1e-6, max_groups=1,
            max_rows_per_group=2, selection="gaussian", random_state=0,
        ).fit(many(40))  # fmt: skip
    assert pub.release_.data["dx"].tolist()[:1] == ["Z99"]
    assert set(pub.release_.data["dx"]) <= {"Z99", "C0", "C1"}
    sel = pub.guarantee.details["selection"]
    assert (sel["max_groups"], sel["max_rows_per_group"], sel["max_contribution"]) == (1, 2, 3)
    assert pub.guarantee.details["privacy_unit"]["max_groups"] == 1


def test_a_key_of_one_person_is_released_with_probability_below_delta() -> None:
    """Statistical (false-positive rate < 1e-6: 5.5 standard deviations): 20,000 keys, each
    held by one person with all 3 of their rows, are released with frequency at most δ/L0
    (the Laplace threshold's per-key bound). The broken variant, calibrated as if rows were
    persons (caps 1), releases such keys about 8 times more often than δ allows."""
    sch = schema(3, [*COLUMNS, *OPEN])
    delta = 0.05
    plan = GroupByPublisher(1.0, sch, by=["dx"], keys="private", delta=delta).plan()
    counts = np.full(20_000, 3, dtype=np.int64)
    bound = delta / plan.selection.max_groups
    margin = 5.5 * np.sqrt(bound * (1 - bound) / counts.size)
    broken = PartitionSelection("laplace", plan.selection.epsilon, delta, plan.relation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        freq = plan.selection.select(counts, resolve_random_state(7))[0].mean()
        freq_broken = broken.select(counts, resolve_random_state(7))[0].mean()
    assert freq <= bound + margin
    assert freq_broken > delta  # the row-level calibration fails the person-level bound


def test_private_keys_fit_per_person_and_say_so() -> None:
    sch = schema(2, [*COLUMNS, *OPEN])
    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {
            "pid": np.repeat(np.arange(3000), 2),
            "age": rng.uniform(0, 100, 6000),
            "ward": rng.choice(["a", "b", "c"], 6000),
            "dx": rng.choice(["C0", "C1"], 6000),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            1.0, sch, by=["dx"], means=["age"], variances=["age"], keys="private",
            delta=1e-6, random_state=0,
        ).fit(df)  # fmt: skip
    assert pub.release_.data["dx"].tolist() == ["Z99", "C0", "C1"]
    details = pub.guarantee.details
    assert details["selection"]["max_contribution"] == 2
    assert details["privacy_unit"] == {"column": "pid", "max_rows": 2}
    assert any("privacy unit" in a for a in pub.guarantee.assumptions)
    assert any("selection" in a for a in pub.guarantee.assumptions)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"quantiles": ["age"], "q": [1.5]}, r"^q \(1.5\) must be a probability"),
        (
            {"by": ["dx"], "keys": "private", "delta": 1e-6, "max_groups": 0},
            r"^max_groups \(0\) must be an integer >= 1$",
        ),
        (
            {"by": ["dx"], "keys": "private", "delta": 1e-6, "max_rows_per_group": 1.5},
            r"^max_rows_per_group \(1.5\) must be an integer >= 1$",
        ),
    ],
)
def test_what_is_not_calibrated_per_person_is_refused_and_nothing_spent(
    tmp_path, kw, match
) -> None:
    acct = Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(3.0))
    sch = schema(3, [*COLUMNS, *OPEN])
    with pytest.raises(ParameterError, match=match) as info:
        GroupByPublisher(1.0, sch, **kw).fit(crowd(), accountant=acct)
    assert "\n" not in str(info.value)
    assert acct.history() == []


def test_quantiles_per_person_take_the_persons_rows_as_their_sensitivity() -> None:
    """Each group's draw gets ε_part / (moves · rows of one person): the audit
    (tests/statistical/test_groupby_quantile_audit.py) checks the claim on a worst case."""
    for relation, moves in (("add/remove", 1), ("replace-one", 2)):
        row = GroupByPublisher(1.0, schema(None), quantiles=["age"], relation=relation).plan()
        per = GroupByPublisher(
            1.0, schema(4), by=["ward"], quantiles=["age"], relation=relation,
            max_groups=1, max_rows_per_group=3,
        ).plan()  # fmt: skip
        # the default hybrid: 0.8 of the part to the draws, the rest to the intervals' tree
        assert row.epsilon_point == pytest.approx(0.8 * row.epsilon_mean)
        assert row.epsilon_tree == pytest.approx(0.2 * row.epsilon_mean)
        assert row.epsilon_quantile_group == row.epsilon_point / moves
        assert per.epsilon_quantile_group == per.epsilon_point / (moves * 3)
        # the tree: a row under one node of each of its 4 levels, times the person's rows
        assert row.tree_sensitivity == 4 * moves
        assert per.tree_sensitivity == 4 * moves * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(2.0, schema(3), by=["ward"], quantiles=["age"], random_state=0).fit(
            many(20)
        )
    table = pub.release_.data
    med = table["p50_age"].to_numpy()
    assert np.all((med >= 20) & (med <= 80))  # 1,200 persons: the medians are near 50
    assert np.all((table["p50_age_lo"] <= med) & (med <= table["p50_age_hi"]))


@pytest.mark.parametrize("selection", ["laplace", "dp-sips"])
def test_every_ledger_entry_of_private_keys_names_the_privacy_unit(tmp_path, selection) -> None:
    """The selection's entry carries the unit like the sums' (a ledger refuses a spend whose
    unit differs from its earlier spends': before, the keys' entry read as single rows)."""
    acct = Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(3.0, 1e-5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GroupByPublisher(
            1.0, schema(3, [*COLUMNS, *OPEN]), by=["dx"], means=["age"], keys="private",
            delta=1e-6, selection=selection,
        ).fit(many(5), accountant=acct)  # fmt: skip
    units = [r.details.get("privacy_unit") for r in acct.history()]
    assert len(units) >= 2 and all(u == {"column": "pid", "max_rows": 3} for u in units)


@pytest.mark.parametrize("method", ["exponential+tree", "exponential", "tree"])
def test_every_quantile_entry_names_the_privacy_unit(tmp_path, method) -> None:
    """Each quantile's ledger entries (its tree, its exponential-mechanism draws) carry the
    unit like the counts' and sums', so a per-person release with quantiles is charged to
    a per-person ledger (before, the draws' entries read as single rows and the release
    was refused), and a second such release is charged after it."""
    acct = Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(3.0))
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            GroupByPublisher(
                0.5, schema(3), by=["ward"], quantiles=["age"], quantile_method=method,
            ).fit(many(5), accountant=acct)  # fmt: skip
    units = [r.details.get("privacy_unit") for r in acct.history()]
    assert len(units) >= 4 and all(u == {"column": "pid", "max_rows": 3} for u in units)
