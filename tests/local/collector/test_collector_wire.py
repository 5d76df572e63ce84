"""Batches are signed over their exact bytes; envelopes are checked field by field."""

from __future__ import annotations

import json

import pytest

from ppdp.exceptions import DataValidationError, ProtocolError
from ppdp.ledger import generate_key
from ppdp.local.collector._wire import (
    BATCH_DOMAIN,
    decode_batch,
    encode_batch,
    peek_client,
    sign_body,
    verify_body,
)


def test_sign_verify_and_tamper():
    key = generate_key()
    body = encode_batch(survey="s", client="a", seq=1, reports=[1.5, 2.0])
    sig = sign_body(body, key)
    verify_body(body, sig, key.public_key())
    with pytest.raises(ProtocolError, match="does not verify"):
        verify_body(body.replace(b"1.5", b"2.5"), sig, key.public_key())
    with pytest.raises(ProtocolError, match="does not verify"):
        verify_body(body, sig, generate_key().public_key())
    with pytest.raises(ProtocolError, match="no X-PPDP-Signature"):
        verify_body(body, None, key.public_key())
    with pytest.raises(ProtocolError, match="base64"):
        verify_body(body, "not base64!", key.public_key())
    # domain separation: a signature of the bare body is not a batch signature
    import base64

    bare = base64.b64encode(key.sign(body)).decode()
    with pytest.raises(ProtocolError):
        verify_body(body, bare, key.public_key())
    assert BATCH_DOMAIN.endswith(b"\x00")


def test_envelope():
    body = encode_batch(survey="s", client="a", seq=3, reports=[[0, 1], [1, 0]])
    obj, client = peek_client(body)
    batch = decode_batch(obj, body)
    assert (client, batch.survey, batch.seq, batch.size) == ("a", "s", 3, 2)
    assert len(batch.digest) == 64


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"client": 5}', "client"),
        (b'{"client": ""}', "client"),
    ],
)
def test_bad_bodies(body, match):
    with pytest.raises(DataValidationError, match=match):
        peek_client(body)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"v": 2}, "v "),
        ({"extra": 1}, "unknown fields"),
        ({"survey": 1}, "survey"),
        ({"seq": 0}, "seq"),
        ({"seq": True}, "seq"),
        ({"seq": 1.5}, "seq"),
        ({"reports": []}, "non-empty"),
        ({"reports": {"a": 1}}, "non-empty"),
    ],
)
def test_bad_envelopes(change, match):
    obj = {"v": 1, "survey": "s", "client": "a", "seq": 1, "reports": [1.0]}
    obj.update(change)
    body = json.dumps(obj).encode()
    with pytest.raises(DataValidationError, match=match):
        decode_batch(obj, body)


def test_nan_cannot_be_encoded():
    with pytest.raises(ValueError):
        encode_batch(survey="s", client="a", seq=1, reports=[float("nan")])
