"""One Mul-LDA-DP round in-process: the same roles as over HTTP, routed through a queue."""

from __future__ import annotations

import logging
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from numpy.typing import ArrayLike, NDArray

from ppdp._validation import check_option
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.exceptions import (
    DataValidationError,
    NotDifferentiallyPrivateWarning,
    ParameterError,
    PPDPError,
    user_stacklevel,
)
from ppdp.federated.calibration import FederatedPlan
from ppdp.federated.config import DEALERS, RoundConfig
from ppdp.federated.messages import Message, new_session_id
from ppdp.federated.roles import (
    TERMINAL,
    DataOwner,
    FederatedPublisher,
    NoiseDealer,
    create_publishing_accountant,
    must_abort,
)
from ppdp.ledger import Signer
from ppdp.random import RandomState, SeededRandom, resolve_random_state

__all__ = [
    "FederatedResult",
    "Network",
    "Round",
    "build_round",
    "run_round",
    "simulate_round",
]

logger = logging.getLogger(__name__)

#: A hook may rewrite, drop (return []) or multiply (return several) a message in flight.
Hook = Callable[[Message], list[Message]]


@dataclass(frozen=True)
class FederatedResult:
    """What one simulated round produced.

    Attributes
    ----------
    direction : ndarray (d, r) or None
        Unit-norm Fisher direction(s); None if the round aborted.
    projections : ndarray (n, r) or None
        Rows in owner order (owners' rows in their given order); None for
        ``release="direction"`` or an aborted round.
    guarantee : Guarantee
        What the release promises (trust model in the assumptions).
    ledger_path : Path or None
        The publisher's ledger file (None when kept in memory).
    timings : dict
        Seconds: ``total``, ``compute`` (inside the roles), ``routing`` (the rest), per role.
    state : str
        ``"done"`` or ``"aborted"``.
    abort_reason : str or None
    noisy_means : ndarray (K, d) or None
    noisy_second_moment : ndarray (d, d) or None
        ``Σxxᵀ`` plus the aggregate noise (DP outputs, recorded in the ledger).
    plan : FederatedPlan
    session_id : str
    replica_paths : dict of owner id to Path
    messages : int
        Messages delivered.
    seeded : bool
        What the round's spend records: some owner's noise (or the dealer's masks) came
        from a seeded, reproducible stream, or an owner did not say (False: nothing spent).
    """

    direction: NDArray[np.float64] | None
    projections: NDArray[np.float64] | None
    guarantee: Guarantee
    ledger_path: Path | None
    timings: dict[str, float]
    state: str = "done"
    abort_reason: str | None = None
    noisy_means: NDArray[np.float64] | None = None
    noisy_second_moment: NDArray[np.float64] | None = None
    plan: FederatedPlan | None = None
    session_id: str = ""
    replica_paths: dict[str, Path] = field(default_factory=dict)
    messages: int = 0
    seeded: bool = False


@dataclass
class Round:
    """The parties of one round, ready to run (see :func:`build_round`)."""

    config: RoundConfig
    publisher: FederatedPublisher
    owners: dict[str, DataOwner]
    dealer: NoiseDealer | None
    signers: dict[str, Signer]
    ledger_path: Path | None
    replica_paths: dict[str, Path]

    @property
    def parties(self) -> dict[str, Any]:
        out: dict[str, Any] = {self.config.publisher: self.publisher, **self.owners}
        if self.dealer is not None:
            out[self.config.dealer or ""] = self.dealer
        return out


