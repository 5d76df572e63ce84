"""A two-message toy protocol to test the HTTP transport without the LDA roles.

The publisher sends ``ping`` (an array of 2 floats) to each owner; each owner answers
``pong`` with the array doubled; the publisher is done when every owner answered.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from typing import Any

from ppdp.federated.http import PartyConfig, PartyNode, PartyParts
from ppdp.federated.http._runner import bind_socket, serve_node
from ppdp.federated.http._sealed import load_box_key
from ppdp.federated.http._tls import client_context
from ppdp.federated.messages import (
    ArraySpec,
    Message,
    MessageFields,
    MessageValidator,
    decode_array,
    encode_array,
    sign,
)
from ppdp.ledger import Signer, load_private_key

SPEC = {"x": ArraySpec((2,))}


class ToyRole:
    def __init__(self, config: PartyConfig, signer: Signer) -> None:
        self.config = config
        self.signer = signer
        self.state = "waiting"
        self.abort_reason: str | None = None
        self._seq: dict[str, int] = defaultdict(int)
        self._pongs: dict[str, list[float]] = {}
        self.owners = [p.id for p in config.peers_with_role("owner")]

    def _msg(self, to: str, kind: str, payload: dict[str, Any]) -> Message:
        fields = MessageFields(
            self.config.session_id, self.signer.id, to, self._seq[to], kind, payload
        )
        self._seq[to] += 1
        return sign(fields, self.signer)

    def start(self) -> list[Message]:
        if self.config.role != "publisher":
            return []
        self.state = "running"
        return [self._msg(o, "ping", {"x": encode_array([1.0, 2.0])}) for o in self.owners]

    def handle(self, m: Message) -> list[Message]:
        x = decode_array(m.payload["x"], shape=(2,))
        if self.config.role == "owner":
            self.state = "done"
            return [self._msg(m.sender, "pong", {"x": encode_array(2 * x)})]
        self._pongs[m.sender] = x.tolist()
        if set(self._pongs) == set(self.owners):
            self.state = "done"
        return []

    def abort(self, reason: str) -> list[Message]:
        self.state = "aborted"
        self.abort_reason = reason
        return []


def build_toy(config: PartyConfig) -> PartyParts:
    signer = Signer(config.party, load_private_key(config.key_file))
    role = ToyRole(config, signer)
    keys = config.known_keys()
    keys[config.party] = signer.public_key
    validator = MessageValidator(config.session_id, keys, recipient=config.party)
    kinds = {"owner": ["ping"], "publisher": ["pong"], "dealer": []}[config.role]

    def validate(m: Message) -> None:
        validator.validate(m, expected_kinds=kinds, spec=SPEC)

    node = PartyNode(
        party_id=config.party,
        role_name=config.role,
        session_id=config.session_id,
        role=role,
        validate=validate,
        decode=Message.from_json,
        encode=lambda m: m.to_json().encode("utf-8"),
        peers={p.id: p for p in config.peers},
        timeouts=config.timeouts,
        box_key=load_box_key(config.box_key_file) if config.box_key_file else None,
        seal_to=("owner",) if config.role == "dealer" else (),
        must_abort=lambda exc, m: False,  # the toy keeps going after a refusal
        ssl_context=client_context(config.tls) if config.tls is not None else None,
        transport_key=signer,
    )
    return PartyParts(node=node)


class ServedNode:
    """One party's node served in a background thread (the test plays its peers)."""

    def __init__(self, config, parts=None):
        self.config = config
        self.parts = parts or build_toy(config)
        self.ready = threading.Event()
        self.stop = None
        self.thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(10)
        self.url = config.url

    async def _main(self):
        self.stop = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        sock = bind_socket(self.config.host, self.config.port)
        await self.parts.node.open()
        async with serve_node(self.parts.node, sock, tls=self.config.tls):
            self.ready.set()
            await self.stop.wait()
            await self.parts.node.close()
        sock.close()

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)
