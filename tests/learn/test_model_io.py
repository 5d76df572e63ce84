"""Model files: exact round trip, nothing private inside, tampering and bad input refused."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from ppdp.budget import Guarantee
from ppdp.data import NumericColumn, Schema
from ppdp.data.columns import CategoricalColumn, LabelSpec
from ppdp.exceptions import (
    DataValidationError,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.learn import PrivateLinearSVM, PrivateLogisticRegression
from ppdp.learn import _model_io as mio
from ppdp.learn._model_io import load_model, read_model, save_model, schema_fingerprint

N = 611  # an odd row count, to look for in the file
SENTINEL = 0.7316254981  # a value that occurs in one training cell only


@pytest.fixture(scope="module")
def table():
    """A table whose numeric cells are distinctive 10-digit decimals, plus the sentinel."""
    rng = np.random.default_rng(5)
    a = np.round(rng.uniform(0.0, 1.0, N), 10)
    b = np.round(rng.uniform(0.0, 1.0, N), 10)
    a[17] = SENTINEL
    colour = rng.choice(["red", "green", "blue"], N)
    label = np.where(a + 0.3 * (colour == "red") + rng.normal(0, 0.2, N) > 0.6, "yes", "no")
    df = pd.DataFrame({"a": a, "b": b, "colour": colour, "label": label})
    schema = Schema(
        columns=(
            NumericColumn("a", 0.0, 1.0),
            NumericColumn("b", 0.0, 1.0),
            CategoricalColumn("colour", ("red", "green", "blue")),
        ),
        label=LabelSpec("label", ("no", "yes")),
    )
    X, y = schema.encode(df)
    return df, schema, X, y


def _fit(cls, X, y, schema, **kw):
    return cls(epsilon=1.0, data_norm=schema.max_row_l2_norm, random_state=3, **kw).fit(X, y)


@pytest.mark.parametrize("cls", [PrivateLogisticRegression, PrivateLinearSVM])
@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_round_trip_predictions_identical(table, tmp_path, cls, perturbation) -> None:
    _, schema, X, y = table
    est = _fit(cls, X, y, schema, perturbation=perturbation, fit_intercept=True)
    path = save_model(est, tmp_path / "m.json", schema=schema)
    mf = read_model(path)
    back = mf.estimator
    assert type(back) is cls
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_array_equal(back.coef_, est.coef_)
    if hasattr(est, "predict_proba"):
        np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
    assert mf.guarantee == est.guarantee_ and isinstance(mf.guarantee, Guarantee)
    assert mf.schema == schema
    assert mf.schema_fingerprint == schema_fingerprint(schema)
    assert mf.feature_names == schema.feature_names
    assert mf.classes == ("no", "yes")
    assert mf.estimator_name == cls.__name__
    assert isinstance(load_model(path), cls)


def test_tuned_model_round_trips(table, tmp_path) -> None:
    _, schema, X, y = table
    est = _fit(PrivateLogisticRegression, X, y, schema, tuning=(1e-3, 1e-2, 1e-1))
    back = load_model(save_model(est, tmp_path / "t.json"))
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    assert back.regularization_ == est.regularization_


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_DIGESTS = ("sha256", "schema_fingerprint")  # hex strings: their digit runs are not numbers


def _numbers_in(text: str) -> set[float]:
    """Every number of a model file: JSON numbers, and numbers written inside strings."""
    found: set[float] = set()

    def walk(obj) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k not in _DIGESTS:
                    walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)
        elif isinstance(obj, str):
            found.update(float(t) for t in _NUMBER.findall(obj))
        elif isinstance(obj, int | float) and not isinstance(obj, bool):
            found.add(float(obj))

    walk(json.loads(text))
    return found


def _paths_with_value(obj, value, path=""):
    """JSON paths whose value equals ``value`` (numbers only)."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths_with_value(v, value, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths_with_value(v, value, f"{path}[{i}]")
    elif isinstance(obj, int | float) and not isinstance(obj, bool) and obj == value:
        out.append(path)
    return out