class Network:
    """Routes messages between in-process roles, with optional fault injection.

    A refused message that must not end the round (a replayed copy, one that does not
    authenticate: :func:`~ppdp.federated.roles.must_abort`) is dropped and logged
    (``ppdp.federated.simulate``, warning); every refusal is kept in ``refusals``.

    Parameters
    ----------
    parties : mapping of party id to role
    hook : callable(message) -> list of messages, optional
        Applied to every message in flight (tests: drop, duplicate, tamper, delay).
    shuffle : numpy Generator, optional
        Deliver the queued messages in a random order (reordering test). Not privacy noise.
    """

    def __init__(
        self,
        parties: dict[str, Any],
        *,
        hook: Hook | None = None,
        shuffle: np.random.Generator | None = None,
        session_id: str = "",
    ) -> None:
        self.parties = parties
        self.hook = hook
        self.shuffle = shuffle
        self.session_id = session_id
        self.delivered = 0
        self.refusals: list[str] = []

    def run(self, first: list[Message]) -> None:
        """Deliver until no message is left in flight."""
        queue: deque[Message] = deque()
        self._push(queue, first)
        while queue:
            if self.shuffle is not None and len(queue) > 1:
                k = int(self.shuffle.integers(len(queue)))
                queue.rotate(-k)
            msg = queue.popleft()
            role = self.parties.get(msg.recipient)
            if role is None:
                self.refusals.append(f"no party {msg.recipient!r}")
                continue
            try:
                out = role.handle(msg)
                self.delivered += 1
            except PPDPError as exc:
                self.refusals.append(f"{msg.recipient} refused {msg.sender}#{msg.seq}: {exc}")
                out = []
                if role.state in TERMINAL:
                    pass
                elif must_abort(exc, msg, session_id=self.session_id):
                    out = role.abort(f"refused {msg.kind} from {msg.sender}: {exc}")
                else:  # a copy, or a message that does not authenticate: the round goes on
                    logger.warning("%s drops a message: %s", msg.recipient, exc)
            self._push(queue, out)

    def _push(self, queue: deque[Message], messages: list[Message]) -> None:
        for m in messages:
            queue.extend(self.hook(m) if self.hook is not None else [m])


def _keys(signers: dict[str, Signer]) -> dict[str, Ed25519PublicKey]:
    return {k: s.public_key for k, s in signers.items()}


def build_round(
    parts: Sequence[tuple[ArrayLike, ArrayLike]],
    *,
    epsilon: float,
    delta: float,
    class_counts: Sequence[int] | None = None,
    classes: Sequence[Any] | None = None,
    dealer: str = "trusted",
    calibration: str = "gaussian",
    joint_view: bool = True,
    mask_scale: float | None = None,
    mean_share: float = 0.5,
    release: str = "direction",
    projection_share: float = 0.5,
    n_components: int | None = None,
    ridge: float | None = None,
    workdir: str | Path | None = None,
    random_state: RandomState = None,
    budget_total: PrivacyBudget | None = None,
    constant_blocks: Sequence[Sequence[int]] | None = None,
    session_id: str | None = None,
) -> Round:
    """Create the parties of one round (keys, config, ledger, replicas); see simulate_round."""
    check_option("dealer", dealer, DEALERS)
    if not isinstance(parts, Sequence) or len(parts) < 2:
        raise ParameterError("parts must be a sequence of at least 2 (X, y) pairs, one per owner")
    data = []
    for i, part in enumerate(parts):
        if not isinstance(part, tuple | list) or len(part) != 2:
            raise ParameterError(f"parts[{i}] must be an (X, y) pair")
        X = np.asarray(part[0], dtype=np.float64)
        y = np.asarray(part[1])
        if X.ndim != 2:
            raise DataValidationError(f"parts[{i}] X has shape {X.shape}; expected (n, d)")
        data.append((X, y))
    d = data[0][0].shape[1]
    if any(X.shape[1] != d for X, _ in data):
        raise DataValidationError("every part must have the same number of columns")
    if classes is None:
        labels = np.concatenate([y for _, y in data])
        classes = [v.item() if hasattr(v, "item") else v for v in np.unique(labels)]
    classes = list(classes)
    labels = np.concatenate([y for _, y in data])
    observed = [int(np.sum(labels == c)) for c in classes]
    if class_counts is None:
        # Treated as public: the class sizes are not protected (ALGORITHMS-publishing B.5.7).
        class_counts = observed
    elif [int(c) for c in class_counts] != observed:
        # As the centralised publisher: the declared sizes must be the data's (they are
        # public by assumption, so the check reveals nothing the relation protects).
        raise DataValidationError(
            f"the declared class counts {[int(c) for c in class_counts]} are not the parts' "
            "class sizes; declare the public global class counts of these records"
        )
    m = len(data)
    owners = tuple(f"owner-{j + 1}" for j in range(m))
    session = session_id if session_id is not None else new_session_id()
    config = RoundConfig(
        session_id=session,
        publisher="publisher",
        owners=owners,
        dealer="dealer" if dealer == "trusted" else None,
        epsilon=epsilon,
        delta=delta,
        n_features=d,
        classes=tuple(classes),
        class_counts=tuple(int(c) for c in class_counts),
        calibration=calibration,
        joint_view=joint_view,
        mask_scale=mask_scale,
        mean_share=mean_share,
        release=release,
        projection_share=projection_share,
        n_components=n_components,
        ridge=ridge,
        constant_blocks=None if constant_blocks is None else tuple(map(tuple, constant_blocks)),
    )
    ids = [config.publisher, *owners] + ([config.dealer] if config.dealer else [])
    signers = {i: Signer.generate(i) for i in ids}
    keys = _keys(signers)
    src = resolve_random_state(random_state)
    if isinstance(src, SeededRandom):
        streams = [src.spawn() for _ in range(m + 1)]
    else:
        streams = [src] * (m + 1)
    ledger_path = None
    replica_paths: dict[str, Path] = {}
    if workdir is not None:
        base = Path(workdir)
        base.mkdir(parents=True, exist_ok=True)
        ledger_path = base / "publisher-ledger.db"
        replica_paths = {o: base / f"{o}-replica.db" for o in owners}
    total = budget_total if budget_total is not None else config.budget
    accountant = create_publishing_accountant(
        ledger_path,
        publisher=signers[config.publisher],
        parties={k: v for k, v in keys.items() if k != config.publisher},
        dataset_id=f"mul-lda-dp-{session}",
        total=total,
    )
    publisher = FederatedPublisher(
        config,
        signer=signers[config.publisher],
        keys=keys,
        accountant=accountant,
        allow_seeded=not src.is_secure,  # the caller seeded every party: an experiment
    )
    owner_roles = {
        o: DataOwner(
            config,
            signer=signers[o],
            keys=keys,
            X=data[j][0],
            y=data[j][1],
            replica_path=replica_paths.get(o),
            random_state=streams[j],
        )
        for j, o in enumerate(owners)
    }
    dealer_role = (
        NoiseDealer(config, signer=signers[config.dealer], keys=keys, random_state=streams[m])
        if config.dealer
        else None
    )
    return Round(config, publisher, owner_roles, dealer_role, signers, ledger_path, replica_paths)


