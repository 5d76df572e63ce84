"""Publishing private tables: DP-PCA releases, DP-LDA synthetic data, LDA-DP projections, baselines,
marginal-based synthetic tables (TableSynthesizer), and noisy counts and means by group
(GroupByPublisher).

Every publisher spends in ``fit`` only, in the order check → validate → spend → release
(:mod:`ppdp.publish._base`), and its ``release_`` states the guarantee.
:func:`publish_table_file` does what ``ppdp publish`` does, from a table file to a release
file and its guarantee.
"""

from ppdp.publish._base import Charge, Publisher, Release
from ppdp.publish.baselines import ExponentialPublisher, LaplacePublisher
from ppdp.publish.files import PublishResult, publish_table_file
from ppdp.publish.groupby import GroupByPublisher
from ppdp.publish.lda_projection import LDAProjectionPublisher
from ppdp.publish.lda_synth import DPLDASynthesizer
from ppdp.publish.pca import DPPCAPublisher
from ppdp.publish.table_synth import TableSynthesizer

__all__ = [
    "Charge",
    "DPLDASynthesizer",
    "DPPCAPublisher",
    "ExponentialPublisher",
    "GroupByPublisher",
    "LDAProjectionPublisher",
    "LaplacePublisher",
    "PublishResult",
    "Publisher",
    "Release",
    "TableSynthesizer",
    "publish_table_file",
]
