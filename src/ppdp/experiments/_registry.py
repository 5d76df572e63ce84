"""The registry of experiments: ID -> module with ``Config`` (full/quick) and ``run``."""

from __future__ import annotations

import importlib
import importlib.util
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ppdp._validation import check_int
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.experiments._framework import ExperimentResult, Progress

__all__ = ["EXPERIMENTS", "ExperimentInfo", "get_experiment", "list_experiments", "run_experiment"]

logger = logging.getLogger(__name__)

#: Experiment ID -> module implementing it (imported on first use).
EXPERIMENTS: dict[str, str] = {
    "jiang2013-fig2": "ppdp.experiments.jiang2013_fig2",
    "jiang2013-fig3": "ppdp.experiments.jiang2013_fig3",
    "jiang2013-fig4": "ppdp.experiments.jiang2013_fig4",
    "song2017-synthetic": "ppdp.experiments.song2017_synthetic",
    "song2017-activity": "ppdp.experiments.song2017_activity",
    "gu2022-fig1": "ppdp.experiments.gu2022_fig1",
    "gu2022-fig2": "ppdp.experiments.gu2022_fig2",
    "gu2022-fig3": "ppdp.experiments.gu2022_fig3",
    "chaudhuri2011-adult": "ppdp.experiments.chaudhuri2011_adult",
    "chaudhuri2011-kdd": "ppdp.experiments.chaudhuri2011_kdd",
    "li2014-auc-vs-epsilon": "ppdp.experiments.li2014_auc_vs_epsilon",
    "li2014-auc-vs-dims": "ppdp.experiments.li2014_auc_vs_dims",
    "li2014-auc-vs-sampling-rate": "ppdp.experiments.li2014_auc_vs_sampling_rate",
    "li2014-time": "ppdp.experiments.li2014_time",
    "wu-fig1": "ppdp.experiments.wu_fig1",
    "wu-fig2": "ppdp.experiments.wu_fig2",
    "wu-fig3": "ppdp.experiments.wu_fig3",
    "wu-fig4": "ppdp.experiments.wu_fig4",
    "ldp-comparison": "ppdp.experiments.ldp_comparison",
}


def _available(experiment_id: str) -> bool:
    """Whether the experiment's module is present (a registered ID may be under construction)."""
    return importlib.util.find_spec(EXPERIMENTS[experiment_id]) is not None


@dataclass(frozen=True)
class ExperimentInfo:
    """One registered experiment: its ID, title and module (``Config``, ``run``)."""

    id: str
    title: str
    module: ModuleType

    def config(self, *, quick: bool = False, seed: int | None = None, **overrides: Any) -> Any:
        """The full (or quick) config, with an optional seed and field overrides."""
        cls = self.module.Config
        base = cls.quick() if quick else cls.full()
        if seed is not None:
            overrides["seed"] = seed
        return replace(base, **overrides) if overrides else base


def get_experiment(experiment_id: str) -> ExperimentInfo:
    """Look up an experiment by ID.

    Raises
    ------
    ParameterError
        For an unknown ID; the message lists the known ones.
    """
    if not isinstance(experiment_id, str):
        raise ParameterTypeError(
            f"experiment_id ({experiment_id!r}) must be a string, not "
            f"{type(experiment_id).__name__}"
        )
    if experiment_id not in EXPERIMENTS:
        raise ParameterError(
            f"experiment_id ({experiment_id!r}) is not a known experiment; known: "
            + ", ".join(EXPERIMENTS)
        )
    if not _available(experiment_id):
        raise ParameterError(
            f"experiment_id ({experiment_id!r}) is registered but its module "
            f"{EXPERIMENTS[experiment_id]} is not present in this installation"
        )
    module = importlib.import_module(EXPERIMENTS[experiment_id])
    return ExperimentInfo(experiment_id, module.TITLE, module)


def list_experiments() -> list[ExperimentInfo]:
    """Every registered experiment, in registry order."""
    return [get_experiment(i) for i in EXPERIMENTS if _available(i)]


def run_experiment(
    experiment_id: str,
    *,
    out_dir: str | Path | None = None,
    quick: bool = False,
    seed: int | None = None,
    progress: Progress | None = None,
    **overrides: Any,
) -> ExperimentResult:
    """Run a registered experiment and write its CSV, JSON config, PNG plots and summary.

    Parameters
    ----------
    experiment_id : str
        See :data:`EXPERIMENTS` (or ``ppdp reproduce --list``).
    out_dir : path, optional
        Default ``experiments-results/<ID>`` (``<ID>-quick`` for a quick run), relative to
        the working directory.
    quick : bool, default False
        The reduced grid (well under a minute) instead of the paper's.
    seed : int, optional
        Root seed (default: the experiment's own fixed seed). Runs are always seeded.
    progress : callable, optional
        ``progress(done, total, message)`` after each unit of work.
    **overrides
        Fields of the experiment's ``Config`` to change (e.g. ``n_rows`` for tests).
    """
    info = get_experiment(experiment_id)
    if seed is not None:
        seed = check_int("seed", seed, minimum=0)
    config = info.config(quick=quick, seed=seed, **overrides)
    if out_dir is None:
        out_dir = Path("experiments-results") / (experiment_id + ("-quick" if quick else ""))
    logger.info("running %s into %s", experiment_id, out_dir)
    result: ExperimentResult = info.module.run(config, out_dir, progress=progress)
    return result
