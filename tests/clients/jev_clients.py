"""Real Jev clients against a running `system1 serve` (run by tests/test_jev_clients.py in the
clients' own venv: typesafe-sdk[zstd] 0.7.5, jev-lite 0.0.6, zstandard).

    python jev_clients.py BASE_URL mock|waterfall|embedded

Every check asserts on what the client parsed; the last stdout line is a JSON report of
what was seen, for the test to read. Exit status 0 only when every check passed.
"""

from __future__ import annotations

import json
import math
import sys

import httpx2
import jev_lite
import typesafe_sdk
from typesafe_sdk import Choice, Noul, RetryPolicy, Score, TypeSafeClient

STATE = "I was charged twice for my subscription this month. Please help."
KEY = "local-gateway-needs-no-key"  # both clients refuse to start without one


def sdk_questions():
    return {
        "billing": Noul(instructions="Is this about billing?", criteria={"true": "payments, invoices", "false": "other"}),
        "team": Choice(instructions="Which team should handle it?",
                       criteria={"billing": "payments and refunds", "tech": None, "sales": {"handles": "new plans"}}),
        "urgency": Score(instructions="How urgent is it?", criteria=["can wait", "this week", "today"]),
    }


def lite_questions():
    return {
        "billing": jev_lite.Noul(instructions="Is this about billing?", true="payments, invoices", false="other"),
        "team": jev_lite.Choice(instructions="Which team should handle it?",
                                criteria={"billing": "payments and refunds", "tech": None, "sales": None}),
        "urgency": jev_lite.Score(instructions="How urgent is it?", criteria=["can wait", "this week", "today"]),
    }


def check_answers(nouls, choices, scores, score_key):
    """Types, labels and probabilities of the three answers, as the client parsed them."""
    noul = nouls["billing"].noul
    assert isinstance(noul, float) and 0.0 <= noul <= 1.0, noul
    team = choices["team"]
    assert team.choice in {"billing", "tech", "sales"}, team.choice
    assert set(team.probabilities) == {"billing", "tech", "sales"}, team.probabilities
    assert math.isclose(sum(team.probabilities.values()), 1.0, abs_tol=1e-3)
    assert team.probabilities[team.choice] == max(team.probabilities.values())
    assert 0.0 <= team.confidence <= 1.0
    urgency = scores["urgency"]
    levels = [score_key(i) for i in range(3)]
    assert list(urgency.legend) == levels and list(urgency.probabilities) == levels, urgency
    assert urgency.legend[score_key(2)] == "today"
    assert math.isclose(sum(urgency.probabilities.values()), 1.0, abs_tol=1e-3)
    expected = sum(int(k) * p for k, p in urgency.probabilities.items())
    assert math.isclose(urgency.score, expected, abs_tol=1e-3), (urgency.score, expected)
    assert 0.0 <= urgency.confidence <= 1.0
    return {"noul": noul, "choice": team.choice, "score": urgency.score}


def sdk_client(base_url, **kwargs):
    return TypeSafeClient(api_key=KEY, base_url=base_url, **kwargs)


def sdk_full_call(base_url, report):
    with sdk_client(base_url, compression=False) as client:
        result = client.system_one(state=STATE, questions=sdk_questions())
    report["sdk"] = check_answers(result.nouls, result.choices, result.scores, int)  # the SDK makes score keys ints
    assert result.usage.input_tokens is None and result.usage.output_tokens is None, result.usage  # unknown: null
    assert result.request_id, "x-typesafe-request-id missing"
    report["sdk_model"] = result.model


def sdk_compressed_call(base_url, report):
    sent = []

    def record(request):
        sent.append((request.headers.get("content-encoding"), len(request.content)))

    http = httpx2.Client(event_hooks={"request": [record]})
    big_state = {"ticket": STATE, "history": [f"message {i}: {STATE}" for i in range(40)]}
    with sdk_client(base_url, compression="zstd", http_client=http) as client:
        result = client.system_one(state=big_state, questions=sdk_questions())
    encoding, size = sent[-1]
    raw_size = len(json.dumps(big_state))
    assert encoding == "zstd" and raw_size >= 1024 and size < raw_size, (encoding, size, raw_size)
    check_answers(result.nouls, result.choices, result.scores, int)
    report["sdk_zstd"] = {"sent_bytes": size, "state_bytes": raw_size}


