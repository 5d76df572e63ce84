"""Every registered publisher and learner, given a schema with a privacy unit, either
releases per person (the guarantee says "per person") or refuses the schema in one line,
before anything is spent (DESIGN.md, contract 7: never a silent per-row guarantee)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import ParameterError, SchemaError
from ppdp.learn.files import build_learner
from ppdp.publish.files import build_publisher
from ppdp.registry import LEARNERS, PUBLISHERS

N = 400
SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "c", "type": "categorical", "categories": ["a", "b", "c"]},
        ],
        "label": {"name": "y", "classes": [0, 1]},
        "privacy_unit": {"column": "pid", "max_rows": 2},
    }
)
OPTIONS = {"--components": 1, "--delta": 1e-6}


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "pid": rng.integers(0, N // 3, N),
            "x": rng.uniform(0, 10, N),
            "c": rng.choice(list("abc"), N),
            "y": np.repeat([0, 1], N // 2),
        }
    )


def _check(est, fit) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if getattr(type(est), "supports_privacy_unit", False):
            fit(acct)
            assert "per person (pid, ≤ 2 rows each" in est.guarantee.summary()
            assert acct.history()[-1].details["privacy_unit"]["column"] == "pid"
            return
        with pytest.raises(SchemaError) as info:
            fit(acct)
    message = str(info.value)
    assert "cannot honour a person-level unit" in message and "\n" not in message
    assert acct.spent == PrivacyBudget(0.0) and acct.history() == []


@pytest.mark.parametrize("name", PUBLISHERS.names())
def test_each_publisher_honours_or_refuses_a_unit(name: str) -> None:
    options = {f: OPTIONS[f] for f in PUBLISHERS.entry(name).required}
    pub = build_publisher(name, epsilon=2.0, schema=SCHEMA, random_state=3, options=options)
    _check(pub, lambda acct: pub.fit(_table(), accountant=acct, allow_seeded=True))


@pytest.mark.parametrize("name", LEARNERS.names())
def test_each_learner_honours_or_refuses_a_unit(name: str) -> None:
    cls = LEARNERS.load(name)
    accepted = set(cls._get_param_names())
    options = {"schema": SCHEMA} if "schema" in accepted else {}
    public = _table().drop(columns=["y", "pid"]).head(60) if "public_X" in accepted else None
    est = build_learner(
        name, schema=SCHEMA, epsilon=1.0, random_state=3, public_X=public, options=options
    )
    df = _table()
    if getattr(type(est), "supports_privacy_unit", False):
        # per person by output perturbation only: the default objective one is refused
        acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
        with pytest.raises(ParameterError, match="perturbation='output' only") as info:
            est.fit(df.drop(columns="y"), df["y"], accountant=acct, allow_seeded=True)
        assert "\n" not in str(info.value) and acct.history() == []
        est.set_params(perturbation="output")
    _check(
        est,
        lambda acct: est.fit(df.drop(columns="y"), df["y"], accountant=acct, allow_seeded=True),
    )
