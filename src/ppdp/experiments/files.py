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

import json
from collections.abc import Callable
from pathlib import Path

from ppdp._io import check_output_folder
from ppdp.exceptions import ParameterError
from ppdp.experiments._registry import EXPERIMENTS

__all__ = ["RUN_MARKER", "previous_run", "results_folder"]

#: The file every run writes into its results folder (its config, to rerun it): a folder
#: holding one holds a previous run's results.
RUN_MARKER = "config.json"


def previous_run(folder: str | Path) -> str | None:
    """What previous run's results ``folder`` holds, in words, or None when it holds none.

    A run is recognised by :data:`RUN_MARKER`; the words name its experiment when the file
    says which (``"the results of a previous run of 'wu-fig1'"``).
    """
    marker = Path(folder) / RUN_MARKER
    if not marker.is_file():
        return None
    try:
        experiment = json.loads(marker.read_text(encoding="utf-8")).get("experiment")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        experiment = None
    if isinstance(experiment, str) and experiment:
        return f"the results of a previous run of {experiment!r}"
    return f"a {RUN_MARKER} (the results of a previous run?)"


def results_folder(
    experiment: str | None,
    output: str | Path | None,
    *,
    quick: bool = False,
    force: bool = False,
    say: Callable[[str], None] | None = None,
) -> Path:
    """The folder a run of ``experiment`` writes into, checked before the run.

    An ``output`` given explicitly that holds another run's results (:func:`previous_run`)
    is refused unless ``force``: a results folder is never overwritten by mistake. The
    default folder is the one rerunning the same command writes again, so its previous
    results are replaced, and ``say`` is told which folder. A replaced run's files are
    overwritten by name; files the new run does not write are left. An empty or missing
    folder is fine, and partial files a killed run left are removed.

    Parameters
    ----------
    experiment : str or None
        A registered experiment ID (:data:`ppdp.experiments.EXPERIMENTS`).
    output : path, optional
        The folder; None means ``experiments-results/ID`` (``ID-quick`` when ``quick``).
    quick : bool, default False
        Whether the run uses the reduced grid.
    force : bool, default False
        Replace the results of a previous run in an explicit ``output``.
    say : callable, optional
        Called with one line when a previous run's results are about to be replaced.

    Returns
    -------
    Path
        The folder (a folder or creatable, writable; a killed run's partial files removed).

    Raises
    ------
    ParameterError
        No experiment, or one not registered (the message names the registered ones), a
        folder that cannot hold the results, or an explicit ``output`` holding a previous
        run's results without ``force`` (nothing in it is touched).
    """
    from ppdp._validation import check_bool

    if experiment not in EXPERIMENTS:
        what = "no experiment given" if experiment is None else f"unknown experiment {experiment!r}"
        raise ParameterError(f"{what}; known: {', '.join(EXPERIMENTS)}")
    force = check_bool("force", force)
    explicit = output is not None
    if output is None:
        output = Path("experiments-results") / (experiment + ("-quick" if quick else ""))
    folder = Path(output)
    found = previous_run(folder) if folder.is_dir() else None
    if found is not None and explicit and not force:
        raise ParameterError(
            f"--output ({str(folder)!r}) holds {found}; choose another folder, or pass "
            "--force to replace them"
        )
    checked = check_output_folder(folder)
    if found is not None and say is not None:
        say(f"replacing {found} in {folder}")
    return checked
