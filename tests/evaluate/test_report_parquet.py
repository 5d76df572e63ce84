"""The quality report of a partitioned release against a Parquet dataset (issue 16).

Below the sample size the report equals the in-memory one number for number; above it the
marginals still use every row and the association maps use the same seeded sample the
in-memory report draws; a folder without ``_SUCCESS`` is refused in one line.
"""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from ppdp.data.distributed import SUCCESS_MARKER, write_parquet_dataset
from ppdp.datasets import load_adult
from ppdp.evaluate import report as rp
from ppdp.evaluate.files import report_file
from ppdp.evaluate.parquet_report import dataset_report
from ppdp.evaluate.report import quality_report
from ppdp.exceptions import DataValidationError, LowUtilityWarning
from ppdp.publish.files import publish_table_file

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

N_ROWS = 1600


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult_report_parquet")
    df, schema = load_adult()
    df = df.iloc[:N_ROWS].reset_index(drop=True)
    (root / "ds").mkdir()
    for i, (a, b) in enumerate([(0, 700), (700, 700), (700, N_ROWS)]):
        df.iloc[a:b].to_parquet(root / "ds" / f"part-{i}.parquet", index=False)
    schema.to_file(root / "adult.json")
    with warnings.catch_warnings():  # the pair check names Adult's age:relationship here
        warnings.simplefilter("ignore", LowUtilityWarning)
        _publish(root)
    return root, df, schema


def _publish(root) -> None:
    publish_table_file(
        "synth",
        root / "ds",
        schema=root / "adult.json",
        output=root / "rel",
        epsilon=2.0,
        random_state=5,
        scheduler="sync",
    )


def _numbers(report) -> str:
    data = report.to_dict()
    data.pop("notes")
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize("target", [None, "income"])
def test_equals_the_in_memory_report(released, tmp_path, target):
    root, df, schema = released
    done = report_file(
        root / "rel",
        original=root / "ds",
        schema=root / "adult.json",
        output=tmp_path / "r.html",
        json_output=tmp_path / "r.json",
        target=target,
        scheduler="sync",
    )
    side = json.loads((root / "rel.guarantee.json").read_text())
    memory = quality_report(
        df, pd.read_parquet(root / "rel"), schema, target=target, guarantee=side
    )
    assert _numbers(done.report) == _numbers(memory)
    assert done.report.n_original == done.report.n_release == N_ROWS
    assert any("read partition by partition (3 partition(s)" in n for n in done.report.notes)
    assert (tmp_path / "r.html").is_file() and json.loads((tmp_path / "r.json").read_text())


def test_above_the_sample_size_marginals_use_every_row(released, monkeypatch):
    """The in-memory report's seeded sample, read partition by partition: same maps."""
    root, df, schema = released
    monkeypatch.setattr(rp, "MAX_ROWS", 500)
    side = json.loads((root / "rel.guarantee.json").read_text())
    dist = dataset_report(root / "ds", root / "rel", schema, guarantee=side, scheduler="sync")
    memory = quality_report(df, pd.read_parquet(root / "rel"), schema, guarantee=side)
    assert _numbers(dist) == _numbers(memory)  # marginals from all rows, maps from the sample
    assert any("seeded random sample of at most 500 rows" in n for n in dist.notes)
    # The marginals are not those of the sample: every row counts.
    n_age = dist.columns[0]["p_original"] * N_ROWS
    assert abs(n_age - n_age.round()).max() < 1e-9 and n_age.sum() == pytest.approx(N_ROWS)


def test_a_table_in_memory_and_a_dask_frame_mix(released):
    dd = pytest.importorskip("dask.dataframe")
    root, df, schema = released
    rel = pd.read_parquet(root / "rel")
    dist = dataset_report(dd.from_pandas(df, npartitions=4), rel, schema, scheduler="sync")
    assert _numbers(dist) == _numbers(quality_report(df, rel, schema))


def test_a_folder_without_success_is_refused_in_one_line(released, tmp_path):
    root, _df, _schema = released
    broken = tmp_path / "broken"
    broken.mkdir()
    for part in (root / "rel").glob("part-*.parquet"):
        (broken / part.name).write_bytes(part.read_bytes())
    (tmp_path / "broken.guarantee.json").write_text((root / "rel.guarantee.json").read_text())
    assert not (broken / SUCCESS_MARKER).exists()
    with pytest.raises(DataValidationError, match="has no _SUCCESS marker") as err:
        report_file(
            broken,
            original=root / "ds",
            schema=root / "adult.json",
            output=tmp_path / "r.html",
            scheduler="sync",
        )
    assert "\n" not in str(err.value)
    assert not (tmp_path / "r.html").exists()


def test_undeclared_columns_in_the_release_are_refused(released, tmp_path):
    root, df, schema = released
    extra = df.assign(secret=1.0)
    write_parquet_dataset([extra.iloc[:800], extra.iloc[800:]], tmp_path / "extra")
    with pytest.raises(DataValidationError, match="has undeclared 'secret'"):
        dataset_report(root / "ds", tmp_path / "extra", schema, scheduler="sync")
