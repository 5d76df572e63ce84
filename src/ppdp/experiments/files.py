"""``ppdp reproduce``'s checks before a run: the experiment's name and its results folder.

Examples
--------
>>> from ppdp.experiments.files import results_folder
>>> results_folder("no-such-figure", None)
Traceback (most recent call last):
    ...
ppdp.exceptions.ParameterError: unknown experiment 'no-such-figure'; known: ...
"""

from __future__ import annotations

from pathlib import Path

from ppdp._io import check_output_folder
from ppdp.exceptions import ParameterError
from ppdp.experiments._registry import EXPERIMENTS

__all__ = ["results_folder"]


def results_folder(
    experiment: str | None, output: str | Path | None, *, quick: bool = False
) -> Path:
    """The folder a run of ``experiment`` writes into, checked before the run.

    Parameters
    ----------
    experiment : str or None
        A registered experiment ID (:data:`ppdp.experiments.EXPERIMENTS`).
    output : path, optional
        The folder; None means ``experiments-results/ID`` (``ID-quick`` when ``quick``).
    quick : bool, default False
        Whether the run uses the reduced grid.

    Returns
    -------
    Path
        The folder (a folder or creatable, writable; a killed run's partial files removed).

    Raises
    ------
    ParameterError
        No experiment, or one not registered (the message names the registered ones), or
        a folder that cannot hold the results.
    """
    if experiment not in EXPERIMENTS:
        what = "no experiment given" if experiment is None else f"unknown experiment {experiment!r}"
        raise ParameterError(f"{what}; known: {', '.join(EXPERIMENTS)}")
    if output is None:
        output = Path("experiments-results") / (experiment + ("-quick" if quick else ""))
    return check_output_folder(output)
