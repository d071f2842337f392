"""Nesting never crashes a reader: a document nested past the decoder's limit is
malformed JSON like any other, and files of small records are bounded outright."""

import json

import pytest

from conftest import judge_payload, run_cli
from system1_gateway import bounded_json

DEEP = "[" * 100_000 + "]" * 100_000  # past the decoder's recursion limit
DEEPER_THAN_FILES = '{"a":' * 100 + "1" + "}" * 100  # parses, but no record of ours is this deep


def test_loads_turns_a_recursion_error_into_malformed_json():
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        bounded_json.loads(DEEP)
    assert bounded_json.loads(DEEPER_THAN_FILES)["a"]["a"]  # no bound unless asked
    with pytest.raises(json.JSONDecodeError, match="nested deeper than 64 levels"):
        bounded_json.file_loads(DEEPER_THAN_FILES)
    at_limit = "[" * 64 + "]" * 64
    assert bounded_json.file_loads(at_limit) == json.loads(at_limit)
    with pytest.raises(json.JSONDecodeError):
        bounded_json.file_loads("[" * 65 + "]" * 65)


@pytest.mark.parametrize("text", [DEEP, DEEPER_THAN_FILES])
def test_a_deeply_nested_calibration_file_is_reported_and_requests_still_answer(mock_gateway, tmp_path, text):
    """It made every request an `internal_error` and `system1 status` crash (RecursionError)."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "calibration.json").write_text(text)
    with mock_gateway() as gateway:
        result = gateway.judge(judge_payload())
    assert result["status"] == "answered", result
    code, (status,), err = run_cli("status", env={"SYSTEM1_PROVIDER": "mock"})
    assert code == 0 and "Traceback" not in err
    assert "nested" in json.dumps(status["calibration"]), status["calibration"]


def test_deep_consents_and_port_files_read_as_absent(tmp_path):
    from system1_gateway.core import consent
    from system1_gateway.daemon import files as daemon_files

    state = tmp_path / "state"
    (state / "daemon").mkdir(parents=True)
    (state / "consents.json").write_text(DEEP)
    daemon_files.port_path().write_text(DEEP)
    assert consent.recorded() == {}
    assert daemon_files.read_port() is None


def test_a_deep_pi_settings_file_is_a_clear_error(tmp_path):
    from system1_gateway.pi_settings import PiSettingsError, read_order

    path = tmp_path / "system1.json"
    path.write_text(DEEPER_THAN_FILES)
    with pytest.raises(PiSettingsError, match="invalid JSON .*nested deeper than 64"):
        read_order(path)
