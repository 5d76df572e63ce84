"""What an add/remove guarantee is worth under replace-one (group privacy of two), in the
guarantee line and in the quality report."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting.receipt import guarantee_lines, replace_one_equivalent
from ppdp.budget import Guarantee
from ppdp.data.schema import Schema

SCHEMA = {
    "schema_version": 1,
    "columns": [
        {"name": "age", "type": "numeric", "lower": 18, "upper": 90, "integer": True},
        {"name": "job", "type": "categorical", "categories": ["a", "b", "c"]},
    ],
    "label": {"name": "y", "classes": ["no", "yes"]},
}


def test_replace_one_equivalent_is_group_privacy_of_two():
    g = Guarantee.approx(1.0, 1e-9, relation="add/remove", mechanism="M")
    text = replace_one_equivalent(g)
    assert text is not None and text.startswith("≈ (2ε, (1+e^ε)δ) = (2, ")
    delta = float(text.split("(2, ")[1].split(")")[0])
    assert delta == pytest.approx((1 + math.e) * 1e-9, rel=1e-3)
    assert replace_one_equivalent(Guarantee.pure(0.75, relation="add/remove")) == (
        "≈ 2ε = 1.5 under replace-one"
    )
    assert "4ρ = 0.2 " in replace_one_equivalent(Guarantee.zcdp(0.05, relation="add/remove"))
    for same in (
        Guarantee.approx(1.0, 1e-9, relation="replace-one"),
        Guarantee.pure(1.0, relation="replace-one"),
        Guarantee.none("raw rows", mechanism="M"),
    ):
        assert replace_one_equivalent(same) is None


def test_the_guarantee_line_states_the_replace_one_equivalent():
    add_remove = Guarantee.approx(1.0, 1e-9, relation="add/remove", mechanism="M")
    first = guarantee_lines(add_remove)[0]
    assert first.startswith("guarantee: (ε, δ)-DP, ε = 1, δ = 1e-09, add/remove — M; ≈ (2ε")
    assert first.endswith("under replace-one")
    replace = Guarantee.approx(1.0, 1e-9, relation="replace-one", mechanism="M")
    assert guarantee_lines(replace)[0] == f"guarantee: {replace.summary()}"


def test_the_report_compares_an_add_remove_release_at_its_replace_one_budget():
    pytest.importorskip("sklearn")
    from ppdp.evaluate import quality_report

    schema = Schema.from_dict(SCHEMA)
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 91, 300),
            "job": rng.choice(["a", "b", "c"], 300),
            "y": rng.choice(["no", "yes"], 300),
        }
    )
    lines = {}
    for relation in ("add/remove", "replace-one"):
        g = Guarantee.approx(1.0, 1e-9, relation=relation, mechanism="M")
        report = quality_report(df, df.sample(frac=1.0, random_state=1), schema, guarantee=g)
        lines[relation] = report.summary()
        data = report.to_dict()
        assert data["guarantee_replace_one"] == replace_one_equivalent(g)
    assert lines["replace-one"].startswith("verdict: ")
    assert "replace-one" not in lines["replace-one"]
    assert lines["add/remove"].startswith(lines["replace-one"])
    assert "the release is add/remove, ≈ (2ε, (1+e^ε)δ) = (2, " in lines["add/remove"]
