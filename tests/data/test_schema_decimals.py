"""The declared ``decimals`` precision of numeric columns: validation, files, decode, draft."""

from __future__ import annotations

import io
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.data import draft_schema
from ppdp.data.schema import LabelSpec, NumericColumn, Schema
from ppdp.exceptions import PrivacyLeakWarning, SchemaError


def _max_decimals(text_values: list[str]) -> int:
    """Most digits after the point among plain decimal strings (no exponent allowed)."""
    worst = 0
    for t in text_values:
        assert re.fullmatch(r"-?\d+(\.\d+)?", t), t
        worst = max(worst, len(t.split(".")[1]) if "." in t else 0)
    return worst


# -- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"decimals": True}, "decimals (True) must be an integer from 0 to 12"),
        ({"decimals": -1}, "decimals (-1) must be an integer from 0 to 12"),
        ({"decimals": 13}, "decimals (13) must be an integer from 0 to 12"),
        ({"decimals": 1.0}, "decimals (1.0) must be an integer from 0 to 12"),
        ({"decimals": "2"}, "decimals ('2') must be an integer from 0 to 12"),
        (
            {"decimals": 2, "integer": True},
            "integer already rounds to whole numbers); drop one",
        ),
    ],
)
def test_bad_decimals_are_one_line_naming_the_column(kwargs: dict, words: str) -> None:
    with pytest.raises(SchemaError) as exc:
        NumericColumn("bmi", 0, 100, **kwargs)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("column 'bmi': ")
    assert words in msg


def test_bad_decimals_in_a_schema_dict_is_one_line() -> None:
    raw = {"columns": [{"name": "bmi", "type": "numeric", "lower": 0, "upper": 80, "decimals": -2}]}
    with pytest.raises(SchemaError, match=r"^column 'bmi': decimals \(-2\) must be an integer"):
        Schema.from_dict(raw)


def test_decimals_is_the_last_field_and_accepts_numpy_integers() -> None:
    col = NumericColumn("x", 0.0, 1.0, False, 0.5, np.int64(3))
    assert col.decimals == 3 and type(col.decimals) is int
    assert col.impute == 0.5
    assert NumericColumn("x", 0, 1).decimals is None
    assert NumericColumn("x", 0, 1, decimals=0).decimals == 0
    assert NumericColumn("x", 0, 1, decimals=12).decimals == 12


# -- files --------------------------------------------------------------------------------


def _schema() -> Schema:
    return Schema(
        columns=(
            NumericColumn("bmi", 10.0, 60.0, decimals=1),
            NumericColumn("income", 0.0, 1e6, decimals=2),
            NumericColumn("age", 17, 90, integer=True),
            NumericColumn("score", -1.0, 1.0),
        ),
        label=LabelSpec("y", ("a", "b")),
    )


def test_to_dict_writes_decimals_only_when_declared() -> None:
    cols = _schema().to_dict()["columns"]
    assert cols[0]["decimals"] == 1
    assert cols[1]["decimals"] == 2
    assert "decimals" not in cols[2]
    assert "decimals" not in cols[3]
    assert "decimals" not in NumericColumn("x", 0, 1).to_dict()


def test_round_trip_through_dict_and_files(tmp_path) -> None:
    schema = _schema()
    again = Schema.from_dict(schema.to_dict())
    assert again == schema
    assert [getattr(c, "decimals", None) for c in again.columns] == [1, 2, None, None]
    for suffix in (".json", ".yaml"):
        path = schema.to_file(tmp_path / f"schema{suffix}")
        assert "decimals" in path.read_text(encoding="utf-8")
        assert Schema.from_file(path) == schema


def test_a_schema_without_decimals_is_unchanged_in_its_file(tmp_path) -> None:
    plain = Schema(columns=(NumericColumn("score", -1.0, 1.0),))
    text = plain.to_file(tmp_path / "s.json").read_text(encoding="utf-8")
    assert "decimals" not in text


# -- decode -------------------------------------------------------------------------------


def test_decode_rounds_to_the_declared_decimals() -> None:
    schema = Schema(columns=(NumericColumn("bmi", 0.0, 100.0, decimals=1),))
    x = np.array([[0.27889309762269264], [0.0], [1.0], [0.5000049]])
    out = schema.decode(x)["bmi"]
    assert out.tolist() == [27.9, 0.0, 100.0, 50.0]
    assert repr(float(out.iloc[0])) == "27.9"