def simulate_round(
    parts: Sequence[tuple[ArrayLike, ArrayLike]],
    *,
    epsilon: float,
    delta: float,
    class_counts: Sequence[int] | None = None,
    dealer: str = "trusted",
    calibration: str = "gaussian",
    joint_view: bool = True,
    release: str = "direction",
    n_components: int | None = None,
    ridge: float | None = None,
    workdir: str | Path | None = None,
    random_state: RandomState = None,
    mask_scale: float | None = None,
    mean_share: float = 0.5,
    projection_share: float = 0.5,
    classes: Sequence[Any] | None = None,
    constant_blocks: Sequence[Sequence[int]] | None = None,
) -> FederatedResult:
    """Run one whole Mul-LDA-DP round in-process and return what it released.

    The parties (one publisher, ``len(parts)`` owners, a dealer unless ``dealer="none"``)
    are the same state machines the HTTP deployment runs; messages are signed, validated
    and routed through an in-memory queue.

    Guarantee: with ``joint_view=True`` (default) the publisher's joint view of all
    messages, and hence the direction(s), are ``(ε, δ)``-DP under replace-one within a class
    and one owner, records scaled to ``‖x‖₂ ≤ 1``, public class counts, an honest dealer and
    no publisher–owner collusion (``result.guarantee`` lists the assumptions);
    ``"noisy-projections"`` adds ``projection_share·ε`` of Laplace noise per row (within ε).
    ``joint_view=False`` (the paper's split) and ``"raw-projections"`` warn
    :class:`~ppdp.exceptions.NotDifferentiallyPrivateWarning`.

    Parameters
    ----------
    parts : sequence of (X_j, y_j)
        One pair per owner; records already scaled to ``‖x‖₂ ≤ 1`` by a declared bound.
    epsilon, delta : float
        The round's whole budget (spent in the publisher's ledger before any share is
        requested).
    class_counts : sequence of int, optional
        Declared public global class sizes, in the order of the sorted labels. Default: counted
        from the parts' labels, i.e. the class sizes are treated as public (not protected).
    dealer : {"trusted", "none"}
        ``"none"``: pairwise X25519 masks, no dealer.
    calibration : {"gaussian", "paper"}
        Noise template of :func:`ppdp.publish.fisher.lda_noise_plan`.
    joint_view : bool
        Calibrate for the joint view (default) or use the paper's per-message split.
    release : {"direction", "noisy-projections", "raw-projections"}
    n_components, ridge : see :class:`~ppdp.federated.config.RoundConfig`.
    workdir : path, optional
        Keep the publisher's ledger (``publisher-ledger.db``) and each owner's replica
        (``owner-j-replica.db``) there; default: all in memory (fast, for experiments).
    random_state : None, int or Generator
        Seeds every party's own noise and the dealer (reproducible, insecure); the pairwise
        masks of ``dealer="none"`` always come from fresh X25519 keys but cancel exactly, so a
        seed still reproduces the result.
    mask_scale, mean_share, projection_share, classes, constant_blocks : see
        :class:`~ppdp.federated.config.RoundConfig` (``constant_blocks``: the one-hot blocks'
        column indices, to match the centralised publisher's ``remove_constant``).

    Returns
    -------
    FederatedResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> res = simulate_round([(X[:200], y[:200]), (X[200:], y[200:])], epsilon=1.0,
    ...                      delta=1e-5, random_state=1)
    >>> res.state, res.direction.shape
    ('done', (3, 1))
    """
    t0 = time.perf_counter()
    if not joint_view:
        warnings.warn(
            "joint_view=False: the paper's per-message calibration; the publisher's joint view "
            "of all messages is not (ε, δ)-DP (ALGORITHMS-publishing B.5 item 2)",
            NotDifferentiallyPrivateWarning,
            stacklevel=user_stacklevel(),
        )
    if release == "raw-projections":
        warnings.warn(
            "release='raw-projections' publishes wᵀx of every record exactly: not "
            "differentially private (ALGORITHMS-publishing B.5 item 1)",
            NotDifferentiallyPrivateWarning,
            stacklevel=user_stacklevel(),
        )
    rnd = build_round(
        parts,
        epsilon=epsilon,
        delta=delta,
        class_counts=class_counts,
        classes=classes,
        dealer=dealer,
        calibration=calibration,
        joint_view=joint_view,
        mask_scale=mask_scale,
        mean_share=mean_share,
        release=release,
        projection_share=projection_share,
        n_components=n_components,
        ridge=ridge,
        workdir=workdir,
        random_state=random_state,
        constant_blocks=constant_blocks,
    )
    t_built = time.perf_counter()
    net = run_round(rnd)
    t_end = time.perf_counter()
    return _result(rnd, net, t0, t_built, t_end)


