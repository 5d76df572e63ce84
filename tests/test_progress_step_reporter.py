"""``ppdp._progress.step_reporter``: the ``(done, total, message)`` callback of a stepped run
(``ppdp reproduce``): lines off a terminal, a bar on one, nothing when quiet."""

from __future__ import annotations

import io
from contextlib import redirect_stderr

import pytest

from ppdp import _progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_lines_off_a_terminal() -> None:
    with (
        redirect_stderr(io.StringIO()) as err,
        _progress.progress_enabled("auto"),
        _progress.step_reporter("reproduce x", quiet=False) as progress,
    ):
        assert progress is not None
        progress(1, 3, "eps=1 trial 1")
        progress(3, 3, "done")
    assert err.getvalue() == "[1/3] eps=1 trial 1\n[3/3] done\n"


def test_lines_while_bars_are_off_even_on_a_terminal() -> None:
    """Bars off (the library default): a stepped run still says where it is."""
    with (
        redirect_stderr(_Terminal()) as err,
        _progress.progress_enabled(False),
        _progress.step_reporter("reproduce x") as progress,
    ):
        assert progress is not None
        progress(2, 5, "step")
    assert err.getvalue() == "[2/5] step\n"


def test_a_bar_on_a_terminal() -> None:
    pytest.importorskip("tqdm")
    with (
        redirect_stderr(_Terminal()) as err,
        _progress.progress_enabled("auto"),
        _progress.step_reporter("reproduce x") as progress,
    ):
        assert progress is not None
        progress(1, 2, "eps=1 trial 1")
    text = err.getvalue()
    assert "eps=1 trial 1" in text and "[1/2]" not in text


@pytest.mark.parametrize("mode", [True, "auto", False])
def test_quiet_yields_none_and_says_nothing(mode) -> None:
    with (
        redirect_stderr(_Terminal()) as err,
        _progress.progress_enabled(mode),
        _progress.step_reporter("reproduce x", quiet=True) as progress,
    ):
        assert progress is None
    assert err.getvalue() == ""
