"""Signed messages and the validator: every rejection, with a clear ProtocolError."""

from __future__ import annotations

import base64
import dataclasses
import json

import numpy as np
import pytest

from ppdp.exceptions import ParameterError, ProtocolError
from ppdp.federated.messages import (
    ArraySpec,
    Message,
    MessageFields,
    MessageValidator,
    OptionalField,
    OutOfOrderError,
    ReplayError,
    check_payload,
    decode_array,
    encode_array,
    new_session_id,
    sign,
    signing_bytes,
    verify,
    verify_envelope,
)
from ppdp.ledger import Signer

SESSION = "session-1"


@pytest.fixture(scope="module")
def parties() -> dict[str, Signer]:
    return {name: Signer.generate(name) for name in ("publisher", "owner-1", "owner-2")}


def keys(parties: dict[str, Signer]) -> dict:
    return {k: s.public_key for k, s in parties.items()}


def msg(parties, sender="owner-1", seq=0, kind="mean-share", payload=None, **kw) -> Message:
    fields = MessageFields(
        kw.get("session_id", SESSION),
        sender,
        kw.get("recipient", "publisher"),
        seq,
        kind,
        {"x": encode_array([1.0, 2.0])} if payload is None else payload,
    )
    return sign(fields, kw.get("key", parties[sender]))


def validator(parties) -> MessageValidator:
    return MessageValidator(SESSION, keys(parties), recipient="publisher")


SPEC = {"x": ArraySpec((2,))}


def test_round_trip_and_signature(parties):
    m = msg(parties)
    again = Message.from_json(m.to_json())
    assert again == m
    assert verify(again, parties["owner-1"].public_key)
    assert not verify(again, parties["owner-2"].public_key)
    assert validator(parties).validate(again, spec=SPEC).payload == m.payload


def test_wire_form_is_canonical_json(parties):
    text = msg(parties).to_json()
    assert " " not in text and text == json.dumps(
        json.loads(text), sort_keys=True, separators=(",", ":")
    )
    # A re-serialisation with whitespace is not canonical: refused.
    with pytest.raises(ProtocolError, match="not canonical"):
        Message.from_json(json.dumps(json.loads(text), indent=1))


def test_signed_bytes_cover_every_field(parties):
    m = msg(parties)
    base = signing_bytes(m.fields)
    for change in (
        {"session_id": "other"},
        {"sender": "owner-2"},
        {"recipient": "owner-2"},
        {"seq": 1},
        {"kind": "scatter-share"},
        {"payload": {"x": encode_array([1.0, 2.0000000000000004])}},
    ):
        assert signing_bytes(dataclasses.replace(m.fields, **change)) != base, change


def test_unknown_sender_rejected(parties):
    stranger = Signer.generate("mallory")
    m = msg({"mallory": stranger}, sender="mallory")
    with pytest.raises(ProtocolError, match="unknown sender 'mallory'"):
        validator(parties).validate(m)


def test_forged_signature_rejected(parties):
    # Claims to be owner-1 but is signed with owner-2's key.
    forged = msg(parties, key=parties["owner-2"])
    with pytest.raises(ProtocolError, match="invalid signature: forged or altered"):
        validator(parties).validate(forged)


def test_altered_payload_rejected(parties):
    m = msg(parties)
    altered = Message(**{**m.__dict__, "payload": {"x": encode_array([1.0, 3.0])}})
    with pytest.raises(ProtocolError, match="invalid signature"):
        validator(parties).validate(altered)


def test_altered_wire_bytes_rejected(parties):
    text = msg(parties, seq=0).to_json()
    tampered = text.replace('"seq":0', '"seq":1')
    m = Message.from_json(tampered)
    v = validator(parties)
    v._next["owner-1"] = 1
    with pytest.raises(ProtocolError, match="invalid signature"):
        v.validate(m)


def test_wrong_session_rejected(parties):
    m = msg(parties, session_id="session-2")
    with pytest.raises(ProtocolError, match="belongs to session 'session-2'"):
        validator(parties).validate(m)


def test_wrong_recipient_rejected(parties):
    m = msg(parties, recipient="owner-2")
    with pytest.raises(ProtocolError, match="addressed to 'owner-2'"):
        validator(parties).validate(m)


def test_replay_rejected_and_not_counted(parties):
    v = validator(parties)
    m0 = msg(parties, seq=0)
    v.validate(m0)
    with pytest.raises(ReplayError, match="already delivered"):
        v.validate(m0)
    assert v.next_seq("owner-1") == 1
    assert issubclass(ReplayError, ProtocolError)


def test_reordering_rejected(parties):
    v = validator(parties)
    m1 = msg(parties, seq=1)
    with pytest.raises(OutOfOrderError, match="arrived before seq 0"):
        v.validate(m1)
    assert v.next_seq("owner-1") == 0  # nothing recorded
    v.validate(msg(parties, seq=0))
    v.validate(m1)
    assert v.next_seq("owner-1") == 2


def test_counters_are_per_sender(parties):
    v = validator(parties)
    v.validate(msg(parties, sender="owner-1", seq=0))
    v.validate(msg(parties, sender="owner-2", seq=0))
    with pytest.raises(ReplayError):
        v.validate(msg(parties, sender="owner-2", seq=0))


