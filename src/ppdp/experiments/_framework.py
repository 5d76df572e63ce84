"""What every experiment shares: the result object, seeding, progress and atomic outputs."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import platform
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._io import atomic_path
from ppdp._version import __version__
from ppdp.exceptions import InsecureRandomnessWarning, LowUtilityWarning, OptionalDependencyError

__all__ = [
    "ExperimentResult",
    "Progress",
    "SeededRuns",
    "check_config",
    "config_dict",
    "import_pyplot",
    "require_sklearn",
    "save_figure",
    "seed_sequence",
    "start",
    "write_csv",
    "write_json",
    "write_run",
    "write_text",
]

#: ``progress(done, total, message)``: called after each unit of work (a release).
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ExperimentResult:
    """What one run of an experiment produced.

    Attributes
    ----------
    experiment_id : str
        The registry ID, e.g. ``"jiang2013-fig2"``.
    out_dir : Path
        The folder that holds every file below.
    files : tuple of Path
        Everything written: raw results (CSV), the config it ran (JSON), plots (PNG) and
        the markdown summary, in that order.
    summary : str
        The markdown summary (also in ``summary.md``).
    key_numbers : dict
        A few headline figures (JSON-safe), for the CLI and for tests.
    """

    experiment_id: str
    out_dir: Path
    files: tuple[Path, ...]
    summary: str
    key_numbers: dict[str, Any] = field(default_factory=dict)


def import_pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or the ``plots`` install hint."""
    try:
        import matplotlib
    except ImportError as exc:
        raise OptionalDependencyError(
            "the experiment plots need matplotlib, which is not installed: "
            "pip install 'ppdp[plots]'"
        ) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def require_sklearn() -> None:
    """Fail early, with the ``learn`` install hint, when scikit-learn is missing."""
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:
        raise OptionalDependencyError(
            "the classification experiments need scikit-learn, which is not installed: "
            "pip install 'ppdp[learn]'"
        ) from exc


def seed_sequence(seed: int, *keys: int) -> np.random.SeedSequence:
    """The seed of one unit of work: independent streams for distinct ``keys``.

    Experiments are seeded on purpose (they must be reproducible); a seeded release is
    not fit for real data, and the publishers say so with an
    :class:`~ppdp.exceptions.InsecureRandomnessWarning` that :class:`SeededRuns` collects.
    """
    return np.random.SeedSequence([int(seed), *(int(k) for k in keys)])


class SeededRuns:
    """Collect (rather than show) the expected warnings of an experiment's releases.

    Every seeded release warns :class:`~ppdp.exceptions.InsecureRandomnessWarning`; one
    warning per release would drown the output, so the run counts them and the summary
    states once that every release was seeded. A
    :class:`~ppdp.exceptions.LowUtilityWarning` (too few rows for the noise) is counted
    too and its first message kept for the summary. Any other warning is passed on.
    """

    def __init__(self) -> None:
        self.count = 0
        self.low_utility = 0
        self.low_utility_example = ""

    @contextlib.contextmanager
    def collect(self) -> Iterator[None]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InsecureRandomnessWarning)
            warnings.simplefilter("always", LowUtilityWarning)
            yield
        for w in caught:
            if issubclass(w.category, InsecureRandomnessWarning):
                self.count += 1
            elif issubclass(w.category, LowUtilityWarning):
                self.low_utility += 1
                self.low_utility_example = self.low_utility_example or str(w.message)
            else:  # anything else is news: pass it on
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    def notes(self) -> list[str]:
        """Markdown lines on the warnings collected (empty if none but the seeded ones)."""
        if not self.low_utility:
            return []
        return [
            "",
            f"**{self.low_utility} release(s) warned `LowUtilityWarning`** (the noise swamps "
            f"the statistics at this n and ε), e.g.: {self.low_utility_example}",
        ]


def check_config(config: Any, cls: type) -> None:
    """Refuse a ``config`` that is not an instance of the experiment's ``Config`` (``cls``)."""
    if not isinstance(config, cls):
        raise TypeError(f"config ({type(config).__name__}) must be a {cls.__module__}.Config")


def start(config: Any, cls: type, *, sklearn: bool = False) -> Any:
    """What a run checks before any work: ``config`` is the experiment's own (``cls``),
    scikit-learn is installed when the run needs it (``sklearn``), and so is matplotlib,
    whose ``pyplot`` it returns."""
    check_config(config, cls)
    if sklearn:
        require_sklearn()
    return import_pyplot()


def config_dict(config: Any, experiment_id: str) -> dict[str, Any]:
    """The config as JSON-safe data, with what is needed to rerun it."""
    body = {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }
    return {
        "experiment": experiment_id,
        "config": body,
        "ppdp_version": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "seeded": True,
    }


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    """Write ``df`` as CSV atomically."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.10g")
    return path


def write_json(obj: Any, path: Path) -> Path:
    """Write ``obj`` as indented JSON atomically (NaN written as null)."""

    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(clean(obj), indent=2) + "\n", encoding="utf-8")
    return path


def write_text(text: str, path: Path) -> Path:
    """Write text atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def save_figure(fig: Any, path: Path) -> Path:
    """Save a matplotlib figure as PNG atomically and close it."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=90, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def write_run(
    experiment_id: str,
    config: Any,
    out: Path,
    summary: str,
    key: dict[str, Any],
    *,
    tables: Mapping[str, pd.DataFrame],
    figures: Mapping[str, Callable[[Path], Path]],
) -> ExperimentResult:
    """Write a run's files into ``out`` and return its result: the one summary writer.

    In the order every experiment writes them (and :attr:`ExperimentResult.files` lists
    them): the CSV ``tables`` (file name -> frame), ``config.json``, the ``figures`` (file
    name -> a function that draws the figure and saves it at the path given) and
    ``summary.md``, each atomically.
    """
    files = [write_csv(df, out / name) for name, df in tables.items()]
    files.append(write_json(config_dict(config, experiment_id), out / "config.json"))
    files += [draw(out / name) for name, draw in figures.items()]
    files.append(write_text(summary, out / "summary.md"))
    return ExperimentResult(experiment_id, out, tuple(files), summary, key)
