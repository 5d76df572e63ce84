"""Reproductions of the sources' figures: ``ppdp reproduce ID [--quick]``.

Each experiment is a module with a frozen ``Config`` dataclass (``Config.full()`` is the
paper's grid, ``Config.quick()`` a smoke run) and ``run(config, out_dir, *, progress=None)``
that writes the raw results (CSV), the config it ran (JSON), PNG plots (the ``plots``
extra) and a markdown summary that puts the paper's numbers beside ours and explains the
differences. Runs are seeded (they are experiments) and use the public API only.

Registered experiments:

* ``jiang2013-fig2``: eigenvector energy of Adult; F-norm of DP-PCA vs LAP and EXP.
* ``jiang2013-fig3``: accuracy and AUC of LDA and an entropy tree trained on DP-LDA,
  DP-PCA, LAP and EXP releases, with the BA and LA lines.
* ``jiang2013-fig4``: entropy of each release and its KL divergence to the original.
* ``song2017-synthetic``: noise scales of GroupDP, GK16, MQMApprox and MQMExact on the grid
  of binary Markov chains.
* ``song2017-activity``: L1 error of released activity histograms vs the trace length, on
  declared synthetic 4-state chains.

See ``docs/experiments.md``.
"""

from ppdp.experiments._framework import ExperimentResult
from ppdp.experiments._registry import (
    EXPERIMENTS,
    ExperimentInfo,
    get_experiment,
    list_experiments,
    run_experiment,
)

__all__ = [
    "EXPERIMENTS",
    "ExperimentInfo",
    "ExperimentResult",
    "get_experiment",
    "list_experiments",
    "run_experiment",
]
