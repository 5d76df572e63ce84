"""Zero-sum masks: from a trusted dealer, or from pairwise X25519 agreements (no dealer).

Both constructions add, for each pair of owners ``i < l`` (in the configured owner order),
a Gaussian vector ``r_il`` to owner ``i``'s message and subtract it from owner ``l``'s:

    ``e_j = Σ_{l > j} r_jl − Σ_{i < j} r_ij``,  ``r_il`` iid ``N(0, s²)`` per coordinate.

So ``Σ_j e_j = 0`` and ``Cov(e) = s²(mI − J) = m s² (I − J/m)``: the same Gaussian law as
the dealer construction ``e_j = e'_j − mean(e')`` of ALGORITHMS-publishing B.4 with
``Var e'_j = m s²``, but every ``r_il`` is drawn by :func:`ppdp.noise.gaussian` on the
statistic's power-of-two grid Λ, so every ``e_j`` is an exact multiple of Λ and the masks
cancel *exactly* in floating point (no cancellation error at all), as long as magnitudes stay
below ``2**52·Λ`` (checked before sending).

* ``dealer="trusted"``: the :class:`~ppdp.federated.roles.NoiseDealer` draws every ``r_il``
  from its own CSPRNG and sends owner ``j`` only ``e_j``.
* ``dealer="none"``: owners ``i`` and ``l`` agree on a key with X25519 (their ephemeral public
  keys travel in signed ``key-share`` messages, so nobody in between can substitute one),
  expand it with HKDF-SHA256 bound to the session and the pair, and draw ``r_il`` from a
  ChaCha20 key stream (:class:`KeyStreamRandom`) through the same :mod:`ppdp.noise` samplers:
  both ends compute the identical ``r_il``; nobody else learns it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from numpy.typing import NDArray

from ppdp import noise
from ppdp.exceptions import CalibrationError, ParameterError, ParameterTypeError
from ppdp.federated.calibration import FederatedPlan, exact_limit
from ppdp.random import RandomSource, RandomState, resolve_random_state

__all__ = [
    "KeyStreamRandom",
    "Masks",
    "check_exact",
    "dealer_masks",
    "pair_key",
    "pair_masks",
    "pairwise_masks",
    "sample_joint_noise",
]

_HKDF_SALT = b"ppdp-federated-pairwise-mask-v1"


class KeyStreamRandom:
    """A :class:`~ppdp.random.RandomSource` reading 64-bit words from a ChaCha20 key stream.

    Parameters
    ----------
    key : bytes
        32 secret bytes (e.g. from :func:`pair_key`). Use each key for one stream only.

    Notes
    -----
    ChaCha20 (RFC 8439) with a zero nonce, keystream read in order; a fresh key per session
    and pair makes nonce reuse impossible. ``is_secure`` is True: the words are as
    unpredictable as the key is secret.

    Examples
    --------
    >>> a, b = KeyStreamRandom(bytes(32)), KeyStreamRandom(bytes(32))
    >>> bool((a.uint64(4) == b.uint64(4)).all())
    True
    """

    is_secure = True

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes) or len(key) != 32:
            raise ParameterError("key must be 32 bytes")
        cipher = Cipher(algorithms.ChaCha20(key, bytes(16)), mode=None)
        self._enc = cipher.encryptor()

    def uint64(self, n: int) -> NDArray[np.uint64]:
        n = int(n)
        return np.frombuffer(self._enc.update(bytes(8 * n)), dtype="<u8").astype(np.uint64)

    def __repr__(self) -> str:
        return "KeyStreamRandom(<secret key>)"


def pair_key(
    own: X25519PrivateKey, peer: X25519PublicKey, *, session_id: str, first: str, second: str
) -> bytes:
    """The 32-byte stream key of the pair ``(first, second)`` (configured owner order).

    ``HKDF-SHA256(X25519(own, peer), salt, info = session_id ‖ first ‖ second)``: both owners
    of the pair compute the same key; another session or pair gets an independent one.
    """
    if not isinstance(own, X25519PrivateKey) or not isinstance(peer, X25519PublicKey):
        raise ParameterTypeError("own and peer must be X25519 private and public keys")
    shared = own.exchange(peer)
    info = "\x00".join(("ppdp-pair", session_id, first, second)).encode("utf-8")
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=info).derive(shared)


@dataclass(frozen=True)
class Masks:
    """One owner's masks: on its class sums ``(K, d)`` and on ``upper(Σxxᵀ)`` ``(d(d+1)/2,)``."""

    sums: NDArray[np.float64]
    second_moment: NDArray[np.float64]

    def __add__(self, other: Masks) -> Masks:
        return Masks(self.sums + other.sums, self.second_moment + other.second_moment)

    def __neg__(self) -> Masks:
        return Masks(-self.sums, -self.second_moment)

    @classmethod
    def zeros(cls, plan: FederatedPlan) -> Masks:
        p = plan.n_features
        return cls(np.zeros((len(plan.class_counts), p)), np.zeros(p * (p + 1) // 2))


def pair_masks(plan: FederatedPlan, *, random_state: RandomSource) -> Masks:
    """One pair's ``r``: Gaussian on the plan's grids, class sums first, then ``Σxxᵀ``.

    The draw order is fixed, so two owners feeding the same key stream get the same ``r``.
    """
    p = plan.n_features
    sums = np.stack(
        [
            np.asarray(noise.gaussian(s, p, random_state=random_state, granularity=plan.sum_grid))
            for s in plan.pair_sum_sigmas
        ]
    )
    sm = np.asarray(
        noise.gaussian(
            plan.pair_second_moment_sigma,
            p * (p + 1) // 2,
            random_state=random_state,
            granularity=plan.second_moment_grid,
        )
    )
    return Masks(sums, sm)


def _pairs(m: int) -> list[tuple[int, int]]:
    """The pairs ``(i, l)``, ``i < l``, in the order their masks are drawn."""
    return [(i, j) for i in range(m) for j in range(i + 1, m)]


def dealer_masks(plan: FederatedPlan, *, random_state: RandomSource) -> list[Masks]:
    """A trusted dealer's masks for the ``m`` owners (in configured order); they sum to 0."""
    m = plan.n_owners
    out = [Masks.zeros(plan) for _ in range(m)]
    for i, j in _pairs(m):
        r = pair_masks(plan, random_state=random_state)
        out[i] = out[i] + r  # the earlier owner adds r
        out[j] = out[j] + (-r)  # the later one subtracts it
    for masks in out:
        check_exact(plan, masks, what="dealer mask")
    return out


def sample_joint_noise(
    plan: FederatedPlan,
    n: int,
    *,
    random_state: RandomState = None,
    statistic: str = "second-moment",
    class_index: int = 0,
) -> NDArray[np.float64]:
    """``n`` independent draws of the noise ``(e_j + g_j)_j`` the publisher sees on one coordinate.

    The same law as one coordinate of the owners' messages (pairwise masks as in
    :func:`dealer_masks`, owners' own noise as in :class:`~ppdp.federated.roles.DataOwner`):
    an ``(m, n)`` array. For audits and Monte-Carlo checks of the joint-view analysis (the
    audits' half-noise control: a :class:`ppdp.audit.ScaledNoise` ``random_state``).
    """
    if statistic == "second-moment":
        pair, own, grid = (
            plan.pair_second_moment_sigma,
            plan.owner_second_moment_sigma,
            plan.second_moment_grid,
        )
    elif statistic == "class-sum":
        pair, own, grid = (
            plan.pair_sum_sigmas[class_index],
            plan.owner_sum_sigmas[class_index],
            plan.sum_grid,
        )
    else:
        raise ParameterError(f"statistic ({statistic!r}) must be 'second-moment' or 'class-sum'")
    src = resolve_random_state(random_state)
    m = plan.n_owners
    out = np.zeros((m, int(n)))
    for i, j in _pairs(m):
        r = np.asarray(noise.gaussian(pair, int(n), random_state=src, granularity=grid))
        out[i] += r
        out[j] -= r
    out += np.asarray(noise.gaussian(own, (m, int(n)), random_state=src, granularity=grid))
    return out


def pairwise_masks(
    plan: FederatedPlan,
    *,
    owners: Sequence[str],
    me: str,
    own_key: X25519PrivateKey,
    peer_keys: Mapping[str, X25519PublicKey],
    session_id: str,
) -> Masks:
    """Owner ``me``'s mask from pairwise agreements with every other owner (``dealer="none"``)."""
    if me not in owners:
        raise ParameterError(f"me ({me!r}) must be one of the owners {list(owners)}")
    pos = owners.index(me)
    total = Masks.zeros(plan)
    for idx, other in enumerate(owners):
        if other == me:
            continue
        if other not in peer_keys:
            raise ParameterError(f"peer_keys lacks owner {other!r}")
        first, second = (me, other) if pos < idx else (other, me)
        key = pair_key(own_key, peer_keys[other], session_id=session_id, first=first, second=second)
        r = pair_masks(plan, random_state=KeyStreamRandom(key))
        total = total + (r if pos < idx else -r)
    check_exact(plan, total, what="pairwise mask")
    return total


def check_exact(plan: FederatedPlan, masks: Masks, *, what: str) -> None:
    """Refuse values whose float sums would no longer be exact (``|v| ≥ 2**52·Λ``)."""
    for arr, grid in ((masks.sums, plan.sum_grid), (masks.second_moment, plan.second_moment_grid)):
        if arr.size and float(np.max(np.abs(arr))) >= exact_limit(grid) / plan.n_owners:
            raise CalibrationError(
                f"{what} exceeds 2**52 grid steps / m: sums would not be exact; lower mask_scale"
            )
