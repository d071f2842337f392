"""The shared HTTP failure classifier (providers/failures.py) and the secret scrubber."""

import pytest

from system1_gateway.model.errors import ProviderFailure, scrub
from system1_gateway.providers.failures import classify, retry_after


@pytest.mark.parametrize("status, message, headers, kind, advance", [
    (301, None, {"location": "https://x/v1/systemone"}, "endpoint", True),
    (307, None, {}, "endpoint", True),
    (401, "bad key", {}, "credentials", True),
    (403, "forbidden", {}, "credentials", True),
    (402, None, {}, "quota", True),
    (400, "Your credit balance is too low", {}, "quota", True),
    (404, "model 'x' not found", {}, "model", True),
    (404, "Not Found", {}, "endpoint", True),
    (405, "Method Not Allowed", {}, "endpoint", True),
    (408, None, {}, "timeout", True),
    (429, "slow down", {"retry-after": "7"}, "rate_limit", True),
    (503, None, {}, "overload", True),
    (529, None, {}, "overload", True),
    (500, None, {}, "server", True),
    (204, None, {}, "malformed", True),
    (400, "questions.q.criteria: too many", {}, "rejected", False),
    (422, "state: too long", {}, "rejected", False),
])
def test_what_each_status_means_for_the_rung(status, message, headers, kind, advance):
    failure = classify("r", status, message, headers)
    assert isinstance(failure, ProviderFailure)
    assert (failure.kind, failure.advance) == (kind, advance)
    assert failure.message.startswith(f"r: HTTP {status}")


@pytest.mark.parametrize("headers, expected", [
    ({"retry-after": "7"}, 7.0),
    ({"retry-after-ms": "4500", "retry-after": "9"}, 4.5),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "Mon, 99 Foo 2026 25:61:00 GMT"}, None),
    ({"retry-after": "nan"}, None),
    ({"retry-after": "-3"}, None),
    ({"retry-after": "1e400"}, None),
    ({"retry-after-ms": "inf"}, None),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # in the past
])
def test_retry_after_never_raises(headers, expected):
    assert retry_after(headers) == expected


@pytest.mark.parametrize("text", [
    "invalid key sk-proj-AbCdEf123456",
    "Authorization: Bearer eyJhbGciOi.abc.def",
    '{"api_key": "a1b2c3d4e5"}',
    "token=0123456789abcdef",
    "digest 0123456789abcdef0123456789abcdef01234567",
    "blob QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZn==",
])
def test_key_shaped_text_is_scrubbed(text):
    cleaned = scrub(text)
    assert "[redacted]" in cleaned
    assert not any(part in cleaned for part in ("AbCdEf123456", "eyJhbGciOi", "a1b2c3d4e5", "0123456789abcdef0123"))


def test_ordinary_messages_are_left_alone():
    for text in ("laptop: HTTP 503: model loading", "model qwen2.5-coder-1.5b-instruct-q4_k_m",
                 "http://127.0.0.1:8080/v1/systemone", "request 3f2a1b4c5d6e7f8091a2b3c4d5e6f708"):
        assert scrub(text) == text


def test_provider_text_is_bounded_and_scrubbed():
    failure = ProviderFailure("r: HTTP 500: " + "x" * 10_000 + " sk-live-abcdefgh1234")
    assert len(failure.message) <= 500 and "sk-live" not in failure.message


def test_a_401_or_403_about_quota_is_quota_and_advances():
    for status in (401, 403):
        failure = classify("r", status, "You exceeded your current quota, check your billing details", {})
        assert (failure.kind, failure.advance) == ("quota", True)


def test_a_key_cut_in_half_by_the_bound_is_still_removed():
    key = "Zq9" * 8
    failure = ProviderFailure("r: " + "x " * 245 + key)
    assert "Zq9Zq9" in failure.message  # the bound cut the key: the pattern alone cannot see it
    assert "Zq9Zq9" not in failure.redact((key,)).message
