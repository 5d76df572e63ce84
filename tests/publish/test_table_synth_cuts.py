"""Declared cut points of a numeric column (``cuts``), and how TableSynthesizer uses them.

New-user trial: a skewed income on ``[0, 1e6]`` fell into the first of 16 equal-width bins
and the synthetic median came out 65 % too high. Declared brackets (public knowledge, like the
bounds) bin it where the values are.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.data.columns import NumericColumn
from ppdp.exceptions import SchemaError
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth_model as model
from ppdp.random import resolve_random_state

BRACKETS = [2500, 5000, 10000, 20000, 40000, 80000, 160000]


@pytest.mark.parametrize(
    ("cuts", "said"),
    [
        ([], "has 0 values; declare 1 to 255"),
        ([5, 5], "must increase strictly (5.0 then 5.0)"),
        ([0, 5], "must lie strictly inside the bounds (0.0, 10.0)"),
        ([5, 10], "must lie strictly inside the bounds"),
        (["a"], "cuts ('a') must be a finite number"),
        ("5", "cuts ('5') must be a list of numbers"),
        (list(np.linspace(0.01, 9.99, 256)), "has 256 values"),
    ],
)
def test_bad_cuts_are_one_line_naming_the_column(cuts, said):
    with pytest.raises(SchemaError) as info:
        NumericColumn("x", 0, 10, cuts=cuts)
    message = str(info.value)
    assert message.startswith("column 'x': ") and said in message and "\n" not in message


def test_cuts_round_trip_and_are_absent_unless_declared():
    raw = {"name": "x", "type": "numeric", "lower": 0, "upper": 10, "cuts": [2, 4.5]}
    schema = Schema.from_dict({"columns": [raw]})
    assert schema.columns[0].cuts == (2.0, 4.5)
    assert schema.to_dict()["columns"][0]["cuts"] == [2, 4.5]
    assert Schema.from_dict(json.loads(schema.to_json())) == schema
    plain = Schema.from_dict({"columns": [{**raw, "cuts": None}]})
    assert "cuts" not in plain.to_dict()["columns"][0]


def _schema(cuts, *, integer=False) -> Schema:
    col = {"name": "income", "type": "numeric", "lower": 0, "upper": 1_000_000}
    if integer:
        col["integer"] = True
    if cuts is not None:
        col["cuts"] = cuts
    return Schema.from_dict({"columns": [col], "label": {"name": "y", "classes": ["a", "b"]}})


@pytest.mark.parametrize("integer", [False, True])
def test_codes_follow_the_cuts_and_decoding_stays_in_the_bin(integer):
    schema = _schema(BRACKETS, integer=integer)
    bins = model.Bins.from_schema(schema, 16)
    assert bins.kinds[0] == "cut" and bins.sizes[0] == len(BRACKETS) + 3
    values = np.array([0, 1, 2499, 2500, 2501, 5000, 159_999, 160_000, 1_000_000], dtype=float)
    X, y = schema.encode(pd.DataFrame({"income": values, "y": "a"}))[:2]
    codes = bins.codes(schema, X, y)[:, 0]
    # codes 0 and 9 are the bounds; a value equal to a cut opens the next bin
    assert codes.tolist() == [0, 1, 1, 2, 2, 3, 7, 8, 9]
    # every code decodes to a value that codes back to it, inside its interval
    rng = np.random.default_rng(0)
    sampled = np.stack([rng.integers(0, bins.sizes[0], 5000), rng.integers(0, 2, 5000)], 1)
    Z, yy = bins.encode_codes(schema, sampled, resolve_random_state(1))
    decoded = schema.decode(Z, yy)["income"].to_numpy(dtype=float)
    again = bins.codes(schema, *schema.encode(pd.DataFrame({"income": decoded, "y": "a"}))[:2])
    assert np.array_equal(again[:, 0], sampled[:, 0])
    edges = np.array([0, *BRACKETS, 1_000_000])
    top = len(BRACKETS) + 2
    inner = (sampled[:, 0] > 0) & (sampled[:, 0] < top)
    k = sampled[inner, 0] - 1
    assert np.all((decoded[inner] >= edges[k]) & (decoded[inner] < edges[k + 1]))
    assert np.all(decoded[sampled[:, 0] == 0] == 0)
    assert np.all(decoded[sampled[:, 0] == top] == 1_000_000)
    if integer:
        assert np.array_equal(decoded, np.round(decoded))


def _incomes(n: int = 6000) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    income = np.round(rng.lognormal(10.0, 0.9, n), 2)
    return pd.DataFrame({"income": income, "y": np.where(income > 30_000, "b", "a")})


def test_declared_brackets_keep_a_skewed_columns_quantiles():
    """Median and 90th percentile within 8 % with the brackets; without them, decoded
    uniformly within the bin (the control), the median is off by more than 40 % (the first
    of 16 equal bins holds most rows). Seeded, 3 seeds. (With the default sub-bin decoding
    the equal-width median is 0-22 % off at this n, seeds 0-5: better, but noisier than the
    brackets.)"""
    df = _incomes()
    real = df.income.quantile([0.5, 0.9]).to_numpy()
    for seed in range(3):
        cut = TableSynthesizer(1.0, _schema(BRACKETS), random_state=seed).fit(df)
        q = cut.release_.data.income.quantile([0.5, 0.9]).to_numpy()
        assert np.all(np.abs(q / real - 1) < 0.08), (seed, q, real)
        equal = TableSynthesizer(1.0, _schema(None), random_state=seed, n_bins=16, decode="uniform")
        with pytest.warns(Warning, match="first bin"):
            equal.fit(df)
        median = equal.release_.data.income.median()
        assert abs(median / real[0] - 1) > 0.4


def test_n_bins_does_not_change_declared_cuts():
    bins = model.Bins.from_schema(_schema(BRACKETS), 4)
    assert bins.sizes[0] == len(BRACKETS) + 3
    synth = TableSynthesizer(1.0, _schema(BRACKETS), random_state=0, n_bins=4).fit(_incomes(500))
    assert synth.release_.data.income.max() <= 1_000_000


def test_a_parquet_dataset_with_cuts_is_measured_as_in_memory(tmp_path):
    df = _incomes(1200)
    folder = tmp_path / "in"
    folder.mkdir()
    for i, part in enumerate((df.iloc[:500], df.iloc[500:])):
        part.to_parquet(folder / f"part-{i}.parquet", index=False)
    mem = TableSynthesizer(1.0, _schema(BRACKETS), random_state=3).fit(df)
    dist = TableSynthesizer(1.0, _schema(BRACKETS), random_state=3)
    dist.fit(folder, scheduler="sync")
    a, b = mem.release_.statistics, dist.release_.statistics
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(b[key], a[key], rtol=1e-9, atol=0, err_msg=key)
