"""``ppdp federate`` owners read a Parquet dataset: the party config's data file may be a folder.

The owner then holds only its reduced statistics (the round releases the direction), equal to
what it computes from the same rows in a CSV file.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.federated.http._parties import load_owner_records
from ppdp.federated.owner_data import owner_statistics

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

SCHEMA = {
    "columns": [
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
        {"name": "dx", "type": "categorical", "categories": ["a", "b"]},
    ],
    "label": {"name": "y", "classes": [0, 1]},
}


def test_a_parquet_folder_gives_the_csv_statistics(tmp_path) -> None:
    rng = np.random.default_rng(4)
    df = pd.DataFrame(
        {
            "age": rng.uniform(0, 100, 90),
            "dx": rng.choice(["a", "b"], 90),
            "y": rng.integers(0, 2, 90),
        }
    )
    schema_path = tmp_path / "s.json"
    Schema.from_dict(SCHEMA).to_file(schema_path)
    df.to_csv(tmp_path / "owner.csv", index=False)
    (tmp_path / "owner").mkdir()
    df.iloc[:40].to_parquet(tmp_path / "owner" / "part-0.parquet", index=False)
    df.iloc[40:].to_parquet(tmp_path / "owner" / "part-1.parquet", index=False)

    def config(file):
        return SimpleNamespace(data=SimpleNamespace(file=file, schema=schema_path, norm_bound=None))

    from_csv = load_owner_records(config(tmp_path / "owner.csv"))
    assert set(from_csv) == {"X", "y"}
    from_parquet = load_owner_records(config(tmp_path / "owner"))
    assert set(from_parquet) == {"statistics"}
    got = from_parquet["statistics"]
    want = owner_statistics(from_csv["X"], from_csv["y"], n_classes=2)
    np.testing.assert_array_equal(got.class_counts, want.class_counts)
    np.testing.assert_allclose(got.class_sums, want.class_sums, rtol=1e-12)
    np.testing.assert_allclose(got.second_moment, want.second_moment, rtol=1e-12)
