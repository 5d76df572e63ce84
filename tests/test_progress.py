"""Progress bars: the process-wide switch, the CLI's -q/--quiet, and bars that change nothing."""

from __future__ import annotations

import argparse
import io
import warnings
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppdp.cli as cli
from ppdp import _progress
from ppdp.data import draft
from ppdp.exceptions import DataValidationError
from ppdp.learn import HybridRBFSVM
from ppdp.learn.tuning import PrivateTuning, TuningResult, tune
from ppdp.publish._l1_sampler import SamplerLayout, greedy_l1_sample
from ppdp.random import SeededRandom


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _stderr(tty: bool) -> redirect_stderr[io.StringIO]:
    """A fake stderr, a terminal or not; installed in the test body, since pytest puts its
    own capture back on sys.stderr between a fixture's set-up and the test."""
    return redirect_stderr(_Terminal() if tty else io.StringIO())


# ------------------------------------------------------------------ the switch


def test_library_default_is_off() -> None:
    assert _progress.get_progress() is False
    with _stderr(tty=True) as err:
        assert not _progress.is_active()  # even on a terminal: the library opts in when asked
        assert list(_progress.track(range(3), "x")) == [0, 1, 2]
    assert err.getvalue() == ""


@pytest.mark.parametrize(
    ("value", "mode"),
    [("", False), ("0", False), ("off", False), ("1", True), ("on", True), ("auto", "auto")],
)
def test_environment_sets_the_starting_value(
    monkeypatch: pytest.MonkeyPatch, value: str, mode: object
) -> None:
    monkeypatch.setenv("PPDP_PROGRESS", value)
    assert _progress._from_env() == mode


def test_auto_follows_the_terminal() -> None:
    with _progress.progress_enabled("auto"):
        with _stderr(tty=True):
            assert _progress.is_active()
        with _stderr(tty=False):
            assert not _progress.is_active()
    assert _progress.get_progress() is False  # restored


def test_bad_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="progress mode"):
        _progress.set_progress("yes")  # type: ignore[arg-type]


