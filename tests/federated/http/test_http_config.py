"""Party configuration files: what loads, and one clear error for what does not."""

from __future__ import annotations

import json

import pytest
import yaml
from fed_helpers import deploy

from ppdp.cli import main as cli_main
from ppdp.exceptions import ParameterError
from ppdp.federated.http import load_config


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    return deploy(tmp_path_factory.mktemp("cfg"), owners=2)


def test_generated_configs_load(configs):
    owner = load_config(configs.configs["owner-1"])
    assert owner.role == "owner" and owner.party == "owner-1"
    assert owner.data is not None and owner.data.file.is_file() and owner.data.schema.is_file()
    assert owner.replica.name == "owner-1.ledger" and owner.box_key_file.is_file()
    assert owner.session_id == "s-1" and owner.session["owners"] == ["owner-1", "owner-2"]
    dealer = load_config(configs.configs["dealer"])
    assert all(p.box_public_key is not None for p in dealer.peers_with_role("owner"))
    pub = load_config(configs.configs["publisher"])
    assert (
        pub.ledger == configs.ledger.resolve() or pub.ledger.resolve() == configs.ledger.resolve()
    )
    assert set(pub.known_keys()) == {"dealer", "owner-1", "owner-2"}


def test_json_config_and_defaults(configs, tmp_path):
    raw = yaml.safe_load(configs.configs["owner-2"].read_text())
    del raw["timeouts"]
    for k in ("publisher", "owners", "dealer"):
        raw["session"].pop(k)
    path = configs.configs["owner-2"].with_suffix(".json")
    path.write_text(json.dumps(raw))
    cfg = load_config(path)
    assert cfg.timeouts.phase == 30.0
    assert cfg.session["owners"] == ["owner-1", "owner-2"]  # sorted, same for every party
    assert cfg.session["publisher"] == "publisher" and cfg.session["dealer"] == "dealer"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.pop("party"), "party is missing"),
        (lambda c: c.update(role="auditor"), "role ('auditor')"),
        (lambda c: c.update(listen={"host": "127.0.0.1", "port": 70000}), "listen.port"),
        (lambda c: c.update(colour="blue"), "not recognised"),
        (lambda c: c["peers"].append(dict(c["peers"][0])), "unique"),
        (lambda c: c["peers"][0].update(url="ftp://x"), "url"),
        (lambda c: c["peers"][0].update(public_key="AAAA"), "public_key"),
        (lambda c: c["session"].pop("session_id"), "session_id"),
        (lambda c: c.update(timeouts={"phase": -1}), "timeouts.phase"),
        (lambda c: c.pop("data"), "an owner needs data"),
    ],
)
def test_bad_config_is_one_clear_error(configs, change, message, request):
    raw = yaml.safe_load(configs.configs["owner-1"].read_text())
    change(raw)
    bad = configs.configs["owner-1"].with_name(f"bad-{request.node.callspec.id}.yaml")
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(bad)


def test_cli_refuses_a_config_of_another_role(configs, capsys):
    assert cli_main(["federate", "publisher", "--config", str(configs.configs["owner-1"])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not match" in err[0]
    assert cli_main(["federate", "owner", "--config", "/nonexistent.yaml"]) == 2