def _leaks(text: str, df, X, y) -> list[str]:
    """What of the training data shows in ``text``: cells, class counts, sums, means."""
    found = []
    numbers = _numbers_in(text)
    if str(SENTINEL) in text:
        found.append("sentinel")
    cells = set(np.round(df[["a", "b"]].to_numpy().ravel(), 10).tolist())
    if cells & numbers:
        found.append("training cells")
    counts = np.bincount(y, minlength=2)
    stats = [*counts.tolist(), *X.sum(axis=0).tolist(), *X.mean(axis=0).tolist()]
    stats += [float(X[y == k].sum()) for k in (0, 1)]
    found += [f"statistic {s!r}" for s in stats if s not in (0.0, 1.0) and s in numbers]
    # the row count n is the only fact about the data allowed, and only inside the
    # guarantee (public under replace-one neighbours)
    where = _paths_with_value(json.loads(text), N)
    found += [f"n at {p}" for p in where if not p.startswith((".guarantee.", ".model.guarantee."))]
    return found


@pytest.mark.parametrize("cls", [PrivateLogisticRegression, PrivateLinearSVM])
def test_nothing_private_in_the_file(table, tmp_path, cls, monkeypatch) -> None:
    df, schema, X, y = table
    est = _fit(cls, X, y, schema, tuning=(1e-3, 1e-2))
    path = save_model(est, tmp_path / "m.json", schema=schema)
    text = path.read_text()
    assert _leaks(text, df, X, y) == []
    assert N in _numbers_in(text)  # n is there (in the guarantee)
    # positive control: a model dict that carries a sentinel cell, the column means or n
    # under innocent names is caught by the same check
    good = est.to_model_dict()
    for extra, what in [
        ({"offset": SENTINEL}, "sentinel"),
        ({"centre": X.mean(axis=0).tolist()}, "statistic"),
        ({"size": N}, "n at .model.size"),
    ]:
        monkeypatch.setattr(est, "to_model_dict", lambda extra=extra: {**good, **extra})
        leaked = _leaks(save_model(est, tmp_path / "bad.json").read_text(), df, X, y)
        assert any(what in item for item in leaked), (what, leaked)


def test_private_keys_and_non_finite_values_are_refused(table, tmp_path, monkeypatch) -> None:
    _, schema, X, y = table
    est = _fit(PrivateLogisticRegression, X, y, schema)
    good = est.to_model_dict()
    for bad, match in [
        ({**good, "n_iter": 7}, "n_iter"),
        ({**good, "model": {**good["model"], "objective": 0.31}}, "objective"),
        ({**good, "model": {**good["model"], "coef": [float("nan")]}}, "finite"),
        ({**good, "tuning_mistakes_": [3, 4]}, "tuning_mistakes_"),
    ]:
        monkeypatch.setattr(est, "to_model_dict", lambda bad=bad: bad)
        with pytest.raises(ParameterError, match=match):
            save_model(est, tmp_path / "m.json")
        assert not (tmp_path / "m.json").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_unfitted_wrong_type_wrong_suffix_wrong_width(table, tmp_path) -> None:
    _, schema, X, y = table
    with pytest.raises(NotFittedError, match="not fitted"):
        save_model(PrivateLogisticRegression(data_norm=1.0), tmp_path / "m.json")
    with pytest.raises(ParameterTypeError, match="ppdp learners"):
        save_model(object(), tmp_path / "m.json")
    est = _fit(PrivateLogisticRegression, X, y, schema)
    with pytest.raises(ParameterError, match=r"\.json"):
        save_model(est, tmp_path / "m.pkl")
    narrow = Schema(columns=(NumericColumn("a", 0.0, 1.0),), label=LabelSpec("label", (0, 1)))
    with pytest.raises(ParameterError, match="schema encodes 1 feature columns but the model"):
        save_model(est, tmp_path / "m.json", schema=narrow)
    assert list(tmp_path.iterdir()) == []


