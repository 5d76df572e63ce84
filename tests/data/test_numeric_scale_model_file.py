"""``ppdp train`` keeps a column's ``scale`` in the model file and ``ppdp predict`` uses it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ppdp.cli import main
from ppdp.data import Schema
from ppdp.learn._model_io import read_model


def test_the_model_file_keeps_the_log_scale_and_predict_encodes_with_it(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 3000
    income = rng.lognormal(np.log(30_000), 1.5, n)
    age = rng.uniform(18, 80, n)
    y = np.where(income > np.median(income), "high", "low")
    pd.DataFrame({"income": income, "age": age, "y": y}).to_csv(tmp_path / "t.csv", index=False)
    cols = [
        {"name": "income", "type": "numeric", "lower": 0, "upper": 1_000_000, "scale": "log"},
        {"name": "age", "type": "numeric", "lower": 18, "upper": 80},
    ]
    raw = {"columns": cols, "label": {"name": "y", "classes": ["low", "high"]}}
    (tmp_path / "s.json").write_text(json.dumps(raw))
    model = tmp_path / "m.json"
    argv = ["train", "logreg", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["-o", str(model), "--epsilon", "1", "--seed", "3", "--allow-seeded"]
    assert main(argv) == 0
    capsys.readouterr()
    stored = json.loads(model.read_text())["schema"]["columns"][0]
    assert stored["scale"] == "log"
    mf = read_model(model)
    assert mf.schema == Schema.from_dict(raw) and mf.schema.columns[0].scale == "log"

    new = pd.DataFrame({"income": [0.0, 900.0, 5_000.0, 30_000.0, 80_000.0, 400_000.0]})
    new["age"] = 40.0
    new.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", str(model), str(tmp_path / "new.csv"), "-o", str(out)]) == 0
    got = pd.read_csv(out)
    X, _ = mf.schema.without_label().encode(new)
    np.testing.assert_allclose(got["score"], mf.estimator.decision_function(X), rtol=1e-15)
    # the income feature is the log encoding (a linear one would put 30,000 at 0.03)
    assert X[3, 0] == mf.schema.columns[0].to_unit(30_000.0) and X[3, 0] > 0.7
    linear = Schema.from_dict({**raw, "columns": [{**cols[0], "scale": "linear"}, cols[1]]})
    X_lin, _ = linear.without_label().encode(new)
    assert not np.allclose(got["score"], mf.estimator.decision_function(X_lin))
    # trained on the log scale, it ranks incomes as they are ranked
    assert np.all(np.diff(got["score"]) > 0) or np.all(np.diff(got["score"]) < 0)
