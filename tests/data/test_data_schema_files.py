"""``ppdp.data.schema_files``: the library side of ``ppdp schema draft`` and ``check``."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.data.schema_files import (
    check_table,
    check_table_lines,
    clipping_lines,
    describe_schema,
    draft_schema_file,
    identifier_warnings,
)
from ppdp.exceptions import ParameterError

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 50},
            {"name": "city", "type": "categorical", "categories": ["Oslo", "Bergen"]},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
    }
)


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "age": [10, 60, 70, 20],
            "city": ["Oslo", "Rome", "Rome", "Paris"],
            "y": ["no", "yes", "maybe", "no"],
        }
    ).to_csv(path, index=False)
    return path


def test_draft_writes_the_schema_and_returns_the_leak_warning(tmp_path, table) -> None:
    out = tmp_path / "sub" / "s.json"
    result = draft_schema_file(table, output=out, label="y")
    assert result.path == out and Schema.from_file(out).column_names == ("age", "city", "y")
    assert any(line.startswith("PrivacyLeakWarning: ") for line in result.warnings)
    assert all("\n" not in line for line in result.warnings)
    assert result.written_line() == f"wrote {out} (2 columns, label 'y')"


def test_draft_without_output_writes_nothing(tmp_path, table) -> None:
    result = draft_schema_file(table)
    assert result.path is None and len(result.schema.columns) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_draft_refuses_a_bad_suffix_and_an_existing_output(tmp_path, table) -> None:
    with pytest.raises(ParameterError, match=r"--output .* must end in \.json, \.yaml or \.yml"):
        draft_schema_file(table, output=tmp_path / "s.txt")
    existing = tmp_path / "s.json"
    existing.write_text("{}")
    with pytest.raises(ParameterError):
        draft_schema_file(table, output=existing)
    assert existing.read_text() == "{}"
    assert draft_schema_file(table, output=existing, force=True).path == existing


def test_describe_schema() -> None:
    assert describe_schema(SCHEMA) == [
        "  columns: 2 (1 numeric, 1 categorical); label 'y' with 2 classes",
        f"  encoded features: {SCHEMA.n_features} "
        f"({SCHEMA.layout(include_label=True).n_features} with the label block)",
        f"  max row L2 norm: {SCHEMA.max_row_l2_norm:.6g}",
    ]


def test_check_table_lines_lists_undeclared_values_and_clipping(table) -> None:
    lines = check_table_lines(SCHEMA, table, max_values=1)
    assert lines[0].startswith(f"{table}: 4 rows")
    assert "  city: 3 values, 2 distinct: 'Rome' (2), and 1 more" in lines
    assert "  y: 1 values, 1 distinct: 'maybe' (1)" in lines
    at = lines.index("values clipped to the declared bounds:")
    age = lines[at + 2].split()
    assert age[0] == "age" and age[-2:] == ["2", "50.0%"]


def test_check_table_lines_refuses_max_values_below_one(table) -> None:
    with pytest.raises(ParameterError, match=r"--max-values \(0\)"):
        check_table_lines(SCHEMA, table, max_values=0)


def test_clipping_lines_give_count_and_share_per_numeric_column() -> None:
    report = SimpleNamespace(n_rows=8, clipped={"age": 2})
    lines = clipping_lines(SCHEMA, report)
    assert lines[0].split() == ["column", "declared", "bounds", "clipped", "share"]
    assert lines[1].split() == ["age", "[0,", "50]", "2", "25.0%"]


def _clinic(n: int = 130, seed: int = 0) -> pd.DataFrame:
    """A small clinic table: an ID, 13 diagnosis codes, a skewed bmi with gaps, a region."""
    import numpy as np

    rng = np.random.default_rng(seed)
    bmi = np.round(rng.gamma(2.0, 3.0, n) + 15.0, 1)
    bmi[:7] = np.nan
    region = rng.choice(["north", "south", "east"], n).astype(object)
    region[7:9] = None
    return pd.DataFrame(
        {
            "visit_id": np.arange(100_000, 100_000 + n),
            "dx_code": np.arange(n) % 13,
            "bmi": bmi,
            "region": region,
            "readmit": rng.integers(0, 2, n),
        }
    )


def test_draft_names_missing_values_and_imputes_declared_values_only(tmp_path) -> None:
    path = tmp_path / "clinic.csv"
    df = _clinic()
    df.to_csv(path, sep=";", index=False)
    out = tmp_path / "s.json"
    result = draft_schema_file(path, output=out, label="readmit", max_integer_codes=12)
    (line,) = [w for w in result.warnings if "missing values in" in w]
    assert line.startswith("PPDPWarning: missing values in 'bmi' (7), 'region' (2):")
    assert "never from the data" in line
    schema = Schema.from_file(out)
    assert schema.nan_policy == "impute"
    bmi = schema.column("bmi")
    # the middle of the (drafted) bounds, not the data's mean: a mean would leak
    assert bmi.impute == pytest.approx((bmi.lower + bmi.upper) / 2, abs=1e-6)
    assert bmi.impute != pytest.approx(df["bmi"].mean(), abs=0.05)
    assert schema.column("region").impute == schema.column("region").categories[0]
    assert schema.column("dx_code").impute == 6  # integer column: rounded down, written as int
    assert '"impute": 6\n' in out.read_text()
    # the draft is accepted by the release path it was made for
    X, y = schema.encode(df)
    assert X.shape[0] == len(df) and y is not None


def test_draft_names_integer_columns_drafted_as_numeric(tmp_path) -> None:
    path = tmp_path / "c.csv"
    _clinic().to_csv(path, index=False)
    result = draft_schema_file(path, max_integer_codes=12)
    (line,) = [w for w in result.warnings if "drafted as numeric" in w]
    assert "'dx_code' (13 values)" in line and "declare it categorical" in line
    assert "bmi" not in line and "visit_id" not in line  # not integers / left out as an ID
    # at 13 codes it is categorical, and not named again
    result = draft_schema_file(path, max_integer_codes=13)
    assert not [w for w in result.warnings if "drafted as numeric" in w]


def test_draft_says_a_missing_label_cannot_be_imputed(tmp_path) -> None:
    path = tmp_path / "c.csv"
    df = _clinic()
    df["readmit"] = df["readmit"].astype(float)
    df.loc[[3, 4, 5], "readmit"] = float("nan")
    df.to_csv(path, index=False)
    warned = draft_schema_file(path, label="readmit").warnings
    assert (
        "PPDPWarning: label 'readmit' has 3 missing value(s): a missing class cannot be "
        "imputed; drop those rows before any release"
    ) in warned


def test_draft_of_a_true_false_label_reads_back(tmp_path) -> None:
    path = tmp_path / "b.csv"
    pd.DataFrame({"x": [0.5, 1.5, 2.5, 3.5], "flag": [True, False, True, False]}).to_csv(
        path, index=False
    )
    out = tmp_path / "s.yaml"
    draft_schema_file(path, output=out, label="flag")
    schema = Schema.from_file(out)  # files refuse booleans among classes: 0/1 match them
    assert schema.classes == (0, 1)
    assert list(schema.encode(pd.read_csv(path))[1]) == [1, 0, 1, 0]


def test_check_table_collects_every_refusal(tmp_path) -> None:
    path = tmp_path / "c.csv"
    df = _clinic()
    df.to_csv(path, index=False)
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "bmi", "type": "numeric", "lower": 10, "upper": 60},
                {"name": "region", "type": "categorical", "categories": ["north", "south"]},
            ],
            "label": {"name": "readmit", "classes": [0, 1]},
        }
    )
    result = check_table(schema, path)
    assert result.exit_code == 2
    n_east = int((df["region"] == "east").sum())
    assert [r.split(";")[0] for r in result.refusals] == [
        "column 'bmi': 7 missing or non-finite value(s) (NaN, inf or a missing-value token)",
        f"column 'region': {n_east} value(s) are not among the declared categories",
        "column 'region': 2 missing or non-finite value(s) (NaN, inf or a missing-value token)",
    ]
    lines = check_table_lines(schema, path)
    at = lines.index("a release would refuse this data:")
    assert lines[at + 1 :] == [f"  {r}" for r in result.refusals]
    # the report is kept: the clipping table is computed despite the refusals
    assert "values clipped to the declared bounds:" in result.lines
    assert any(line.split()[:1] == ["bmi"] for line in result.lines)
    # declared as a release would accept it: nothing refused, exit 0
    fine = Schema.from_dict(
        {
            "columns": [
                {"name": "bmi", "type": "numeric", "lower": 10, "upper": 60, "impute": 25},
                {
                    "name": "region",
                    "type": "categorical",
                    "categories": ["north", "south", "east"],
                    "impute": "north",
                },
            ],
            "label": {"name": "readmit", "classes": [0, 1]},
            "nan_policy": "impute",
        }
    )
    result = check_table(fine, path)
    assert (result.refusals, result.exit_code) == ([], 0)


def test_identifier_warnings_flag_unique_integer_or_text_features_only() -> None:
    df = _clinic()
    df["code"] = [f"P{i:05d}" for i in range(len(df))]
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "visit_id", "type": "numeric", "lower": 1e5, "upper": 2e5},
                {"name": "bmi", "type": "numeric", "lower": 10, "upper": 60},
                {"name": "dx_code", "type": "numeric", "lower": 0, "upper": 12},
                {"name": "code", "type": "categorical", "categories": list(df["code"])},
            ],
            "nan_policy": "error",
        }
    )
    lines = identifier_warnings(schema, df)
    assert lines == [
        f"column 'visit_id': {len(df)} distinct values in {len(df)} rows; it looks like an "
        "identifier: drop it from the schema",
        f"column 'code': {len(df)} distinct values in {len(df)} rows; it looks like an "
        "identifier: drop it from the schema",
    ]
    assert identifier_warnings(schema, df.head(19)) == []  # too few rows to tell


def test_a_yaml_draft_starts_with_a_comment_on_the_leak_and_the_impute_constants(tmp_path) -> None:
    path = tmp_path / "c.csv"
    _clinic().to_csv(path, index=False)
    out = tmp_path / "s.yaml"
    draft_schema_file(path, output=out)
    text = out.read_text()
    assert text.startswith("# DRAFT read from the data: its bounds and categories leak")
    assert "# is read from the declaration (the middle of the bounds, the first category)" in text
    assert Schema.from_file(out).nan_policy == "impute"
    # without missing values, the comment says the leak only
    _clinic().dropna().to_csv(path, index=False)
    draft_schema_file(path, output=out, force=True)
    text = out.read_text()
    assert text.startswith("# DRAFT") and "impute" not in text


def test_draft_with_missing_values_keeps_each_columns_decimals(tmp_path) -> None:
    # The impute rebuild for missing values used to drop the proposed ``decimals``.
    path = tmp_path / "m.csv"
    pd.DataFrame({"bmi": [21.7, None, 28.0, 30.1] * 5, "w": [1.25, 2.5, 3.75, None] * 5}).to_csv(
        path, index=False
    )
    schema = draft_schema_file(path).schema
    assert schema.nan_policy == "impute"
    assert {c.name: c.decimals for c in schema.columns} == {"bmi": 1, "w": 2}


def test_a_missing_column_names_itself_structurally(tmp_path, table) -> None:
    from ppdp.data.draft import read_table
    from ppdp.exceptions import DataValidationError, MissingColumnsError

    with pytest.raises(MissingColumnsError) as info:
        read_table(table, columns=["age", "zip", "y", "tax"])
    assert info.value.missing == ("zip", "tax") and isinstance(info.value, DataValidationError)


def test_draft_names_skewed_columns_and_points_to_cuts() -> None:
    import warnings

    import numpy as np

    from ppdp.data import draft_schema
    from ppdp.exceptions import PPDPWarning

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "income": np.round(rng.lognormal(10.0, 1.0, 2000), 2),  # most in [0, max/16)
            "age": rng.uniform(18, 90, 2000).round(1),
            "gain": np.where(rng.random(2000) < 0.9, 0.0, rng.uniform(1, 9e4, 2000)),  # zeros
            "hours": np.where(rng.random(2000) < 0.6, 40.0, rng.uniform(1, 99, 2000)),  # spike
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draft_schema(df)
    said = [str(w.message) for w in caught if w.category is PPDPWarning]
    skew = [m for m in said if "skewed" in m]
    assert len(skew) == 1 and skew[0].startswith("numeric column(s) 'income' have most")
    assert "'cuts'" in skew[0]


def test_draft_suggests_a_log_scale_only_for_a_column_crowded_at_its_low_end() -> None:
    import warnings

    import numpy as np

    from ppdp.data import draft_schema
    from ppdp.exceptions import PPDPWarning

    rng = np.random.default_rng(1)
    income = np.round(rng.lognormal(10.0, 1.0, 2000), 2)
    df = pd.DataFrame({"income": income, "score": np.round(income.max() - income, 2)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draft_schema(df)
    skew = [str(w.message) for w in caught if w.category is PPDPWarning and "skewed" in str(w)]
    low, high = sorted(skew, key=lambda m: "highest" in m)
    assert low.startswith("numeric column(s) 'income' have most values in the lowest sixteenth")
    assert "declare 'scale: log'" in low and "'cuts'" in low
    assert high.startswith("numeric column(s) 'score' have most values in the highest sixteenth")
    assert "scale" not in high and "'cuts'" in high


def test_clipping_lines_name_a_log_scale_beside_the_bounds() -> None:
    from ppdp.data import EncodeReport
    from ppdp.data.schema_files import clipping_lines

    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "income", "type": "numeric", "lower": 0, "upper": 1e6, "scale": "log"},
                {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            ]
        }
    )
    lines = clipping_lines(schema, EncodeReport(n_rows=10, clipped={"income": 1}))
    assert lines[1].split() == ["income", "[0,", "1e+06]", "log", "scale", "1", "10.0%"]
    assert lines[2].split() == ["age", "[0,", "100]", "0", "0.0%"]


def test_a_drafted_file_keeps_the_proposed_privacy_unit(tmp_path):
    """The draft's proposed unit survives its review into the file (it was dropped there)."""
    import numpy as np

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"patient_id": np.arange(300) // 3, "age": rng.integers(20, 80, 300)})
    df.to_csv(tmp_path / "visits.csv", index=False)
    for name in ("s.json", "s.yaml"):
        result = draft_schema_file(tmp_path / "visits.csv", output=tmp_path / name)
        assert result.schema.privacy_unit is not None
        assert result.schema.privacy_unit.column == "patient_id"
        assert "privacy_unit" in (tmp_path / name).read_text()


def test_the_draft_result_names_the_left_out_columns_as_data(tmp_path):
    """``DraftResult.dropped``: each column the draft left out, with why; a column the
    caller excluded is not among them (it was not left out by the draft)."""
    n = 40
    df = pd.DataFrame({"rid": range(n), "empty": [None] * n, "x": [i % 7 for i in range(n)],
                       "skip": ["a"] * n})  # fmt: skip
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    result = draft_schema_file(path, exclude=["skip"])
    assert sorted(result.dropped) == ["empty", "rid"]
    assert all(isinstance(why, str) and why for why in result.dropped.values())
    kept = {c.name for c in result.schema.columns}
    assert kept == {"x"} and not kept & set(result.dropped)
