"""Publisher.fit on a Dask DataFrame or a Parquet dataset: the shared flow of the base class.

A toy publisher (noisy class counts) exercises the refusals that must cost nothing: an
unsupported publisher, a row-level release without an output folder, output for a table in
memory, an unreachable scheduler; and the local cluster started for a path. The same seed's
release as in memory and a bad value in one partition are checked on every registered
publisher by tests/test_registry_contract.py.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant, Charge
from ppdp.accounting.events import Laplace
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.noise import laplace
from ppdp.publish._base import Publisher, Release

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict(
    {
        "columns": [{"name": "dx", "type": "categorical", "categories": ["a", "b"]}],
        "label": {"name": "y", "classes": [0, 1]},
    }
)


class NoisyCounts(Publisher):
    """Laplace(2/ε) on the class counts (replace-one: L1 sensitivity 2)."""

    supports_distributed: ClassVar[bool] = True

    def __init__(self, epsilon: float, schema: Schema, random_state: Any = None) -> None:
        self.epsilon = epsilon
        self.schema = schema
        self.random_state = random_state

    def _validate_params(self, n_rows: int | None = None) -> list[Charge]:
        if not self.epsilon > 0:
            raise ParameterError(f"epsilon ({self.epsilon!r}) must be > 0")
        return [Charge(Laplace(l1_sensitivity=2.0, scale=2.0 / self.epsilon), "counts")]

    def _counts(self, y: Any) -> np.ndarray:
        return np.bincount(y, minlength=2).astype(np.float64)

    def _noisy(self, counts: np.ndarray, source: Any) -> Release:
        noisy = counts + laplace(2.0 / self.epsilon, size=2, random_state=source)
        return Release(
            None, None, Guarantee.pure(self.epsilon, relation="replace-one"), {"counts": noisy}
        )

    def _release(self, X: Any, y: Any, source: Any, charges: Any) -> Release:
        return self._noisy(self._counts(y), source)

    def _partition_statistics(self, X: Any, y: Any) -> np.ndarray:
        return self._counts(y)

    def _release_distributed(self, frame, scan, source, charges, *, scheduler, output):
        return self._noisy(scan.value, source)


class RowLevel(NoisyCounts):
    row_level_output: ClassVar[bool] = True


class InMemoryOnly(NoisyCounts):
    supports_distributed: ClassVar[bool] = False


def _dataset(folder, *, spoil: bool = False):
    folder.mkdir()
    rng = np.random.default_rng(0)
    frames = []
    for i, n in enumerate([40, 0, 33]):
        f = pd.DataFrame({"dx": rng.choice(["a", "b"], n), "y": rng.integers(0, 2, n)})
        if spoil and i == 2:
            f.loc[[1, 2], "dx"] = "zz"
        f.to_parquet(folder / f"part-{i}.parquet", index=False)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def test_refusals_cost_nothing(tmp_path) -> None:
    _dataset(tmp_path / "ds")
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    with pytest.raises(ParameterError, match="InMemoryOnly does not accept a Dask DataFrame"):
        InMemoryOnly(1.0, SCHEMA).fit(tmp_path / "ds", acct)
    with pytest.raises(ParameterError, match=r"output \(None\): RowLevel releases one row"):
        RowLevel(1.0, SCHEMA).fit(tmp_path / "ds", acct)
    with pytest.raises(ParameterError, match="releases statistics, not rows"):
        NoisyCounts(1.0, SCHEMA).fit(tmp_path / "ds", acct, output=tmp_path / "out")
    with pytest.raises(ParameterError, match="is for a Dask DataFrame or a Parquet dataset"):
        NoisyCounts(1.0, SCHEMA).fit(pd.DataFrame({"dx": ["a"], "y": [0]}), scheduler="sync")
    with pytest.raises(ParameterError, match="epsilon"):
        NoisyCounts(-1.0, SCHEMA).fit(tmp_path / "ds", acct)
    with pytest.raises(ParameterError, match="cannot be reached"):
        NoisyCounts(1.0, SCHEMA).fit(tmp_path / "ds", acct, scheduler="tcp://127.0.0.1:9")
    assert acct.spent == PrivacyBudget(0.0) and acct.history() == []


def test_a_local_cluster_is_started_for_a_path(tmp_path) -> None:
    whole = _dataset(tmp_path / "ds")
    pub = NoisyCounts(1.0, SCHEMA, random_state=2).fit(tmp_path / "ds")  # default: LocalCluster
    mem = NoisyCounts(1.0, SCHEMA, random_state=2).fit(whole)
    np.testing.assert_array_equal(
        pub.release_.statistics["counts"], mem.release_.statistics["counts"]
    )