def test_decode_rounding_stays_within_the_bounds() -> None:
    # Bounds off the 1-decimal grid: 10.06 and 10.055 round to 10.1, above upper, and are
    # clipped back to upper; lower 0.06 rounds up to 0.1, which is inside.
    col = NumericColumn("v", 0.06, 10.06, decimals=1)
    schema = Schema(columns=(col,))
    x = np.array([[1.0], [0.9995], [0.0]])
    out = schema.decode(x)["v"].tolist()
    assert out[0] == 10.06  # the bound itself, though off the grid
    assert out[1] == 10.06  # 10.055 rounds to 10.1 > upper: clipped back to upper
    assert out[2] == pytest.approx(0.1)  # 0.06 rounds to 0.1, still inside the bounds
    assert all(col.lower <= v <= col.upper for v in out)


def test_decoded_csv_text_has_at_most_the_declared_decimals() -> None:
    schema = Schema(
        columns=(
            NumericColumn("bmi", 15.0, 45.0, decimals=1),
            NumericColumn("income", 0.0, 250000.0, decimals=2),
            NumericColumn("rate", 0.0, 1.0, decimals=0),
        )
    )
    rng = np.random.default_rng(0)
    frame = schema.decode(rng.uniform(size=(500, 3)))
    text = frame.to_csv(index=False)
    body = pd.read_csv(io.StringIO(text), dtype=str)
    assert _max_decimals(body["bmi"].tolist()) <= 1
    assert _max_decimals(body["income"].tolist()) <= 2
    assert _max_decimals(body["rate"].tolist()) <= 1  # 0.0 / 1.0: a float column
    assert set(frame["rate"]) <= {0.0, 1.0}


def test_decode_without_decimals_is_not_rounded() -> None:
    schema = Schema(columns=(NumericColumn("bmi", 0.0, 100.0),))
    out = schema.decode(np.array([[0.27889309762269264]]))["bmi"]
    assert out.iloc[0] == pytest.approx(27.889309762269264, abs=1e-12)


# -- draft --------------------------------------------------------------------------------


def _draft(df: pd.DataFrame) -> Schema:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return draft_schema(df, max_integer_codes=0)


def test_draft_proposes_the_fewest_decimals() -> None:
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "income": [30007.09, 8654.7, 12000.0, 4410.15] * 10,
            "bmi": [21.7, 28.0, 33.1, 19.9] * 10,
            "noise": rng.normal(size=40),
            "thousandths": [0.001, 0.25, 0.5, 0.125] * 10,
            "age": [20, 30, 40, 50] * 10,
        }
    )
    cols = {c.name: c for c in _draft(df).columns}
    assert cols["income"].decimals == 2
    assert cols["bmi"].decimals == 1
    assert cols["noise"].decimals is None
    assert cols["thousandths"].decimals == 3
    assert cols["age"].integer and cols["age"].decimals is None


def test_draft_decimals_read_from_a_csv_text() -> None:
    text = "bmi,w\n" + "21.7,0.1\n28.0,0.2\n30.3,0.30000000000000004\n22.1,0.7\n" * 5
    df = pd.read_csv(io.StringIO(text))
    cols = {c.name: c for c in _draft(df).columns}
    assert cols["bmi"].decimals == 1
    assert cols["w"].decimals == 1  # 0.1 + 0.2 is 0.3 within floating tolerance


def test_draft_with_values_finer_than_six_decimals_proposes_none() -> None:
    df = pd.DataFrame({"tiny": [1e-7, 0.5, 0.25, 0.75] * 5})
    assert _draft(df).columns[0].decimals is None


# -- end to end ---------------------------------------------------------------------------


def test_synthetic_release_has_at_most_the_declared_decimals() -> None:
    from ppdp.publish import TableSynthesizer

    rng = np.random.default_rng(2)
    n = 300
    bmi = np.round(rng.normal(27.0, 4.0, size=n).clip(15.0, 45.0), 1)
    df = pd.DataFrame({"bmi": bmi, "y": np.where(bmi > 27.0, "high", "low")})
    schema = Schema(
        columns=(NumericColumn("bmi", 15.0, 45.0, decimals=1),),
        label=LabelSpec("y", ("high", "low")),
    )
    data = TableSynthesizer(1.0, schema, random_state=0).fit(df).release_.data
    assert len(data) > 0
    values = data["bmi"].to_numpy(dtype=float)
    assert np.all((values >= 15.0) & (values <= 45.0))
    assert np.allclose(values, np.round(values, 1), rtol=0, atol=1e-12)
    assert _max_decimals([repr(float(v)) for v in values]) <= 1