def run_round(
    rnd: Round,
    *,
    hook: Hook | None = None,
    shuffle: np.random.Generator | None = None,
) -> Network:
    """Start every party, deliver every message, then abort whatever is still waiting.

    In-process there is no clock: a round that stops moving (a party dropped out, a message
    was lost) is aborted once nothing is left in flight, the way a transport's timeout would
    abort it, and the abort messages are delivered too.
    """
    net = Network(rnd.parties, hook=hook, shuffle=shuffle, session_id=rnd.config.session_id)
    first: list[Message] = []
    for party in rnd.parties.values():
        if party is not rnd.publisher:
            first += party.start()
    try:
        first += rnd.publisher.start()
    except PPDPError:
        reason = rnd.publisher.abort_reason
        if reason is None:
            raise
        # A refusal at the start (budget exceeded, session already charged): nothing is
        # spent; the other parties are told at once and end aborted.
        net.run(rnd.publisher.abort(reason))
        return net
    net.run(first)
    for name, party in rnd.parties.items():
        if party.state not in TERMINAL:
            net.run(
                party.abort(
                    f"{name}: the round stalled (a party dropped out or a message was lost)"
                )
            )
    return net


def _result(rnd: Round, net: Network, t0: float, t_built: float, t_end: float) -> FederatedResult:
    pub = rnd.publisher
    compute = {
        name: party.timings.get("handle_s", 0.0) + party.timings.get("start_s", 0.0)
        for name, party in rnd.parties.items()
    }
    timings = {
        "total": t_end - t0,
        "setup": t_built - t0,
        "round": t_end - t_built,
        "compute": sum(compute.values()),
        "routing": max(0.0, (t_end - t_built) - sum(compute.values())),
        **{f"compute_{k}": v for k, v in compute.items()},
    }
    done = pub.state == "done"
    return FederatedResult(
        direction=pub.directions if done else None,
        projections=pub.projections if done else None,
        guarantee=pub.guarantee,
        ledger_path=rnd.ledger_path,
        timings=timings,
        state=pub.state,
        abort_reason=pub.abort_reason,
        noisy_means=pub.noisy_means,
        noisy_second_moment=pub.noisy_second_moment,
        plan=pub.plan,
        session_id=rnd.config.session_id,
        replica_paths=dict(rnd.replica_paths),
        messages=net.delivered,
        seeded=pub.spend_record is not None and pub.spend_record.seeded,
    )