def test_classes_must_match_the_schema(table, tmp_path) -> None:
    _, schema, X, y = table
    named = _fit(PrivateLogisticRegression, X, np.asarray(schema.classes)[y], schema)
    back = read_model(save_model(named, tmp_path / "named.json", schema=schema)).estimator
    np.testing.assert_array_equal(back.predict(X), named.predict(X))  # class names kept
    other = _fit(PrivateLogisticRegression, X, np.where(y == 1, "b", "a"), schema)
    with pytest.raises(ParameterError, match="neither the schema's class codes"):
        save_model(other, tmp_path / "other.json", schema=schema)
    assert not (tmp_path / "other.json").exists()


def test_a_failed_save_keeps_the_previous_file(table, tmp_path, monkeypatch) -> None:
    _, schema, X, y = table
    est = _fit(PrivateLogisticRegression, X, y, schema)
    path = save_model(est, tmp_path / "m.json", schema=schema)
    before = path.read_bytes()
    monkeypatch.setattr(est, "to_model_dict", lambda: {"n_iter": 1})
    with pytest.raises(ParameterError):
        save_model(est, path)
    assert path.read_bytes() == before


def test_tampered_and_foreign_files_are_refused(table, tmp_path) -> None:
    _, schema, X, y = table
    est = _fit(PrivateLinearSVM, X, y, schema)
    path = save_model(est, tmp_path / "m.json", schema=schema)
    data = json.loads(path.read_text())

    def write(obj, name):
        p = tmp_path / name
        p.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
        return p

    edited = json.loads(json.dumps(data))
    edited["model"]["model"]["coef"][0] += 1.0  # a bigger weight, checksum unchanged
    with pytest.raises(DataValidationError, match="edited or damaged"):
        read_model(write(edited, "edited.json"))
    with pytest.raises(DataValidationError, match="not valid JSON"):
        read_model(write("{oops", "bad.json"))
    with pytest.raises(DataValidationError, match="not a ppdp model file"):
        read_model(write({"format": "other"}, "other.json"))
    with pytest.raises(DataValidationError, match="format_version 2"):
        read_model(write({**data, "format_version": 2}, "v2.json"))
    with pytest.raises(DataValidationError, match="lacks the key"):
        read_model(write({k: v for k, v in data.items() if k != "guarantee"}, "short.json"))
    foreign = {**data, "estimator": "os.system"}
    body = {k: foreign[k] for k in mio._KEYS}
    foreign["sha256"] = mio.hashlib.sha256(mio._canonical(body).encode()).hexdigest()
    with pytest.raises(DataValidationError, match=r"unknown estimator 'os\.system'"):
        read_model(write(foreign, "foreign.json"))
    with pytest.raises(FileNotFoundError):
        read_model(tmp_path / "missing.json")


def test_schema_fingerprint_tracks_the_declaration() -> None:
    s1 = Schema(columns=(NumericColumn("a", 0, 1),))
    s2 = Schema(columns=(NumericColumn("a", 0, 2),))
    assert schema_fingerprint(s1) == schema_fingerprint(Schema.from_dict(s1.to_dict()))
    assert schema_fingerprint(s1) != schema_fingerprint(s2)
    with pytest.raises(ParameterTypeError):
        schema_fingerprint({"columns": []})  # type: ignore[arg-type]


def test_rbf_models_round_trip(table, tmp_path) -> None:
    rbf = pytest.importorskip("ppdp.learn.rbf_svm")
    _, schema, X, y = table
    est = rbf.PrivateRBFSVM(epsilon=1.0, n_components=20, random_state=4).fit(X, y)
    back = read_model(save_model(est, tmp_path / "r.json", schema=schema)).estimator
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(back.rho_, est.rho_)
