"""Issue 15 item 6: the collector's config in YAML or JSON, and what ``ppdp local serve``
says when it starts (no port is bound: ``uvicorn.run`` is replaced)."""

from __future__ import annotations

import json
import warnings

import pytest
import yaml
from collector_helpers import free_port, keys_fixture, write_config  # noqa: F401

from ppdp.cli import main
from ppdp.exceptions import ParameterError
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer
from ppdp.local.collector import CollectorConfig, create_app
from ppdp.local.collector._config import load_config_file

with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

CV = CharacteristicVectorRandomizer(regions=[0.0, 0.25, 0.5, 0.75, 1.0], noise="discrete-normal",
                                    gamma=1.0, sigma=1.0)  # fmt: skip


def _as_yaml(json_path, name="collector.yaml"):
    data = json.loads(json_path.read_text())
    out = json_path.with_name(name)
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def test_yaml_and_json_configs_are_the_same_config(tmp_path, keys):
    js = write_config(tmp_path, keys, CV)
    for name in ("collector.yaml", "collector.yml", "collector.conf"):
        from_yaml = CollectorConfig.from_file(_as_yaml(js, name))
        assert from_yaml == CollectorConfig.from_file(js)
        assert from_yaml.store == tmp_path / "store.sqlite"  # relative to the file
    other = tmp_path / "collector.cfg"
    other.write_text(js.read_text())  # JSON content under another name: read as JSON
    assert CollectorConfig.from_file(other) == CollectorConfig.from_file(js)


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("bad.yaml", "survey: [unclosed\n", "is not valid YAML"),
        ("bad.json", "{", "is not valid JSON"),
        ("bad.conf", '{"survey": ', "is not valid JSON"),
        ("list.yaml", "- survey\n- s\n", "must be a mapping of keys"),
        ("empty.yml", "", "must be a mapping of keys"),
    ],
)
def test_a_bad_config_file_is_one_line(tmp_path, name, text, fragment):
    (tmp_path / name).write_text(text)
    with pytest.raises(ParameterError) as info:
        CollectorConfig.from_file(tmp_path / name)
    message = str(info.value)
    assert fragment in message and "\n" not in message, message
    if "valid" in fragment:
        assert f"config file ({tmp_path / name})" in message


def test_a_folder_or_missing_file_is_one_line(tmp_path):
    with pytest.raises(ParameterError, match="is a folder"):
        load_config_file(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_config_file(tmp_path / "absent.yaml")


def _serve_lines(monkeypatch, capsys, argv):
    calls = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: calls.append((app, kw)))
    assert main(argv) == 0
    assert len(calls) == 1  # would have served, with the app the factory builds
    err = capsys.readouterr().err
    return calls[0], [ln for ln in err.splitlines() if ln.startswith("ppdp local serve: ")], err


def test_serve_reads_yaml_and_says_where_it_listens_and_what_it_accepts(
    tmp_path, keys, monkeypatch, capsys
):
    cfg = _as_yaml(write_config(tmp_path, keys, CV))
    port = free_port()
    (app, kw), lines, _ = _serve_lines(
        monkeypatch, capsys, ["local", "serve", "--config", str(cfg), "--port", str(port)]
    )
    assert kw["host"] == "127.0.0.1" and kw["port"] == port and "ssl_certfile" not in kw
    assert len(lines) == 5, lines
    assert f"survey 'test-survey' listening on http://127.0.0.1:{port}" in lines[0]
    assert "characteristic-vector(discrete-normal, k=4" in lines[1]
    assert "values in [0, 1] over 4 regions" in lines[1]
    assert "2 registered client(s)" in lines[1] and "20,000 per batch" in lines[1]
    assert str(tmp_path / "store.sqlite") in lines[1]
    assert "local differential privacy" in lines[2] and "per respondent" in lines[2]
    assert "TLS off" in lines[3]
    assert "Ctrl+C" in lines[4]
    # The app the command would serve answers as the factory's does (in process).
    with TestClient(app) as http:
        assert http.get("/v1/info").json()["survey"] == "test-survey"
    with TestClient(create_app(CollectorConfig.from_file(cfg))) as http:
        assert http.get("/v1/info").status_code == 200


def test_serve_says_tls_is_on_and_https(tmp_path, keys, monkeypatch, capsys):
    additive = AdditiveRandomizer(noise="laplace", scale=0.5, domain=(0.0, 1.0))
    cfg = write_config(tmp_path, keys, additive)
    for name in ("cert.pem", "key.pem"):
        (tmp_path / name).write_text("not read: uvicorn is replaced\n")
    tls = ["--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem")]
    port = free_port("0.0.0.0")
    argv = ["local", "serve", "--config", str(cfg), "--host", "0.0.0.0", "--port", str(port)]
    (_app, kw), lines, _ = _serve_lines(monkeypatch, capsys, [*argv, *tls])
    assert kw["ssl_certfile"] == str(tmp_path / "cert.pem") and kw["port"] == port
    assert f"listening on https://0.0.0.0:{port}" in lines[0]
    assert "additive(laplace, scale=0.5" in lines[1] and "values in [0, 1]" in lines[1]
    assert lines[3].startswith("ppdp local serve: TLS on")


@pytest.mark.parametrize(
    ("randomizer", "accepts"),
    [
        (CharacteristicVectorRandomizer(regions=5, noise="discrete-normal", gamma=0.5, sigma=1.0),
         "region numbers 0 to 4"),
        (CharacteristicVectorRandomizer(categories=["a", "b", "c"], noise="discrete-normal",
                                        gamma=0.5, sigma=1.0), "values in 3 declared categories"),
        (CharacteristicVectorRandomizer(regions=[0, 25000, 1e6], noise="inverse-square", gamma=1.0),
         "values in [0, 1000000] over 2 regions"),
    ],
)  # fmt: skip
def test_startup_lines_name_the_accepted_values(tmp_path, keys, randomizer, accepts):
    from ppdp.local.collector import startup_lines

    config = CollectorConfig.from_file(write_config(tmp_path, keys, randomizer))
    lines = startup_lines(config, host="::1", port=1234)
    assert "http://[::1]:1234" in lines[0] and accepts in lines[1], lines


def test_serve_on_a_bad_yaml_config_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("uvicorn.run", lambda *a, **kw: pytest.fail("must not serve"))
    (tmp_path / "c.yaml").write_text("survey: s\nrandomizer: {type: additive\n")
    assert main(["local", "serve", "--config", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not valid YAML" in err and "line 3" in err, err


@pytest.mark.parametrize("port", ["70000", "-3", "0"])
def test_serve_on_a_bad_port_is_one_line_exit_2(tmp_path, keys, monkeypatch, capsys, port):
    # New-user trial: uvicorn printed a traceback (OverflowError) after the start-up lines.
    monkeypatch.setattr("uvicorn.run", lambda *a, **kw: pytest.fail("must not serve"))
    cfg = _as_yaml(write_config(tmp_path, keys, CV))
    assert main(["local", "serve", "--config", str(cfg), "--port", port]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"ppdp: error: --port ({port}) must be an integer in 1..65535"]


def test_serve_on_a_port_in_use_is_one_line_before_the_start_up_lines(
    tmp_path, keys, monkeypatch, capsys
):
    import socket

    monkeypatch.setattr("uvicorn.run", lambda *a, **kw: pytest.fail("must not serve"))
    cfg = _as_yaml(write_config(tmp_path, keys, CV))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["local", "serve", "--config", str(cfg), "--port", str(port)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"ppdp: error: --port ({port}) on 127.0.0.1 is already in use; stop the other "
                   "process or choose another port"]  # fmt: skip
