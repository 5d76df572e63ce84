"""GroupByPublisher on a Parquet dataset / Dask DataFrame: the in-memory release, exactly.

The exact statistics are integers (counts and centred sums in units of 2⁻²⁴ of each
range) that add across partitions, and the noise is drawn in the driver in the in-memory
order, so one seed gives the same table: bit for bit, with keys and means, under both
relations, in tests/test_registry_contract.py (its ``groupby`` cases), as are a Dask
DataFrame and an undeclared value in one file (and test_groupby_private_dask.py for a Dask
frame grouped with means). Here: the output folder and the command line.
"""

from __future__ import annotations

import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.exceptions import ParameterError
from ppdp.publish import GroupByPublisher

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from test_groupby import make_df, make_schema  # noqa: E402


@pytest.fixture
def dataset(tmp_path):
    frames = [make_df(700, 1), make_df(5, 2).iloc[:0], make_df(900, 3), make_df(400, 4)]
    folder = tmp_path / "in"
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder, pd.concat(frames, ignore_index=True)


def test_an_existing_output_folder_is_refused_before_anything_is_spent(dataset) -> None:
    """The bad-partition message itself: the registry contract
    (test_publisher_bad_partition_is_the_in_memory_message[groupby])."""
    path, _ = dataset
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    pub = GroupByPublisher(1.0, make_schema(), by=["sex"])
    with pytest.raises(ParameterError, match=r"^output \(.*\) already exists"):
        pub.fit(path, accountant=acct, scheduler="sync", output=path)
    assert acct.history() == [] and getattr(pub, "release_", None) is None


def test_output_folder_holds_the_table_and_the_cli_takes_a_parquet_dataset(
    dataset, tmp_path
) -> None:
    path, whole = dataset
    kw = {"by": ["sex"], "means": ["age"]}
    with pytest.warns(Warning):
        mem = GroupByPublisher(1.0, make_schema(), random_state=2, **kw).fit(whole)
    with pytest.warns(Warning):
        dist = GroupByPublisher(1.0, make_schema(), random_state=2, **kw)
        dist.fit(path, scheduler="sync", output=tmp_path / "out")
    written = pd.read_parquet(tmp_path / "out")
    pd.testing.assert_frame_equal(written, mem.release_.data)
    make_schema().to_file(tmp_path / "s.json")
    argv = ["publish", "groupby", str(path), "--schema", str(tmp_path / "s.json"), "--by", "sex"]
    argv += ["--epsilon", "1", "--means", "age", "-o", str(tmp_path / "cli"), "--seed", "2"]
    assert main([*argv, "--scheduler", "sync"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli"), mem.release_.data)
