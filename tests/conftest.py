import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The CI gate's hooks, imported so pytest finds them here (see ci_gate.py).
from ci_gate import (  # noqa: F401
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
    require,
)

# Re-exported: most test modules import these two from here.
from helpers.cli import run_cli  # noqa: F401
from helpers.serve import serve_port  # noqa: F401

# Which tests are slow and which files run first, from the last run's timings (timing.py).
pytest_plugins = ["timing", "helpers.daemon", "helpers.engines"]  # fixtures: start_daemon, fast_provider

ROOT = Path(__file__).resolve().parents[1]
# A developer's shortcut: test the source tree through an editable install. CI refuses it.
SOURCE_OPT_IN = "SYSTEM1_TEST_SOURCE"


def not_the_installed_wheel() -> str | None:
    """Why the `system1_gateway` these tests import is not a regular (wheel) install, or None.

    Users get the wheel, so the suite tests the wheel: an editable install or `src/` on the
    path lets the source tree stand in for the package and hides files missing from it."""
    import importlib.metadata
    import sysconfig

    import system1_gateway

    here = Path(system1_gateway.__file__).resolve()
    if ROOT / "src" in here.parents:
        return f"system1_gateway was imported from the source tree ({here})"
    site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    if not any(folder in here.parents for folder in site):
        return f"system1_gateway was imported from {here}, outside this interpreter's site-packages {sorted(site)}"
    dist = importlib.metadata.distribution("system1-gateway")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct.get("dir_info", {}).get("editable"):
        return f"system1-gateway is an editable install of {direct.get('url')}"
    return None


def _one_cpu_per_worker() -> None:
    """Under pytest-xdist, pin each worker (and the daemons, CLIs and engines it starts, which
    inherit the mask) to a CPU of its own: the embedded engine sizes its threads to the usable
    CPUs, and two workers' engines each spinning threads on every core thrashed (a 5 s attempt
    timed out, one test took 135 s). With one core each they run side by side, as two cores can."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if not worker.startswith("gw") or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    if count < 2 or len(cpus) < count:
        return
    share = len(cpus) // count  # whole CPUs per worker
    index = int(worker[2:])
    os.sched_setaffinity(0, set(cpus[index * share:(index + 1) * share]))


def pytest_configure(config):
    _one_cpu_per_worker()
    problem = not_the_installed_wheel()
    if problem is None:
        return
    if os.environ.get(SOURCE_OPT_IN) == "1" and os.environ.get("SYSTEM1_REQUIRE_CLIENTS") != "1":
        return  # the developer asked for it; test_packaging still fails and says so
    raise pytest.UsageError(
        f"{problem}. The suite tests the installed wheel: run the README's command 2 "
        f"(build, install the wheel, test), or set {SOURCE_OPT_IN}=1 to test the source tree (not in CI).")


def _leftover_daemons(base: Path) -> list[int]:
    """Daemon processes started under this session's temporary directories (Linux /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"daemon" not in cmd or b"run" not in cmd:
            continue
        state = next((v[len(b"SYSTEM1_STATE_DIR="):] for v in env if v.startswith(b"SYSTEM1_STATE_DIR=")), b"")
        if state.decode(errors="replace").startswith(str(base)):
            found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True, scope="session")
def no_daemon_left_behind(tmp_path_factory):
    """Every daemon a test starts (directly, or by autostart from a CLI or MCP server it
    spawned) is stopped by that test: a leftover fails the session (and is killed)."""
    yield
    import signal

    base = tmp_path_factory.getbasetemp()
    leftovers = _leftover_daemons(base)
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not leftovers, f"tests left {len(leftovers)} daemon process(es) running: {leftovers}"


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    """No test sees the user's config, state or SYSTEM1_* variables."""
    for var in list(os.environ):
        if var.startswith("SYSTEM1_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("SYSTEM1_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    # No test starts the per-user daemon unless it asks to (tests of the daemon set it to 1).
    monkeypatch.setenv("SYSTEM1_SERVE_AUTOSTART", "0")
    # Any daemon a test starts binds a free port: the suite runs in parallel workers.
    monkeypatch.setenv("SYSTEM1_SERVE_PORT", "0")
    from system1_gateway import notices

    notices._last.clear()  # each test starts like a new process
    return tmp_path


@pytest.fixture(scope="session")
def joined_model(tmp_path_factory) -> Path | None:
    """The accurate tier's model, joined from its chunk packages and verified once for the
    session (None when the accurate tier is not installed). Joining and hashing 1 GB takes
    seconds, up to 15 s on a busy disk, in every fresh state dir. Under pytest-xdist the
    workers share one join (in the run's common temporary folder, under a lock): the first
    joins it, the others wait and find it verified."""
    import fcntl

    from system1_gateway.providers.embedded import assets

    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = tmp_path_factory.getbasetemp().parent / "joined-model"  # shared by the run's workers
        base.mkdir(exist_ok=True)
    else:
        base = tmp_path_factory.mktemp("joined-model")
    saved = os.environ.get("SYSTEM1_STATE_DIR")
    os.environ["SYSTEM1_STATE_DIR"] = str(base)
    try:
        with (base / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            return assets.gguf_path() if assets.llm_available() else None
    finally:
        if saved is None:
            os.environ.pop("SYSTEM1_STATE_DIR", None)
        else:
            os.environ["SYSTEM1_STATE_DIR"] = saved


@pytest.fixture(scope="session")
def prejoined(joined_model):
    """`prejoined(state)` gives a state dir (default: the test's) the session's joined model,
    hard-linked with its verified marker, as if an earlier run had prepared it. For tests about
    something else than the first run; the first run itself (tests/test_first_call.py, the HTTP
    face's fresh-home test, the installer) keeps a fresh state dir and joins for real."""
    import shutil

    from system1_gateway.paths import state_dir

    def put(state: Path | None = None) -> Path:
        state = Path(state) if state is not None else state_dir()
        if joined_model is None:
            return state
        models = state / "models"
        models.mkdir(parents=True, exist_ok=True)
        target = models / joined_model.name
        if not target.exists():
            try:
                os.link(joined_model, target)
            except OSError:  # another file system: a copy (its mtime kept, so the marker holds)
                shutil.copy2(joined_model, target)
        marker = joined_model.with_name(joined_model.name + ".verified")
        shutil.copy2(marker, models / marker.name)
        return state

    return put


@pytest.fixture
def write_config(monkeypatch, tmp_path):
    def write(text: str) -> Path:
        path = tmp_path / "config.toml"
        path.write_text(text)
        monkeypatch.setenv("SYSTEM1_CONFIG", str(path))
        return path

    return write


@pytest.fixture
def mock_gateway(monkeypatch):
    """A gateway whose chain is the mock provider with the given settings."""
    from system1_gateway.core.gateway import Gateway

    def make(**settings):
        monkeypatch.setenv("SYSTEM1_PROVIDER", "mock")
        for key, value in settings.items():
            monkeypatch.setenv(f"SYSTEM1_MOCK_{key.upper()}", str(value))
        return Gateway.from_environment()

    return make


def lock_holder(seconds: float = 120) -> subprocess.Popen:
    """A live process holding daemon.lock as a daemon does (a client trusts the port file only
    while the lock is held), for tests whose port file names it in front of a fake server."""
    from system1_gateway.daemon import files as daemon_files

    path = daemon_files.lock_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(float(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def judge_payload(**questions):
    return {"state": "The build failed after the last merge.", "questions": questions or {
        "q": {"type": "noul", "instructions": "Is this about a build?"}}}