def sdk_validation_error(base_url, report):
    with sdk_client(base_url) as client:
        try:  # one level: the SDK lets it through (min_length=1), the API answers 422
            client.system_one(state=STATE, questions={"u": Score(instructions="How urgent?", criteria=["only"])})
        except typesafe_sdk.TypeSafeUnprocessableEntityError as exc:
            assert exc.status == 422 and "questions.u.score.criteria" in str(exc), str(exc)
            report["sdk_422"] = str(exc)
        else:
            raise AssertionError("a one-level score was answered")


def sdk_models(base_url, report):
    with sdk_client(base_url) as client:
        names = [m.name for m in client.models.list().models]
    assert "jev-latest" in names, names
    report["sdk_models"] = names


def lite_calls(base_url, report):
    with jev_lite.TypeSafe(api_key=KEY, base_url=base_url) as client:
        result = client.system_one.create(state=STATE, questions=lite_questions())
        report["lite"] = check_answers(result.nouls, result.choices, result.scores, str)  # jev-lite keeps strings
        assert result.usage.input_tokens is None
        assert result.request_id
        report["lite_model"] = result.model
        report["lite_models"] = [m.name for m in client.models.list()]
        assert "jev-latest" in report["lite_models"]
        try:
            client.system_one.create(state=STATE, questions=lite_questions(), model="no-such-model")
        except jev_lite.UnprocessableEntityError as exc:
            assert "unknown model" in exc.message, exc.message
            report["lite_422"] = exc.message
        else:
            raise AssertionError("an unknown model was answered")


def waterfall(base_url, report):
    """Chain broken (fails with a rate limit) → backup: the Jev clients still get answers;
    then only the cooling rung: 429 with retry-after, surfaced as each client's error."""
    with sdk_client(base_url) as client:
        result = client.system_one(state=STATE, questions=sdk_questions())
        check_answers(result.nouls, result.choices, result.scores, int)
        report["sdk_model"] = result.model
        try:
            client.system_one(state=STATE, questions=sdk_questions(), model="broken",
                              retry=RetryPolicy(max_retries=0))
        except typesafe_sdk.TypeSafeRateLimitError as exc:
            assert exc.retry_after_ms is not None and 0 < exc.retry_after_ms <= 30_000, exc.retry_after_ms
            report["sdk_429_retry_after_ms"] = exc.retry_after_ms
        else:
            raise AssertionError("a cooling rung answered")
    with jev_lite.TypeSafe(api_key=KEY, base_url=base_url, max_retries=0) as client:
        result = client.system_one.create(state=STATE, questions=lite_questions())
        check_answers(result.nouls, result.choices, result.scores, str)
        report["lite_model"] = result.model
        try:
            client.system_one.create(state=STATE, questions=lite_questions(), model="broken")
        except jev_lite.RateLimitError as exc:
            report["lite_429"] = exc.message
        else:
            raise AssertionError("a cooling rung answered")


def embedded(base_url, report):
    """The real embedded engine behind the wire (the server's default chain)."""
    with sdk_client(base_url, timeout=180, retry=RetryPolicy(max_retries=0)) as client:
        result = client.system_one(state=STATE, questions=sdk_questions())
    report["sdk"] = check_answers(result.nouls, result.choices, result.scores, int)
    assert result.model.startswith("embedded/"), result.model
    report["sdk_model"] = result.model


def main(base_url, scenario):
    report = {}
    if scenario == "mock":
        for check in (sdk_full_call, sdk_compressed_call, sdk_validation_error, sdk_models, lite_calls):
            check(base_url, report)
    elif scenario == "waterfall":
        waterfall(base_url, report)
    elif scenario == "embedded":
        embedded(base_url, report)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:3])
