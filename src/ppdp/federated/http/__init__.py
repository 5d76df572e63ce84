"""HTTP deployment of the multi-party round: each party its own process.

Servers are FastAPI applications run by uvicorn; clients are httpx. Each party runs one
role of :mod:`ppdp.federated.roles` behind a :class:`PartyNode`, which checks every
incoming message with the :class:`~ppdp.federated.messages.MessageValidator` before the
role sees it, and delivers the role's outgoing messages in order, with timeouts and
retries. Dealer shares travel sealed (X25519 + ChaCha20-Poly1305) to their owner.

Command line: ``ppdp federate init`` and ``run --config FILE`` (a round across machines),
``ppdp federate publisher|owner|dealer --config FILE`` and
``ppdp federate demo --owners 3``; see ``docs/federated-deployment.md``.
"""

try:  # the ``server`` extra
    import fastapi  # noqa: F401
    import httpx  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as _exc:  # pragma: no cover - depends on the installed extras
    from ppdp.exceptions import OptionalDependencyError

    raise OptionalDependencyError(
        "the HTTP deployment needs fastapi, uvicorn and httpx, which are not all installed: "
        "pip install 'ppdp[server]'"
    ) from _exc

from ppdp.federated.http._app import create_app
from ppdp.federated.http._client import DeliveryError, PeerClient, RejectedError
from ppdp.federated.http._config import (
    DataConfig,
    PartyConfig,
    PeerConfig,
    Timeouts,
    config_from_dict,
    load_config,
)
from ppdp.federated.http._demo import DemoResult, run_demo, split_table
from ppdp.federated.http._deploy import Deployment, free_ports, prepare_deployment
from ppdp.federated.http._guard import (
    BODY_SIGNATURE_HEADER,
    SENDER_HEADER,
    check_plain_http_bind,
    transport_headers,
)
from ppdp.federated.http._init import InitResult, init_round, parse_named
from ppdp.federated.http._node import MessageRefusedError, NodeStats, PartyNode
from ppdp.federated.http._procs import PartyProcess, start_parties, wait_parties
from ppdp.federated.http._runner import PartyOutcome, PartyParts, run_party, serve_node
from ppdp.federated.http._sealed import (
    SEALED_CONTENT_TYPE,
    decode_box_public_key,
    encode_box_public_key,
    generate_box_key,
    load_box_key,
    open_sealed,
    save_box_key,
    seal,
)
from ppdp.federated.http._wire import entry_from_wire, entry_to_wire, sync_replica

__all__ = [
    "BODY_SIGNATURE_HEADER",
    "SEALED_CONTENT_TYPE",
    "SENDER_HEADER",
    "DataConfig",
    "DeliveryError",
    "DemoResult",
    "Deployment",
    "InitResult",
    "MessageRefusedError",
    "NodeStats",
    "PartyConfig",
    "PartyNode",
    "PartyOutcome",
    "PartyParts",
    "PartyProcess",
    "PeerClient",
    "PeerConfig",
    "RejectedError",
    "Timeouts",
    "check_plain_http_bind",
    "config_from_dict",
    "create_app",
    "decode_box_public_key",
    "encode_box_public_key",
    "entry_from_wire",
    "entry_to_wire",
    "free_ports",
    "generate_box_key",
    "init_round",
    "load_box_key",
    "load_config",
    "open_sealed",
    "parse_named",
    "prepare_deployment",
    "run_demo",
    "run_party",
    "save_box_key",
    "seal",
    "serve_node",
    "split_table",
    "start_parties",
    "sync_replica",
    "transport_headers",
    "wait_parties",
]
