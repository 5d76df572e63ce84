"""``ppdp.evaluate.files``: the library side of ``ppdp report``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.evaluate.files import read_sidecar, report_file
from ppdp.exceptions import ParameterError

pytest.importorskip("matplotlib")

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "city", "type": "categorical", "categories": ["a", "b"]},
        ]
    }
)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(0, 100, 200), "city": rng.choice(["a", "b"], 200)})
    df.to_csv(tmp_path / "orig.csv", index=False)
    df.sample(frac=1.0, random_state=1).to_csv(tmp_path / "rel.csv", index=False)
    SCHEMA.to_file(tmp_path / "s.json")
    return tmp_path


def test_read_sidecar(files) -> None:
    side, data = read_sidecar(files / "rel.csv")
    assert side == files / "rel.csv.guarantee.json" and data is None
    side.write_text("{not json")
    with pytest.raises(ParameterError, match="is corrupt"):
        read_sidecar(files / "rel.csv")
    side.write_text(json.dumps({"method": "pca"}))
    with pytest.raises(ParameterError, match="holds no guarantee"):
        read_sidecar(files / "rel.csv")


def test_refusals_come_before_anything_is_written(files) -> None:
    out = files / "r.html"
    args = {"original": files / "orig.csv", "schema": files / "s.json", "output": out}
    with pytest.raises(ParameterError, match="--original is required"):
        report_file(files / "rel.csv", output=out, schema=files / "s.json")
    with pytest.raises(ParameterError, match="--holdout is only used with --target"):
        report_file(files / "rel.csv", holdout=files / "orig.csv", **args)
    with pytest.raises(ParameterError, match=r"--json .* must end in \.json"):
        report_file(files / "rel.csv", json_output=files / "r.txt", no_guarantee=True, **args)
    with pytest.raises(ParameterError, match=r"guarantee file .* is missing"):
        report_file(files / "rel.csv", **args)
    with pytest.raises(ParameterError, match="--holdout TEST"):
        report_file(files / "model.json", **args)
    assert not out.exists()


def test_a_table_without_guarantee_is_reported_with_a_note(files) -> None:
    out, js = files / "r.html", files / "r.json"
    done = report_file(
        files / "rel.csv",
        original=files / "orig.csv",
        schema=files / "s.json",
        output=out,
        json_output=js,
        no_guarantee=True,
    )
    assert done.paths == [out, js] and out.read_text(encoding="utf-8").lstrip().startswith("<")
    assert "verdict" in json.loads(js.read_text(encoding="utf-8"))
    assert (
        done.note
        == f"note: no guarantee file ({files / 'rel.csv.guarantee.json'}); the report says so"
    )
