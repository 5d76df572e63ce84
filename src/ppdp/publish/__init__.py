"""Publishing private tables: DP-PCA releases, DP-LDA synthetic data and their baselines.

Every publisher spends in ``fit`` only, in the order check → validate → spend → release
(:mod:`ppdp.publish._base`), and its ``release_`` states the guarantee.
"""

from ppdp.publish._base import Charge, Publisher, Release

__all__ = ["Charge", "Publisher", "Release"]