# ------------------------------------------------------------------ the CLI sets it


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Replace the command run by main() with one that records whether bars are on."""
    out: list[bool] = []

    def fake(args: argparse.Namespace, names: dict[str, str]) -> int:
        out.append(_progress.is_active())
        return 0

    monkeypatch.setattr(cli, "_dispatch", fake)
    return out


def test_cli_draws_bars_on_a_terminal(seen: list[bool]) -> None:
    with _stderr(tty=True):
        assert cli.main(["budget", "show", "ledger.db"]) == 0
    assert seen == [True]
    assert _progress.get_progress() is False  # the library default is back after main()


@pytest.mark.parametrize(
    "argv",
    [
        ["-q", "budget", "show", "ledger.db"],
        ["--quiet", "budget", "show", "ledger.db"],
        ["budget", "-q", "show", "ledger.db"],
        ["budget", "show", "ledger.db", "--quiet"],
    ],
)
def test_cli_quiet_at_any_level(seen: list[bool], argv: list[str]) -> None:
    with _stderr(tty=True):
        assert cli.main(argv) == 0
    assert seen == [False]


def test_cli_is_silent_when_stderr_is_not_a_terminal(seen: list[bool]) -> None:
    with _stderr(tty=False):
        assert cli.main(["budget", "show", "ledger.db"]) == 0
    assert seen == [False]


# ------------------------------------------------------------------ bars change nothing


def test_track_yields_the_same_items_and_writes_stderr_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = [3, 1, 4, 1, 5]
    with _stderr(tty=False) as err, _progress.progress_enabled(True):
        assert list(_progress.track(items, "working")) == items
        assert list(_progress.track(iter(items), "working")) == items  # no len()
        with _progress.bar("steps", total=4) as bar:
            bar.update()
            bar(3, 4)
            bar.set_description("steps, phase 2")
    assert "working" in err.getvalue()
    assert "steps, phase 2" in err.getvalue()
    assert capsys.readouterr().out == ""


def test_sampler_rows_are_the_same_with_a_bar(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ppdp.publish._l1_sampler._PROGRESS_EVERY", 7)
    rng = np.random.default_rng(0)
    X = rng.random((200, 5))
    X[:, 3:] = np.eye(2)[rng.integers(0, 2, 200)]
    means = np.stack([X[:100].mean(axis=0), X[100:].mean(axis=0)])
    second = X.T @ X / len(X)
    layout = SamplerLayout(n_features=5, numeric=(0, 1, 2), blocks=((3, 5),))
    with _stderr(tty=True) as err:
        plain = greedy_l1_sample(means, second, [30, 20], layout)
        assert err.getvalue() == ""
        with _progress.progress_enabled(True):
            shown = greedy_l1_sample(means, second, [30, 20], layout)
    np.testing.assert_array_equal(plain[0], shown[0])
    np.testing.assert_array_equal(plain[1], shown[1])
    assert "DP-LDA sampler" in err.getvalue()
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.tsv"])
def test_read_table_is_the_same_with_a_bar(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    path = tmp_path / name
    df = pd.DataFrame({"id": range(300), "age": np.arange(300) % 90, "job": ["a", "b", "c"] * 100})
    df.to_csv(path, index=False, sep="\t" if name.endswith(".tsv") else ";")
    monkeypatch.setattr(draft, "_PROGRESS_BYTES", 0)  # every file counts as large
    with _stderr(tty=True) as err:
        plain = draft.read_table(path, columns=["job", "age"])
        whole = draft.read_table(path)
        assert err.getvalue() == ""
        with _progress.progress_enabled(True):
            pd.testing.assert_frame_equal(draft.read_table(path, columns=["job", "age"]), plain)
            pd.testing.assert_frame_equal(draft.read_table(path), whole)
            with pytest.raises(DataValidationError, match="salary"):  # header checked first
                draft.read_table(path, columns=["salary"])
    assert "reading " + name in err.getvalue()
    assert capsys.readouterr().out == ""


# ------------------------------------------------------------------ reproduce


# ------------------------------------------------------------------ learners


def test_private_tuning_is_the_same_with_a_bar(capsys: pytest.CaptureFixture[str]) -> None:
    Z, y = np.zeros((8, 1)), np.ones(8)
    mistakes = {0.1: 3, 1.0: 0, 10.0: 5}

    def run() -> TuningResult:
        return tune(
            Z,
            y,
            tuning=PrivateTuning((0.1, 1.0, 10.0)),
            epsilon=1.0,
            fit_one=lambda Zi, yi, lam: lam,
            mistakes=lambda model, Zv, yv: mistakes[model],
            source=SeededRandom(3),
        )

    with _stderr(tty=True) as err:
        plain = run()
        assert err.getvalue() == ""
        with _progress.progress_enabled(True):
            shown = run()
    assert shown == plain
    assert "private tuning" in err.getvalue()
    assert capsys.readouterr().out == ""


def test_hybrid_svm_is_the_same_with_bars(capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((240, 3))
    y = np.where(np.linalg.norm(X - 0.5, axis=1) < 0.45, "in", "out")
    public = rng.random((20, 3))

    def fit() -> HybridRBFSVM:
        clf = HybridRBFSVM(
            public,
            epsilon=1.0,
            n_components=6,
            rho_max_iter=5,
            tuning="private",
            param_grid={"C": [1.0, 10.0]},
            feature_random_state=0,
            random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seeded, no accountant: not what is tested here
            return clf.fit(X, y)

    with _stderr(tty=True) as err:
        plain = fit()
        assert err.getvalue() == ""
        with _progress.progress_enabled(True):
            shown = fit()
    np.testing.assert_array_equal(plain.coef_, shown.coef_)
    np.testing.assert_array_equal(plain.rho_, shown.rho_)
    assert "private tuning" in err.getvalue()
    assert "HybridRBFSVM: ρ, then SVM" in err.getvalue()
    assert capsys.readouterr().out == ""
