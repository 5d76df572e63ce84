"""The shipped KDD Cup 99 sample: size, labels, declared schema, provenance and checksum."""

from __future__ import annotations

import hashlib
import logging
from importlib import resources

import numpy as np
import pytest

from ppdp.datasets import DATASETS, dataset_info, kddcup99_schema, load_kddcup99
from ppdp.datasets import _kddcup99 as kdd
from ppdp.exceptions import DataValidationError, ParameterError


@pytest.fixture(scope="module")
def dos():
    return load_kddcup99()


def test_sample_size_columns_and_labels(dos) -> None:
    df, schema = dos
    assert df.shape == (70_000, 43)
    assert list(df.columns[:41]) == list(kdd.FEATURES)
    assert len(kdd.FEATURES) == 41
    assert df["label"].value_counts().to_dict() == {"dos": 55_335, "not-dos": 14_665}
    assert schema.classes == ("not-dos", "dos")
    # the binary label is exactly "one of the six DoS attack types"
    is_dos = df["attack_type"].isin(kdd.DOS_ATTACKS)
    assert ((df["label"] == "dos") == is_dos).all()
    assert df["attack_type"].value_counts()["smurf."] == 39_756
    assert not df.isna().any().any()


def test_attack_task() -> None:
    df, schema = load_kddcup99(task="attack")
    assert schema.classes == ("normal", "attack")
    assert df["label"].value_counts().to_dict() == {"attack": 56_131, "normal": 13_869}
    assert ((df["label"] == "normal") == (df["attack_type"] == "normal.")).all()
    with pytest.raises(ParameterError, match="task"):
        load_kddcup99(task="probe")  # type: ignore[arg-type]


def test_schema_layout_and_bounds(dos) -> None:
    df, schema = dos
    assert schema == kddcup99_schema("dos")
    assert (schema.p1, schema.p2) == (38, 3)
    assert schema.n_features == 38 + 3 + 66 + 11 == 118
    assert schema.max_row_l2_norm == pytest.approx(np.sqrt(41))
    sources = kdd.bound_sources()
    assert len(sources) == 38
    counts = {k: sum(v == k for v in sources.values()) for k in set(sources.values())}
    assert counts == {"definition": 20, "construction": 4, "clipping": 14}
    bounds = {c.name: (c.lower, c.upper) for c in schema.numeric_columns}
    for name, src in sources.items():
        lo, hi = bounds[name]
        assert lo == 0
        if src == "definition":
            assert hi == 1 and df[name].between(0, 1).all(), name
        if src == "construction":
            # the declared saturation value is also the observed maximum of the sample
            assert hi in (255, 511) and df[name].max() == hi, name
    assert bounds["src_bytes"] == (0, 10_000) and bounds["duration"] == (0, 3_600)
    service = schema.column("service")
    assert len(service.categories) == 66 and service.other == "other"


def test_encoding_clips_only_declared_clipping_columns(dos, caplog) -> None:
    df, schema = dos
    with caplog.at_level(logging.INFO, logger="ppdp.custodian"):
        X, y, report = schema.encode(df, return_report=True)
    assert X.shape == (70_000, 118) and y is not None
    assert X.min() == 0.0 and X.max() == 1.0
    assert int(y.sum()) == 55_335
    clipping = {n for n, s in kdd.bound_sources().items() if s == "clipping"}
    assert set(report.clipped) <= clipping
    assert report.clipped["dst_bytes"] == 916 and report.clipped["duration"] == 274
    assert not report.other
    assert "clipped to bounds" in caplog.text
    # every encoded row lies within the schema's declared row-norm bound
    assert np.linalg.norm(X, axis=1).max() <= schema.max_row_l2_norm


def test_undeclared_service_maps_to_other(dos) -> None:
    df, schema = dos
    small = df.head(3).copy()
    small.loc[0, "service"] = "http_8001"  # a service of the full file, not of the 10% file
    X, _, report = schema.encode(small, return_report=True)
    assert report.other == {"service": 1}
    block = schema.blocks["service"]
    names = schema.feature_names[block]
    assert X[0, block][names.index("service=other")] == 1.0


def test_provenance_checksum_and_files_ship_inside_the_package() -> None:
    assert "kddcup99" in DATASETS
    readme = dataset_info("kddcup99")
    for needle in (
        "potash/brf-example",
        "cb1486bbec7069eec30474bce4bf9478e867e9d2",
        "CC BY 4.0",
        "default_rng(2011)",
        kdd.SAMPLE_SHA256,
        "without looking at the data",
    ):
        assert needle in readme, needle
    path = resources.files("ppdp.datasets").joinpath("data", *kdd.SAMPLE_FILE.split("/"))
    data = path.read_bytes()
    assert len(data) < 1_000_000  # small enough to ship
    assert hashlib.sha256(data).hexdigest() == kdd.SAMPLE_SHA256


def test_corrupted_file_is_detected(monkeypatch) -> None:
    monkeypatch.setattr(kdd, "SAMPLE_SHA256", "0" * 64)
    with pytest.raises(DataValidationError, match="checksum"):
        load_kddcup99()
