"""``estimate_file`` / ``ppdp local estimate``: ``bins`` and ``harmonics`` only where the
design and method use them; ``parse_harmonics`` is the library's, the CLI only wraps it."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.exceptions import ParameterError
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer
from ppdp.local.collector import CollectorConfig, CollectorStore
from ppdp.local.collector._aggregate import Aggregator
from ppdp.local.files import estimate_file, parse_harmonics

CV = CharacteristicVectorRandomizer(regions=[0.0, 0.25, 0.5, 0.75, 1.0], noise="discrete-normal",
                                    gamma=1.0, sigma=1.0)  # fmt: skip
ADD = AdditiveRandomizer(noise="laplace", scale=0.05, domain=(0.0, 1.0))


def _collector(tmp_path, randomizer, n=400, **extra):
    """A config and a store holding ``n`` reports of ``randomizer`` (no server needed)."""
    path = tmp_path / "collector.json"
    path.write_text(json.dumps({"survey": "s", "randomizer": randomizer.to_dict(), **extra}))
    agg = Aggregator.from_config(CollectorConfig.from_file(path))
    values = np.random.default_rng(0).uniform(0.0, 1.0, n)
    reports = randomizer.randomise(values, random_state=1)
    store = tmp_path / "store.sqlite"
    with CollectorStore.open(store, survey="s", spec=agg.spec, layout=agg.layout) as st:
        st.add_batch(client="c", seq=1, digest="d", count=n, aggregates=agg.aggregate(reports))
    return path, store


def _cli_error(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    return line


@pytest.mark.parametrize(("text", "value"), [("auto", "auto"), ("1", 1), ("12", 12)])
def test_parse_harmonics_accepts_auto_or_a_positive_integer(text, value):
    assert parse_harmonics(text) == value


@pytest.mark.parametrize(
    ("text", "match"),
    [("0", r"harmonics \(0\) must be 'auto' or >= 1"), ("-2", r"harmonics \(-2\)"),
     ("many", r"harmonics \('many'\) must be 'auto' or a positive integer"), ("", r"\(''\)")],
)  # fmt: skip
def test_parse_harmonics_refuses_anything_else(text, match):
    with pytest.raises(ParameterError, match=match):
        parse_harmonics(text)


def test_the_cli_type_is_the_library_message():
    from ppdp.cli._local import _harmonics

    with pytest.raises(argparse.ArgumentTypeError) as exc:
        _harmonics("0")
    with pytest.raises(ParameterError) as lib:
        parse_harmonics("0")
    assert str(exc.value) == str(lib.value)


def test_bins_and_harmonics_are_refused_for_a_characteristic_design(tmp_path):
    config, store = _collector(tmp_path, CV)
    out = tmp_path / "est.csv"
    with pytest.raises(ParameterError) as exc:
        estimate_file(config=config, store=store, output=out, bins=50)
    line = str(exc.value)
    assert line.startswith("bins (50) does not apply to a characteristic-vector randomizer")
    assert "one per region, 4" in line and "--bins" in line and "\n" not in line
    with pytest.raises(ParameterError, match=r"^harmonics \(7\) does not apply"):
        estimate_file(config=config, store=store, output=out, harmonics=7)
    assert not out.exists() and not out.with_suffix(".json").exists()
    result, side = estimate_file(config=config, store=store, output=out)  # the defaults
    assert result.count == 400 and len(pd.read_csv(out)) == 4 and side.exists()


def test_harmonics_only_with_a_fourier_method(tmp_path):
    config, store = _collector(tmp_path, ADD)
    out = tmp_path / "est.csv"
    for method in (None, "em", "bayes"):
        with pytest.raises(ParameterError) as exc:
            estimate_file(config=config, store=store, output=out, method=method, harmonics=5)
        assert str(exc.value).startswith(
            f"harmonics (5) is used only by method 'fourier' or 'em-fourier', not by "
            f"{method or 'em'!r}"
        )
    assert not out.exists()
    result, _ = estimate_file(config=config, store=store, output=out)
    assert result.method == "em" and len(pd.read_csv(out)) == 50  # bins: 50 by default
    result, _ = estimate_file(
        config=config, store=store, output=out, method="fourier", harmonics=4, bins=8, force=True
    )
    assert result.method == "fourier" and len(pd.read_csv(out)) == 8


def test_the_cli_says_it_in_one_line_and_writes_nothing(tmp_path, capsys):
    config, store = _collector(tmp_path, CV)
    out = tmp_path / "est.csv"
    argv = ["local", "estimate", "--config", str(config), "--store", str(store), "-o", str(out)]
    line = _cli_error(capsys, [*argv, "--bins", "20"])
    assert line.startswith("ppdp: error: --bins (20) does not apply to a characteristic-vector")
    assert "leave bins (--bins) out" in line
    line = _cli_error(capsys, [*argv, "--harmonics", "auto"])
    assert line.startswith("ppdp: error: --harmonics ('auto') does not apply")
    assert not out.exists() and not out.with_suffix(".json").exists()
    assert main(argv) == 0
    assert "estimated the distribution from 400 reports" in capsys.readouterr().out


def test_the_cli_refuses_harmonics_with_em(tmp_path, capsys):
    config, store = _collector(tmp_path, ADD)
    out = tmp_path / "est.csv"
    argv = ["local", "estimate", "--config", str(config), "--store", str(store), "-o", str(out)]
    line = _cli_error(capsys, [*argv, "--method", "em", "--harmonics", "3"])
    assert "harmonics (3) is used only by method 'fourier' or 'em-fourier'" in line
    assert not out.exists()
    assert main([*argv, "--method", "em-fourier", "--harmonics", "3", "--bins", "10"]) == 0
    assert len(pd.read_csv(out)) == 10
