"""The MCP conformance suite of the 2026-07-28 era (@modelcontextprotocol/conformance
0.2.0-alpha.12) against `system1 serve`'s /mcp: `server --requirements 2026-07-28`, the
scenarios that revision requires, at its wire (stateless, `server/discover`, `Mcp-Method`).

The 0.2 line fails (no longer skips) a check whose fixture the server lacks; those checks
are listed, each with its reason, in tests/mcp_expected_failures_2026-07-28.yaml, passed as
`--expected-failures`. The suite exits 1 on a failure not in that file *and* on a stale entry
(a listed check that passes now), and so does this test. The 2025-11-25 era stays on 0.1.16
(tests/test_mcp_conformance.py through the stdio bridge, tests/test_http_mcp.py on /mcp).
`.ci/run` installs the suite into `conformance02/` of the tools folder (SYSTEM1_TOOLS_DIR,
default `.tools/`); locally the tests skip when it is missing, in CI they fail.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path

import pytest
import uvicorn

from conftest import ROOT, require
from helpers.serve import wait_ready
from system1_gateway.http.app import create_app
from system1_gateway.http.security import loopback_hosts
from system1_gateway.http.serving import _bind
from test_http_mcp import NODE, TOOLS_DIR, serve, with_error_fixture  # noqa: F401  (serve: the fixture)

SUITE = TOOLS_DIR / "conformance02" / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = ROOT / "tests" / "mcp_expected_failures_2026-07-28.yaml"
REVISION = "2026-07-28"

# `list --server --requirements 2026-07-28`: the server scenarios the revision requires.
REQUIRED = [
    "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
    "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
    "tools-call-with-progress", "server-sse-multiple-streams", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found", "prompts-list",
    "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
    "dns-rebinding-protection", "caching", *(f"input-required-result-{name}" for name in (
        "basic-elicitation", "basic-sampling", "basic-list-roots", "request-state", "multiple-input-requests",
        "multi-round", "missing-input-response", "non-tool-request", "result-type", "unsupported-methods",
        "tampered-state", "capability-check", "ignore-extra-params", "validate-input")),
]
# Run by the requirement set but never scored (extension / pending), and what they mean here.
TASKS = ("the io.modelcontextprotocol/tasks extension: not offered (the mcp SDK 2.3.0 ships its types and a "
         "generic extension interface, no tasks implementation; our tools answer in milliseconds)")
NOT_SCORED = {
    **dict.fromkeys([f"tasks-{name}" for name in (
        "lifecycle", "capability-negotiation", "wire-fields", "request-state-removal", "mrtr-input",
        "request-headers", "dispatch-and-envelope", "status-notifications", "required-task-error",
        "mrtr-composition")], TASKS),
    "json-schema-2020-12": "pending; lists a fixture tool (json_schema_2020_12_tool); our schemas are 2020-12 "
                           "and compile under strict Ajv (tests/test_mcp_ts_client*.py)",
    "http-header-validation": "pending; passes 14/14 (test_pending_http_header_validation_passes)",
    "http-custom-header-server-validation": "pending; needs a tool with x-mcp-header arguments, which none of "
                                            "ours has (no argument belongs in an HTTP header)",
}
# Checks passed / failed (FAILURE) / WARNING per required scenario, as measured; every failure
# and warning is an entry of the baseline (checked by the suite itself).
RESULTS = {
    "server-stateless": (21, 4, 0), "completion-complete": (1, 1, 0), "tools-list": (4, 0, 0),
    **dict.fromkeys([s for s in REQUIRED if s.startswith(("tools-call-", "resources-", "prompts-"))], (1, 1, 0)),
    "server-sse-multiple-streams": (1, 0, 0), "sep-2164-resource-not-found": (2, 0, 2),
    "dns-rebinding-protection": (2, 0, 0), "caching": (4, 3, 0),
    **dict.fromkeys([s for s in REQUIRED if s.startswith("input-required-result-")], (1, 1, 0)),
    "input-required-result-missing-input-response": (1, 0, 1), "input-required-result-ignore-extra-params": (1, 0, 1),
    "input-required-result-unsupported-methods": (2, 0, 0), "input-required-result-validate-input": (3, 0, 0),
}
ENTRY = re.compile(r"^  - (?P<scenario>[a-z0-9-]+):(?P<check>[a-z0-9-]+)\s+#\s*(?P<reason>\S.*)$")


def installed():
    for path, what in ((NODE, "node 22 (npm node@22)"), (SUITE, "@modelcontextprotocol/conformance 0.2")):
        require(path.exists(), f"{what} at {path} (`make clients` installs it)")


def suite(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(NODE), str(SUITE), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def baseline_entries(text: str | None = None) -> list[re.Match]:
    lines = (text if text is not None else BASELINE.read_text()).splitlines()
    items = [line for line in lines if line.lstrip().startswith("- ")]
    entries = [ENTRY.match(line) for line in items]
    assert all(entries), [line for line, m in zip(items, entries, strict=False) if not m]  # each: scenario:check  # reason
    return entries  # type: ignore[return-value]


def checks_by_scenario(out: Path) -> dict[str, list[dict]]:
    found = {}
    for path in out.glob("server-*/checks.json"):
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", path.parent.name).removeprefix("server-")
        found[name] = json.loads(path.read_text())
    return found


def counts(checks: list[dict]) -> tuple[int, int, int]:
    return tuple(sum(c["status"] == status for c in checks) for status in ("SUCCESS", "FAILURE", "WARNING"))


def run_requirements(url: str, baseline: Path, out: Path) -> subprocess.CompletedProcess:
    out.mkdir(exist_ok=True)
    return suite("server", "--url", url, "--requirements", REVISION, "--expected-failures", str(baseline),
                 "-o", str(out), cwd=out)


@pytest.fixture(scope="module")
def requirements_run(serve, tmp_path_factory):
    installed()
    out = tmp_path_factory.mktemp("conformance-2026")
    proc = run_requirements(f"{serve}/mcp", BASELINE, out / "results")
    return proc, checks_by_scenario(out / "results")


def test_required_scenarios_are_pinned():
    """A new suite version that requires another scenario fails here until it is decided."""
    installed()
    listing = suite("list", "--server", "--requirements", REVISION, cwd=ROOT)
    assert listing.returncode == 0, listing.stderr
    text = listing.stdout.split("Client scenarios")[0]
    assert re.findall(r"^  - (\S+)$", text, re.M) == REQUIRED
    unscored = re.findall(r"^    - (\S+) \[server\]$", listing.stdout, re.M)
    assert sorted(unscored) == sorted(NOT_SCORED)


def test_every_expected_failure_has_a_reason_and_names_a_required_scenario():
    entries = baseline_entries()
    assert len(entries) == len({(m["scenario"], m["check"]) for m in entries}), "a duplicate entry"
    for m in entries:
        assert m["scenario"] in REQUIRED, m.group(0)  # the suite ignores entries of unscored scenarios
        assert len(m["reason"]) >= 20, f"{m.group(0)}: say why"
    listed = {m["scenario"] for m in entries}
    whole = {s for s, (_, failed, warned) in RESULTS.items() if failed or warned}
    assert listed == whole


def test_requirements_pass_with_the_expected_failures(requirements_run):
    proc, _ = requirements_run
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Baseline check passed: all failures are expected." in output
    assert "Stale baseline entries" not in output and "Unexpected failures" not in output


def test_results_per_scenario(requirements_run):
    _, checks = requirements_run
    assert set(checks) == set(REQUIRED) | set(NOT_SCORED)
    assert {s: counts(checks[s]) for s in REQUIRED} == RESULTS
    # Every message the gateway sent was valid per the 2026-07-28 schema, in every scenario.
    wire = [c for found in checks.values() for c in found if c["id"] == "wire-schema-valid"]
    assert len(wire) >= 40 and all(c["status"] == "SUCCESS" for c in wire)
    # What fails is exactly the baseline: the check ids of every FAILURE and WARNING.
    failing = {(s, c["id"]) for s in REQUIRED for c in checks[s] if c["status"] in ("FAILURE", "WARNING")}
    assert failing == {(m["scenario"], m["check"]) for m in baseline_entries()}


def test_a_stale_entry_and_an_unlisted_failure_each_fail_the_run(serve, tmp_path):
    installed()
    text = BASELINE.read_text()
    stale = tmp_path / "stale.yaml"
    stale.write_text(text + "  - tools-list:tools-list  # passes: a stale entry\n")
    proc = run_requirements(f"{serve}/mcp", stale, tmp_path / "stale")
    assert proc.returncode == 1 and "Stale baseline entries" in proc.stdout
    assert re.search(r"✓ tools-list:tools-list$", proc.stdout, re.M)
    short = tmp_path / "short.yaml"
    short.write_text(text.replace("  - caching:sep-2549-prompts-list-caching-hints", "  # "))
    proc = run_requirements(f"{serve}/mcp", short, tmp_path / "short")
    assert proc.returncode == 1 and "Unexpected failures" in proc.stdout
    assert re.search(r"✗ caching:sep-2549-prompts-list-caching-hints$", proc.stdout, re.M)


def test_pending_http_header_validation_passes(serve, tmp_path):
    """Not scored for 2026-07-28 yet (pending): `Mcp-Method`/`Mcp-Name` header checks."""
    installed()
    proc = suite("server", "--url", f"{serve}/mcp", "--scenario", "http-header-validation",
                 "--spec-version", REVISION, "-o", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [found] = checks_by_scenario(tmp_path).values()
    assert counts(found) == (14, 0, 0)


def test_tool_error_scenario_passes_at_2026_07_28_through_the_gateways_own_error_path(mock_gateway, tmp_path):
    """tools-call-error's fixture tool as the test-only alias of tests/test_http_mcp.py (a real
    `isError` result from the gateway's validation), on the 2026-07-28 wire."""
    installed()
    gateway = mock_gateway()
    sock = _bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = create_app(gateway, allowed_hosts=loopback_hosts(port), mcp_server=with_error_fixture(gateway))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_ready(port)
        proc = suite("server", "--url", f"http://127.0.0.1:{port}/mcp", "--scenario", "tools-call-error",
                     "--spec-version", REVISION, "-o", str(tmp_path), cwd=tmp_path)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [found] = checks_by_scenario(tmp_path).values()
    assert counts(found) == (2, 0, 0)
    result = next(c for c in found if c["id"] == "tools-call-error")["details"]["result"]
    assert result["isError"] is True and result["resultType"] == "complete"
    assert result["content"][0]["text"].startswith("invalid_request: question: required field is missing")