def test_wrong_kind_for_phase_rejected(parties):
    m = msg(parties, kind="scatter-share")
    with pytest.raises(ProtocolError, match=r"kind 'scatter-share' .* not expected now"):
        validator(parties).validate(m, expected_kinds=["mean-share"])


def test_rejected_message_does_not_advance_the_counter(parties):
    v = validator(parties)
    with pytest.raises(ProtocolError):
        v.validate(msg(parties, kind="scatter-share"), expected_kinds=["mean-share"])
    assert v.next_seq("owner-1") == 0


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ({"x": encode_array([1.0, 2.0, 3.0])}, r"shape \(3,\), expected \(2,\)"),
        ({"x": encode_array([[1.0, 2.0]])}, r"shape \(1, 2\), expected \(2,\)"),
        ({"x": encode_array([1.0, 2.0]), "y": 1}, "expected exactly"),
        ({}, "expected exactly"),
        ({"x": [1.0, 2.0]}, "encoded array"),
        ({"x": {"shape": [2], "data": "!!"}}, "not valid base64"),
        ({"x": {"shape": [2], "data": base64.b64encode(b"\0" * 8).decode()}}, "8 bytes"),
        ({"x": {"shape": [-1], "data": ""}}, "non-negative ints"),
    ],
)
def test_malformed_payload_rejected(parties, payload, match):
    with pytest.raises(ProtocolError, match=match):
        validator(parties).validate(msg(parties, payload=payload), spec=SPEC)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_rejected(parties, bad):
    data = np.array([1.0, bad], dtype="<f8").tobytes()
    payload = {"x": {"shape": [2], "data": base64.b64encode(data).decode()}}
    with pytest.raises(ProtocolError, match="NaN or infinity"):
        validator(parties).validate(msg(parties, payload=payload), spec=SPEC)


def test_an_optional_field_may_be_left_out_and_reads_as_none(parties):
    """Issue 29: a newer receiver takes an older sender's payload without a new field."""
    spec = {"digest": str, "seeded": OptionalField(bool)}
    older = msg(parties, payload={"digest": "ab"})
    assert check_payload(older, spec) == {"digest": "ab", "seeded": None}
    newer = msg(parties, payload={"digest": "ab", "seeded": True})
    assert check_payload(newer, spec) == {"digest": "ab", "seeded": True}
    for bad, match in (
        ({"digest": "ab", "seeded": 1}, "seeded .* must be of type bool"),
        ({"seeded": False}, r"expected exactly \['digest'\] \(optionally \['seeded'\]\)"),
        ({"digest": "ab", "seeded": False, "x": 1}, "expected exactly"),
    ):
        with pytest.raises(ProtocolError, match=match):
            check_payload(msg(parties, payload=bad), spec)


def test_sender_cannot_encode_nan():
    with pytest.raises(ParameterError, match="NaN or infinity"):
        encode_array([np.nan])


def test_scalar_field_types(parties):
    spec = {"n": int, "eps": float, "name": str}
    ok = msg(parties, payload={"n": 3, "eps": 0.5, "name": "a"})
    assert check_payload(ok, spec) == {"n": 3, "eps": 0.5, "name": "a"}
    for bad in ({"n": True, "eps": 0.5, "name": "a"}, {"n": 3, "eps": "x", "name": "a"}):
        with pytest.raises(ProtocolError, match="must be of type"):
            check_payload(msg(parties, payload=bad), spec)


def test_decode_array_round_trip_is_bit_exact():
    x = np.array([[0.1, -2.5e-300], [np.pi, 1e300]])
    y = decode_array(encode_array(x), shape=(2, None))
    assert y.tobytes() == x.tobytes()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"a":1}',
        "[]",
        '{"kind":"k","payload":{},"recipient":"p","seq":0,"sender":"s","session_id":"x"}',
    ],
)
def test_from_json_rejects_garbage(text):
    with pytest.raises(ProtocolError):
        Message.from_json(text)


def test_from_json_rejects_bad_fields(parties):
    d = json.loads(msg(parties).to_json())
    for change, match in (
        ({"seq": -1}, "seq"),
        ({"sender": "bad id!"}, "sender"),
        ({"signature": "AAAA"}, "3 bytes"),
        ({"session_id": ""}, "session_id"),
    ):
        text = json.dumps({**d, **change}, sort_keys=True, separators=(",", ":"))
        with pytest.raises(ProtocolError, match=match):
            Message.from_json(text)


def test_from_json_size_limit(parties):
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        Message.from_json(msg(parties).to_json(), max_bytes=10)


def test_envelope_verifies_without_the_payload(parties):
    m = msg(parties)
    env = m.envelope()
    assert "payload" not in env and env["payload_sha256"] == m.payload_sha256
    assert verify_envelope(env, parties["owner-1"].public_key)
    assert not verify_envelope(env, parties["owner-2"].public_key)
    assert not verify_envelope({**env, "seq": 5}, parties["owner-1"].public_key)
    assert not verify_envelope({**env, "extra": 1}, parties["owner-1"].public_key)


def test_session_ids_are_fresh():
    assert new_session_id() != new_session_id()
    with pytest.raises(ParameterError, match="session_id"):
        MessageValidator("bad session!", {"a": Signer.generate("a").public_key})


def test_validator_needs_keys():
    with pytest.raises(ParameterError, match="known_keys"):
        MessageValidator(SESSION, {})
