"""Correlated data: Pufferfish privacy and the Markov Quilt Mechanism.

* :class:`PufferfishSpec` — secrets, secret pairs and the class Θ, in words.
* :class:`MarkovChainClass` — Θ for Markov chains (finite set of transition matrices).
* :class:`MarkovQuiltMechanism` — MQMExact / MQMApprox (Song, Wang & Chaudhuri 2017).
* Baselines :class:`GroupDPMechanism`, :class:`GK16Mechanism`, :class:`WassersteinMechanism`
  (small chains, by enumeration).

Privacy argument: ``docs/proofs/pufferfish-mqm.md``.
"""

from ppdp.correlated._release import CorrelatedRelease
from ppdp.correlated._spec import MODEL_IN_THETA, PufferfishSpec, pufferfish_guarantee
from ppdp.correlated.baselines import GK16Mechanism, GroupDPMechanism, gk16_gamma
from ppdp.correlated.bayesnet import BayesianNetworkClass, BayesNetQuiltMechanism
from ppdp.correlated.markov import MarkovChainClass
from ppdp.correlated.mqm import MarkovQuiltMechanism
from ppdp.correlated.wasserstein import WassersteinMechanism

__all__ = [
    "MODEL_IN_THETA",
    "BayesNetQuiltMechanism",
    "BayesianNetworkClass",
    "CorrelatedRelease",
    "GK16Mechanism",
    "GroupDPMechanism",
    "MarkovChainClass",
    "MarkovQuiltMechanism",
    "PufferfishSpec",
    "WassersteinMechanism",
    "gk16_gamma",
    "pufferfish_guarantee",
]
