"""A team deployment: two `system1 serve` replicas share cooldowns and counters in a
real redis-server, in front of one engine that answers 429 with `Retry-After: 7`.

* the first replica's failure cools the rung for the second, which never calls the engine
  while it lasts;
* after expiry exactly one request, across both replicas, re-tries the engine;
* a Redis restart in the middle loses no answer, and the replicas re-sync when it is back.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from fault_engine import FaultEngine
from redis_server import RedisServer

REQUEST = {"state": "rm -rf build/", "questions": {"q": {"type": "noul", "instructions": "Is it destructive?"}}}


class Replica:
    def __init__(self, tmp_path, name: str, config: str):
        env = {**os.environ, "SYSTEM1_CONFIG": str(config), "SYSTEM1_STATE_DIR": str(tmp_path / name)}
        self.proc = subprocess.Popen([sys.executable, "-m", "system1_gateway.cli", "serve", "--port", "0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.log: list[str] = []
        while True:
            line = self.proc.stderr.readline()
            assert line, "replica exited: " + "".join(self.log)
            self.log.append(line)
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if match:
                self.url = match.group(1)
                break
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()

    def post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=20) as resp:
            return json.loads(resp.read())

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=20) as resp:
            return resp.read().decode()

    def status(self) -> dict:
        return json.loads(self.get("/v1/status"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def team(tmp_path):
    redis = RedisServer(tmp_path / "redis")
    engine = FaultEngine("429")
    config = tmp_path / "config.toml"
    config.write_text(f'[gateway]\nprovider = "team"\nfallback = ["mock"]\ntimeout_s = 2\ndeadline_s = 4\n'
                      f'[providers.team]\nkind = "systemone"\nendpoint = "{engine.url}"\nmodel = "fault-1"\n'
                      f'[state]\nurl = "{redis.url}"\nprefix = "team-test"\n')
    replicas = []
    try:
        replicas = [Replica(tmp_path, "a", config), Replica(tmp_path, "b", config)]
        yield redis, engine, replicas
    finally:
        for replica in replicas:
            replica.stop()
        engine.close()
        redis.stop()


def first_outcome(result: dict) -> str:
    return result["attempts"][0]["outcome"]


def test_two_replicas_share_one_cooldown_and_one_retry(team):
    redis, engine, (a, b) = team
    first = a.post("/v1/judge", REQUEST)
    cooled_at = time.monotonic()
    assert first["status"] == "answered" and first["provider"] == "mock" and len(engine.requests) == 1
    assert first_outcome(first) == "error" and "rate" in first["attempts"][0]["detail"].lower()

    # The other replica never calls the engine while the cooldown lasts.
    sent = 1
    while time.monotonic() - cooled_at < 5.5:
        result = b.post("/v1/judge", REQUEST)
        sent += 1
        assert result["provider"] == "mock" and first_outcome(result) == "cooling", result["attempts"]
        time.sleep(0.25)
    assert len(engine.requests) == 1
    (cooling,) = b.status()["cooldowns"]
    assert cooling["rung"] == "team" and cooling["reason"].startswith("rate_limit") and 0 < cooling["remaining_s"] <= 7

    # After expiry: 8 concurrent requests over both replicas, exactly one re-tries the engine.
    time.sleep(max(0.0, 7.3 - (time.monotonic() - cooled_at)))
    results: list[dict] = []
    barrier = threading.Barrier(8)

    def ask(replica):
        barrier.wait()
        results.append(replica.post("/v1/judge", REQUEST))

    threads = [threading.Thread(target=ask, args=(r,)) for r in (a, b) * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 8 and all(r["status"] == "answered" for r in results)
    assert len(engine.requests) == 2, [first_outcome(r) for r in results]  # one re-try, not eight
    assert sorted(first_outcome(r) for r in results) == ["cooling"] * 7 + ["error"]

    # Counters are the deployment's, whichever replica is asked (each flushes within 1 s).
    time.sleep(1.5)
    counts_a, counts_b = a.status()["today"], b.status()["today"]
    assert counts_a == counts_b == {"requests": sent + 8, "answered": sent + 8, "abstained": 0, "errors": 0}
    metrics = b.get("/metrics")
    assert re.search(r'system1_rung_cooling\{rung="team"\} 1\.0', metrics)
    assert re.search(r'system1_state_fallback\{backend="redis"\} 0\.0', metrics)


def test_a_redis_restart_loses_no_answer(team):
    redis, engine, (a, b) = team
    engine.mode = "ok"
    assert a.post("/v1/judge", REQUEST)["provider"] == "team"
    redis.stop()
    answers = [replica.post("/v1/judge", REQUEST) for replica in (a, b) * 5]
    assert all(r["status"] == "answered" and r["provider"] == "team" for r in answers)
    for replica in (a, b):
        state = replica.status()["state"]
        assert state["backend"] == "redis" and state["ok"] is False and "unreachable" in state["detail"]
        assert re.search(r'system1_state_fallback\{backend="redis"\} 1\.0', replica.get("/metrics"))
    engine.mode = "429"  # a failure during the outage is kept in memory …
    assert a.post("/v1/judge", REQUEST)["provider"] == "mock"
    redis.start()
    deadline = time.monotonic() + 15
    while not all(r.status()["state"]["ok"] for r in (a, b)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(r.status()["state"]["ok"] for r in (a, b))
    calls = len(engine.requests)
    result = b.post("/v1/judge", REQUEST)  # … and pushed to Redis: the other replica sees it
    assert result["status"] == "answered" and first_outcome(result) == "cooling" and len(engine.requests) == calls
    said = "".join(a.log)
    assert said.count("unreachable") == 1 and "is back: re-synced 1 cooldown(s)" in said
