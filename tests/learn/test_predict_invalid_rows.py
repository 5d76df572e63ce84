"""``predict_file(on_invalid=...)`` / ``ppdp predict --on-invalid``: a few bad rows.

A value the model's schema refuses (an undeclared category or class code, a non-number, a
missing value under ``nan_policy="error"``) refuses the table in one line by default; with
``"mask"`` every row is predicted, the masked ones named in a ``masked`` column, and the
other rows' predictions are those of the clean rows alone.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.data.schema import Schema
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.learn.files import predict_file, train_model_file

SCHEMA = {
    "columns": [
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
        {"name": "dx", "type": "categorical", "categories": ["A", "B", "C"]},
        {"name": "sex", "type": "categorical", "categories": [1, 2]},
    ],
    "label": {"name": "outcome", "classes": ["no", "yes"]},
}
# Row -> (column, bad value): an undeclared diagnosis, an undeclared class code, a
# non-number, a missing category; row 9 holds two.
BAD = {
    3: [("dx", "Z99")],
    7: [("sex", 3)],
    9: [("age", "unknown"), ("dx", "Q")],
    14: [("dx", None)],
}


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    dx = rng.choice(["A", "B", "C"], n)
    sex = rng.choice([1, 2], n)
    yes = (age > 50) ^ (dx == "C")
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "age": age,
            "dx": dx,
            "sex": sex,
            "outcome": np.where(yes, "yes", "no"),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("predict_invalid")
    Schema.from_dict(SCHEMA).to_file(root / "s.json")
    _table(400, 0).to_csv(root / "train.csv", index=False)
    new = _table(20, 1).astype({"age": object, "dx": object, "sex": object})
    new.to_csv(root / "clean.csv", index=False)
    for row, cells in BAD.items():
        for col, value in cells:
            new.loc[row, col] = value
    new.to_csv(root / "new.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded fit without a ledger: warned, expected
        train_model_file(
            "logreg",
            root / "train.csv",
            schema=root / "s.json",
            output=root / "model.json",
            epsilon=2.0,
            random_state=0,
        )
    return root


def test_default_refuses_in_one_line_naming_column_values_and_rows(files, tmp_path):
    out = tmp_path / "p.csv"
    with pytest.raises(DataValidationError) as info:
        predict_file(files / "model.json", files / "new.csv", output=out)
    msg = str(info.value)
    assert "\n" not in msg
    # age comes first in the schema: its value and count; the other columns are named.
    assert "column 'age' holds 1 value(s)" in msg and "'unknown'" in msg
    assert "'dx'" in msg and "'sex'" in msg
    assert f"{len(BAD)} row(s) affected" in msg and 'on_invalid="mask"' in msg
    assert not out.exists()


def test_mask_predicts_every_row_and_flags_exactly_the_bad_ones(files, tmp_path):
    res = predict_file(
        files / "model.json", files / "new.csv", output=tmp_path / "p.csv", on_invalid="mask",
        keep=["id"],
    )  # fmt: skip
    got = pd.read_csv(res.path, keep_default_na=False)
    assert res.n_rows == len(got) == 20 and list(got["id"]) == list(range(20))
    assert res.columns == ("id", "prediction", "score", "probability", "masked")
    flagged = {i: m for i, m in enumerate(got["masked"]) if m}
    assert flagged == {r: ",".join(c for c, _ in cells) for r, cells in BAD.items()}
    assert res.masked == {"age": 1, "dx": 3, "sex": 1} and res.n_masked == len(BAD)
    # The unflagged rows: the same predictions as the clean rows predicted alone.
    clean = pd.read_csv(files / "new.csv").drop(index=list(BAD))
    clean.to_csv(tmp_path / "only_clean.csv", index=False)
    alone = pd.read_csv(
        predict_file(
            files / "model.json", tmp_path / "only_clean.csv", output=tmp_path / "c.csv"
        ).path
    )
    ok = got[got["masked"] == ""].reset_index(drop=True)
    assert list(ok["prediction"]) == list(alone["prediction"])
    np.testing.assert_array_equal(ok["score"].to_numpy(), alone["score"].to_numpy())
    # A masked row is predicted as the total mode's substitute: row 3's dx -> "A" (the
    # first declared category), row 9's age -> 50 (the bounds' midpoint).
    sub = pd.read_csv(files / "new.csv").loc[[3, 9]].assign(dx="A")
    sub.loc[9, "age"] = "50"
    sub.to_csv(tmp_path / "sub.csv", index=False)
    subst = pd.read_csv(
        predict_file(files / "model.json", tmp_path / "sub.csv", output=tmp_path / "s.csv").path
    )
    np.testing.assert_array_equal(got.loc[[3, 9], "score"].to_numpy(), subst["score"].to_numpy())


def test_a_clean_table_is_the_same_with_mask(files, tmp_path):
    a = predict_file(files / "model.json", files / "clean.csv", output=tmp_path / "a.csv")
    b = predict_file(
        files / "model.json", files / "clean.csv", output=tmp_path / "b.csv", on_invalid="mask"
    )
    pa, pb = pd.read_csv(a.path), pd.read_csv(b.path, keep_default_na=False)
    assert a.columns == ("prediction", "score", "probability") and b.masked == {}
    assert (pb["masked"] == "").all() and pa.equals(pb.drop(columns="masked"))


@pytest.mark.parametrize("bad", ["drop", "", None, True])
def test_a_bad_on_invalid_is_one_line(files, tmp_path, bad):
    out = tmp_path / "p.csv"
    with pytest.raises(ParameterError, match=r"^on_invalid \(.*\) must be 'raise' .* or 'mask'"):
        predict_file(files / "model.json", files / "clean.csv", output=out, on_invalid=bad)
    assert not out.exists()


def test_cli_exit_codes_and_the_count_line(files, tmp_path, capsys):
    out = tmp_path / "p.csv"
    argv = ["predict", str(files / "model.json"), str(files / "new.csv"), "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--on-invalid mask" in err and 'on_invalid="mask"' not in err
    assert "'unknown'" in err and not out.exists()
    assert main([*argv, "--on-invalid", "mask"]) == 0
    captured = capsys.readouterr()
    assert "masked 4 row(s), per column: 'age': 1, 'dx': 3, 'sex': 1" in captured.err
    assert len(pd.read_csv(out)) == 20
    with pytest.raises(SystemExit) as info:  # argparse: the flag, the value, the choices
        main([*argv, "--on-invalid", "skip", "--force"])
    assert info.value.code == 2
    assert "--on-invalid: invalid choice: 'skip'" in capsys.readouterr().err


def test_parquet_dataset_with_mask(files, tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    new = pd.read_csv(files / "new.csv").astype({"age": str})
    new.loc[14, "dx"] = None
    (tmp_path / "ds").mkdir()
    new.iloc[:10].to_parquet(tmp_path / "ds" / "part-0.parquet", index=False)
    new.iloc[10:].to_parquet(tmp_path / "ds" / "part-1.parquet", index=False)
    model = files / "model.json"
    with pytest.raises(DataValidationError, match='on_invalid="mask"'):
        predict_file(model, tmp_path / "ds", output=tmp_path / "no", scheduler="sync")
    assert not (tmp_path / "no").exists()
    res = predict_file(
        model, tmp_path / "ds", output=tmp_path / "pred", scheduler="sync", on_invalid="mask"
    )
    flat = predict_file(model, files / "new.csv", output=tmp_path / "f.csv", on_invalid="mask")
    got = pd.read_parquet(tmp_path / "pred")
    want = pd.read_csv(flat.path, keep_default_na=False)
    assert res.n_rows == 20 and res.masked == flat.masked and res.n_masked == len(BAD)
    assert list(got["masked"]) == list(want["masked"])
    np.testing.assert_array_equal(got["score"].to_numpy(), want["score"].to_numpy())


def test_mask_with_a_model_trained_on_a_dataset(files, tmp_path):
    # Trained on Parquet, the learner holds schema= and encodes raw rows itself: with mask
    # its scores come from the total mode's encoding, equal to its own on the clean rows.
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    (tmp_path / "train").mkdir()
    pd.read_csv(files / "train.csv").to_parquet(tmp_path / "train" / "p.parquet", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = train_model_file(
            "logreg",
            tmp_path / "train",
            schema=files / "s.json",
            output=tmp_path / "m.json",
            epsilon=2.0,
            random_state=0,
            scheduler="sync",
        )
    assert model.estimator.schema is not None
    a = pd.read_csv(predict_file(model.path, files / "clean.csv", output=tmp_path / "a.csv").path)
    res = predict_file(model.path, files / "new.csv", output=tmp_path / "b.csv", on_invalid="mask")
    b = pd.read_csv(res.path, keep_default_na=False)
    ok = [i for i in range(20) if i not in BAD]
    assert (b.loc[ok, "masked"] == "").all() and res.n_masked == len(BAD)
    np.testing.assert_allclose(b.loc[ok, "score"], a.loc[ok, "score"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.loc[ok, "probability"], a.loc[ok, "probability"], rtol=1e-12)
    assert list(b.loc[ok, "prediction"]) == list(a.loc[ok, "prediction"])


@pytest.mark.parametrize("nan_policy", ["error", "impute"])
def test_flagged_rows_are_those_the_encoder_refuses(nan_policy):
    # The flags follow the encoder's own rules: a row is flagged exactly when encoding it
    # alone with "raise" fails, and the columns named are those where mask changed a value.
    from ppdp.data.encoding import encode_flagging_rows

    d = {**SCHEMA, "missing_values": ["?"], "nan_policy": nan_policy}
    if nan_policy == "impute":
        d["columns"] = [
            {**SCHEMA["columns"][0], "impute": 40},
            {**SCHEMA["columns"][1], "impute": "B"},
            {**SCHEMA["columns"][2], "impute": 1},
        ]
    features = Schema.from_dict(d).without_label()
    rng = np.random.default_rng(3)
    n = 60
    frame = pd.DataFrame(
        {
            "age": rng.choice(np.array([20, 35.5, 99, 150, -3, "x", "?", None, "inf"], object), n),
            "dx": rng.choice(np.array(["A", "B", "C", "Z", "?", None, "a"], object), n),
            "sex": rng.choice(np.array([1, 2, 3, None, "?", 0], object), n),
        }
    )
    *_, refused = encode_flagging_rows(features, frame)
    flagged = np.logical_or.reduce(list(refused.values()))
    for i in range(n):
        row = frame.iloc[[i]]
        try:
            features.encode(row)
            raised = False
        except DataValidationError:
            raised = True
        assert raised == flagged[i], (i, row.to_dict("records"))
        _, _, rep = features.encode(row, on_invalid="mask", return_report=True)
        for col in features.column_names:
            flag = int(col in refused and refused[col][i])
            # Under "impute" a non-number is imputed by mask, not counted as masked.
            assert rep.masked.get(col, 0) == flag or (nan_policy == "impute" and col == "age")
    assert 0 < flagged.sum() < n


def test_imputed_values_are_counted_and_predicted_for_the_constant(tmp_path, capsys):
    # nan_policy "impute" fills a missing age with its declared constant: not a masked
    # value (the schema declares it), but counted, said on stderr, and predicted as if the
    # constant had been written there.
    d = {**SCHEMA, "nan_policy": "impute"}
    d["columns"] = [
        {**SCHEMA["columns"][0], "impute": 40},
        {**SCHEMA["columns"][1], "impute": "B"},
        {**SCHEMA["columns"][2], "impute": 1},
    ]
    Schema.from_dict(d).to_file(tmp_path / "s.json")
    _table(400, 0).to_csv(tmp_path / "train.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded fit without a ledger: warned, expected
        train_model_file("logreg", tmp_path / "train.csv", schema=tmp_path / "s.json",
                         output=tmp_path / "m.json", epsilon=2.0, random_state=0)  # fmt: skip
    new = _table(20, 1).astype({"age": object})
    filled = new.copy()
    new.loc[[2, 5], "age"] = None
    filled.loc[[2, 5], "age"] = 40
    new.to_csv(tmp_path / "new.csv", index=False)
    filled.to_csv(tmp_path / "filled.csv", index=False)
    got = predict_file(tmp_path / "m.json", tmp_path / "new.csv", output=tmp_path / "p.csv")
    ref = predict_file(tmp_path / "m.json", tmp_path / "filled.csv", output=tmp_path / "r.csv")
    assert dict(got.imputed) == {"age": 2} and dict(ref.imputed) == {}
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "p.csv"), pd.read_csv(tmp_path / "r.csv"))
    argv = ["predict", str(tmp_path / "m.json"), str(tmp_path / "new.csv")]
    assert main([*argv, "-o", str(tmp_path / "q.csv")]) == 0
    assert "filled missing values with the schema's impute constants: 'age': 2" in (
        capsys.readouterr().err
    )
