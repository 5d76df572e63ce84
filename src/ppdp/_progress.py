"""Progress bars on stderr for the slow steps, off unless asked for.

Slow steps (reading a large table, the DP-LDA sampler, the hybrid SVM's fit, the ERM solves
of private tuning, ``ppdp reproduce``) wrap their loops in :func:`track` or :func:`bar`.
Whether a bar is drawn is decided by one process-wide switch:

* ``False`` (the library default): nothing is drawn, so tests, scripts and notebooks stay
  quiet unless the user opts in;
* ``"auto"``: drawn when stderr is a terminal (what the ``ppdp`` command sets, unless
  ``--quiet``);
* ``True``: always drawn (a notebook, whose stderr is not a terminal).

From Python::

    from ppdp._progress import set_progress
    set_progress(True)          # or "auto"; set_progress(False) to turn it off again

or, for one block, ``with ppdp._progress.progress_enabled(): ...``. A command that reports
``(done, total, message)`` steps (``ppdp reproduce``) takes its callback from
:func:`step_reporter`: a bar on a terminal, ``[done/total] message`` lines elsewhere. The
environment variable
``PPDP_PROGRESS`` (``1``/``on``, ``auto``, ``0``/``off``) sets the starting value.

Bars are drawn with ``tqdm``, on stderr only (stdout carries data in some commands). They
show public quantities only: bytes or rows read, rows generated, candidates and phases
done, never a private value or a data-dependent iteration count.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

__all__ = [
    "StepProgress",
    "bar",
    "get_progress",
    "is_active",
    "progress_enabled",
    "set_progress",
    "step_reporter",
    "track",
]

T = TypeVar("T")
Mode = bool | Literal["auto"]
#: A ``progress(done, total, message)`` callback of a run made of counted steps.
StepProgress = Callable[[int, int, str], None]


def _from_env() -> Mode:
    value = os.environ.get("PPDP_PROGRESS", "").strip().lower()
    if value in ("1", "on", "true", "yes"):
        return True
    if value == "auto":
        return "auto"
    return False


_mode: Mode = _from_env()


def set_progress(mode: Mode) -> None:
    """Set the process-wide switch: ``False`` (off), ``True`` (on) or ``"auto"`` (on a terminal)."""
    global _mode
    if not (mode is True or mode is False or mode == "auto"):
        raise ValueError(f"progress mode ({mode!r}) must be True, False or 'auto'")
    _mode = mode


def get_progress() -> Mode:
    """The current value of the switch."""
    return _mode


@contextmanager
def progress_enabled(mode: Mode = True) -> Iterator[None]:
    """Set the switch for the duration of a ``with`` block, then restore it."""
    previous = _mode
    set_progress(mode)
    try:
        yield
    finally:
        set_progress(previous)


def is_active() -> bool:
    """Whether a bar started now would be drawn."""
    if _mode is True:
        return True
    if _mode == "auto":
        try:
            return bool(sys.stderr.isatty())
        except (AttributeError, ValueError):  # no stderr, or a closed one
            return False
    return False


class _Bar:
    """What :func:`bar` yields: ``update(k)``, or call it as ``progress(done, total)``."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl
        self._done = 0

    def update(self, k: int = 1) -> None:
        self._done += k
        if self._impl is not None:
            self._impl.update(k)

    def __call__(self, done: int, total: int | None = None) -> None:
        """Move to ``done`` out of ``total`` (the ``progress(done, total)`` callback shape)."""
        if self._impl is not None and total is not None and self._impl.total != total:
            self._impl.total = total
            self._impl.refresh()
        if done > self._done:
            self.update(done - self._done)

    def set_description(self, desc: str) -> None:
        if self._impl is not None:
            self._impl.set_description_str(desc, refresh=True)


class _Ticker(threading.Thread):
    """Redraws a bar every second, so that its elapsed time runs during a long step."""

    def __init__(self, impl: Any, every: float = 1.0) -> None:
        super().__init__(name="ppdp-progress", daemon=True)
        self._impl = impl
        self._every = every
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(self._every):
            try:
                self._impl.refresh()
            except Exception:  # a closed stream: stop redrawing, never fail the work
                return

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _size() -> dict[str, Any]:
    """tqdm's size options: follow the terminal, or 80 x 24 where it reports no size (tqdm
    would draw nothing in a terminal of 0 columns or rows)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        if size.columns > 0 and size.lines > 0:
            return {"dynamic_ncols": True}
    except (AttributeError, OSError, ValueError):
        pass
    return {"ncols": 80, "nrows": 24}


@contextmanager
def _tqdm(**kwargs: Any) -> Iterator[Any]:
    from tqdm import tqdm

    impl = tqdm(file=sys.stderr, leave=False, **_size(), **kwargs)
    ticker = _Ticker(impl)
    ticker.start()
    try:
        yield impl
    finally:
        ticker.stop()
        impl.close()


@contextmanager
def bar(
    desc: str, *, total: int | None = None, unit: str = "it", unit_scale: bool = False
) -> Iterator[_Bar]:
    """A bar for a loop that is not a plain iterable; a silent stand-in when not active."""
    if not is_active():
        yield _Bar(None)
        return
    with _tqdm(desc=desc, total=total, unit=unit, unit_scale=unit_scale) as impl:
        yield _Bar(impl)


def track(
    iterable: Iterable[T], desc: str, *, total: int | None = None, unit: str = "it"
) -> Iterator[T]:
    """Iterate over ``iterable`` unchanged, with a bar when active."""
    if not is_active():
        yield from iterable
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with _tqdm(desc=desc, total=total, unit=unit) as impl:
        for item in iterable:
            yield item
            impl.update(1)


def _step_line(done: int, total: int, message: str) -> None:
    sys.stderr.write(f"[{done}/{total}] {message}\n")
    sys.stderr.flush()


@contextmanager
def step_reporter(title: str, *, quiet: bool = False) -> Iterator[StepProgress | None]:
    """The ``progress(done, total, message)`` callback of a run made of counted steps.

    Yields None with ``quiet`` (nothing is said); else a callback drawing a bar titled
    ``title`` (then showing each step's message) when bars are active (:func:`is_active`),
    or one ``[done/total] message`` line on stderr per step when they are not (a log
    file, a CI job), so that a long run still says where it is.
    """
    if quiet:
        yield None
        return
    if not is_active():
        yield _step_line
        return
    with bar(title, unit="step") as steps:

        def update(done: int, total: int, message: str) -> None:
            steps.set_description(message)
            steps(done, total)

        yield update
