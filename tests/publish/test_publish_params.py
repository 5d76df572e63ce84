"""The publishers' parameters: one constraint table, checked once per fit (issue 18)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import ppdp._params
import ppdp.publish
import ppdp.publish._base as publish_base
from ppdp._params import check_table, table_fields
from ppdp.data import Schema
from ppdp.exceptions import InsecureRandomnessWarning, ParameterError, ParameterTypeError
from ppdp.publish import (
    DPLDASynthesizer,
    DPPCAPublisher,
    ExponentialPublisher,
    LaplacePublisher,
    LDAProjectionPublisher,
    TableSynthesizer,
)

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "x", "type": "numeric", "lower": 10, "upper": 20},
            {"name": "c", "type": "categorical", "categories": ["a", "b", "c"]},
        ],
        "label": {"name": "y", "classes": [0, 1]},
    }
)


def _table(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {"x": rng.uniform(10, 20, n), "c": rng.choice(list("abc"), n), "y": rng.integers(0, 2, n)}
    )


_COUNTS = [int(v) for v in np.bincount(_table()["y"], minlength=2)]

#: (publisher factory, a field of its parameters and its validated value)
CASES = [
    pytest.param(
        lambda: DPPCAPublisher(2.0, 2, SCHEMA, random_state=1), "n_components", 2, id="pca"
    ),
    pytest.param(lambda: LaplacePublisher(2.0, SCHEMA, random_state=1), "epsilon", 2.0, id="lap"),
    pytest.param(
        lambda: LDAProjectionPublisher(4.0, 1e-6, SCHEMA, class_counts=_COUNTS, random_state=1),
        "r",
        1,
        id="lda-projection",
    ),
    pytest.param(
        lambda: DPLDASynthesizer(2.0, SCHEMA, count_share=0.25, random_state=1),
        "eps_counts",
        0.5,
        id="lda-synth",
    ),
    pytest.param(
        lambda: TableSynthesizer(2.0, SCHEMA, method="tree", random_state=1),
        "method",
        "tree",
        id="table-synth",
    ),
    pytest.param(lambda: ExponentialPublisher(3, SCHEMA, random_state=1), "epsilon", 3.0, id="exp"),
]


@pytest.mark.parametrize(("build", "field", "value"), CASES)
def test_the_table_builds_a_frozen_typed_object(build, field, value) -> None:
    pub = build()
    table, declared = table_fields(pub._constraints, pub._params_type)
    assert table == declared  # every field filled by exactly one rule, in declaration order
    params = pub._params()
    assert isinstance(params, pub._params_type)
    assert getattr(params, field) == value
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(params, field, value)


@pytest.mark.parametrize(("build", "field", "value"), CASES)
def test_fit_checks_the_table_once(build, field, value, monkeypatch) -> None:
    calls = []

    def counting(obj, table, params_type):
        calls.append(type(obj).__name__)
        return check_table(obj, table, params_type)

    monkeypatch.setattr(ppdp._params, "check_table", counting)
    pub = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        pub.fit(_table())
    assert len(calls) == 1
    assert "_fit_params" not in vars(pub)  # nothing cached after fit
    pub.privacy_budget()
    assert len(calls) == 2  # outside fit the current attributes are checked


def test_outside_fit_the_current_attributes_are_checked() -> None:
    pub = DPPCAPublisher(2.0, 2, SCHEMA)
    assert pub._params().n_components == 2
    pub.n_components = 1
    assert pub._params().n_components == 1
    pub.n_components = 9
    with pytest.raises(ParameterError, match=r"^n_components \(9\) must be an integer in 1\.\.6"):
        pub._params()


def test_pca_first_error_follows_the_table_order() -> None:
    # schema, allow_large_epsilon, epsilon, n_components, clamp: the first bad one is named
    with pytest.raises(ParameterTypeError, match=r"^schema \(dict\)"):
        DPPCAPublisher(-1.0, 0, {}, clamp=None).privacy_budget()
    with pytest.raises(ParameterTypeError, match=r"^allow_large_epsilon \(1\)"):
        DPPCAPublisher(-1.0, 0, SCHEMA, clamp=None, allow_large_epsilon=1).privacy_budget()
    with pytest.raises(ParameterError, match=r"^epsilon \(-1\.0\)"):
        DPPCAPublisher(-1.0, 0, SCHEMA, clamp=None).privacy_budget()
    with pytest.raises(ParameterError, match=r"^n_components \(0\)"):
        DPPCAPublisher(1.0, 0, SCHEMA, clamp=None).privacy_budget()
    with pytest.raises(ParameterTypeError, match=r"^clamp \(None\) must be True or False"):
        DPPCAPublisher(1.0, 1, SCHEMA, clamp=None).privacy_budget()


@pytest.mark.parametrize("cls", [LaplacePublisher, ExponentialPublisher])
def test_baselines_first_error_follows_the_table_order(cls) -> None:
    # schema, allow_large_epsilon, epsilon
    with pytest.raises(ParameterTypeError, match=r"^schema \(dict\)"):
        cls(-1.0, {}, allow_large_epsilon=1).privacy_budget()
    with pytest.raises(ParameterTypeError, match=r"^allow_large_epsilon \(1\)"):
        cls(-1.0, SCHEMA, allow_large_epsilon=1).privacy_budget()
    with pytest.raises(ParameterError, match=r"^epsilon \(11\.0\) must be in \(0, 10\]"):
        cls(11.0, SCHEMA).privacy_budget()
    assert cls(11.0, SCHEMA, allow_large_epsilon=True)._params().epsilon == 11.0


def test_lda_projection_derived_fields_and_first_error() -> None:
    pub = LDAProjectionPublisher(4.0, 1e-6, SCHEMA, class_counts=[100, 100], ridge=0.5)
    c = pub._params()
    assert c.e3 + c.e_dir == pytest.approx(4.0) and 0 < c.e3 < 4.0
    assert c.plan.mean_budget.epsilon + c.plan.scatter_budget.epsilon == pytest.approx(c.e_dir)
    assert (c.counts, c.p, c.ridge) == ((100, 100), 4, 0.5)
    direction = LDAProjectionPublisher(
        4.0, 1e-6, SCHEMA, class_counts=[100, 100], release="direction"
    )
    assert (direction._params().e3, direction._params().e_dir) == (0.0, 4.0)
    # the order of the table: epsilon before delta before class_counts before ridge
    with pytest.raises(ParameterError, match=r"^epsilon \(0\.0\)"):
        LDAProjectionPublisher(0, 2.0, SCHEMA, class_counts=[0, 1], ridge=-1)._params()
    with pytest.raises(ParameterError, match=r"^delta \(2\.0\) must be"):
        LDAProjectionPublisher(1.0, 2.0, SCHEMA, class_counts=[0, 1], ridge=-1)._params()
    with pytest.raises(ParameterError, match=r"^class_counts \(\[0, 1\]\) must all be >= 1"):
        LDAProjectionPublisher(1.0, 1e-6, SCHEMA, class_counts=[0, 1], ridge=-1)._params()
    with pytest.raises(ParameterError, match=r"^ridge \(-1\.0\) must be"):
        LDAProjectionPublisher(1.0, 1e-6, SCHEMA, class_counts=[1, 1], ridge=-1)._params()


def test_lda_synth_split_and_first_error() -> None:
    c = DPLDASynthesizer(2.0, SCHEMA, count_share=0.25)._params()
    assert (c.eps_counts, c.eps_sums, c.class_sizes) == (0.5, 1.5, "noisy")
    assert DPLDASynthesizer(2.0, SCHEMA, count_share=0.25)._budget_split() == (0.5, 1.5)
    # the budget split is checked before the schema, as before the table
    with pytest.raises(ParameterError, match=r"^count_share \(1\.5\) must be in \(0, 1\)"):
        DPLDASynthesizer(2.0, {}, count_share=1.5)._params()
    with pytest.raises(ParameterTypeError, match=r"^schema \(dict\)"):
        DPLDASynthesizer(2.0, {})._params()
    with pytest.raises(ParameterError, match=r"^class_sizes \('public'\) needs the label 'y'"):
        DPLDASynthesizer(2.0, SCHEMA, class_sizes="public")._params()


def test_table_synth_plan_is_the_params_plan_and_first_error() -> None:
    synth = TableSynthesizer(2.0, SCHEMA, n_bins=4)
    c = synth._params()
    assert synth.plan() == c.plan and c.plan.method == "pairs"  # auto, small domain
    assert c.bins.sizes == c.plan.bins.sizes
    # epsilon, delta, method, n_bins, schema: the first bad one is named
    with pytest.raises(ParameterError, match=r"^delta \(0\.0\)"):
        TableSynthesizer(2.0, {}, delta=0.0, method="x", n_bins=1).plan()
    with pytest.raises(ParameterError, match=r"^method \('x'\) must be one of"):
        TableSynthesizer(2.0, {}, method="x", n_bins=1).plan()
    with pytest.raises(ParameterError, match=r"^n_bins \(1\)"):
        TableSynthesizer(2.0, {}, n_bins=1).plan()
    with pytest.raises(ParameterTypeError, match=r"^schema \(dict\)"):
        TableSynthesizer(2.0, {}).plan()


def test_every_publisher_declares_its_table() -> None:
    classes = [
        obj
        for name in ppdp.publish.__all__
        if isinstance(obj := getattr(ppdp.publish, name), type)
        and issubclass(obj, publish_base.Publisher)
        and obj is not publish_base.Publisher
    ]
    assert len(classes) == 7
    for cls in classes:
        assert cls._params_type is not None, cls
        assert dataclasses.is_dataclass(cls._params_type)
        assert cls._params_type.__dataclass_params__.frozen, cls
        table, declared = table_fields(cls._constraints, cls._params_type)
        assert table == declared, cls
        assert not hasattr(cls, "_checked"), cls
