"""A local `/v1/systemone` engine that fails on purpose (fault injection for the waterfall).

Speaks the Jev wire of reference/protocols.md §1 when it answers; `mode` picks the failure.
Binds 127.0.0.1 only; every handler is bounded in time so the server always stops.
"""

from __future__ import annotations

import json
import socket
import time

from local_http import LocalServer, QuietHandler

MODES = ("von", "von_422", "ok", "hang", "drip", "429", "429_long", "529", "503", "401", "402", "400_credits", "500",
         "invalid_json", "wrong_model", "not_argmax", "partial", "422", "404_route", "404_model", "301",
         "429_bad_retry_after", "401_bad_retry_after", "401_echo", "huge", "huge_gzip")
HUGE_BYTES = 12 * 1024 * 1024  # past the default max_response_bytes (8 MiB)
HANG_S = 20.0


def answers_for(questions: dict, first_p: float = 0.8) -> dict:
    out = {}
    for qid, q in questions.items():
        if q["type"] == "noul":
            out[qid] = {"type": "noul", "noul": first_p}
            continue
        crit = q["criteria"]
        labels = list(crit) if q["type"] == "choice" else [str(i) for i in range(len(crit))]
        rest = (1 - first_p) / (len(labels) - 1)
        probs = {label: (first_p if i == 0 else rest) for i, label in enumerate(labels)}
        if q["type"] == "choice":
            out[qid] = {"type": "choice", "choice": labels[0], "probabilities": probs, "confidence": 0.7}
        else:
            out[qid] = {"type": "score", "score": sum(int(k) * p for k, p in probs.items()), "probabilities": probs,
                        "legend": {str(i): str(c) for i, c in enumerate(crit)}, "confidence": 0.6}
    return out


class FaultEngine:
    def __init__(self, mode: str = "ok", model: str = "fault-1"):
        self.mode = mode
        self.model = model
        self.requests: list[dict] = []
        self.arrived: list[float] = []  # time.monotonic() of each request, in order
        self.headers: list[dict] = []
        self.compressed: list[int] = []
        engine = self

        class Handler(QuietHandler):
            _send = QuietHandler.send_json

            def do_GET(self):
                self._send(200 if engine.mode == "ok" else 503, {"status": engine.mode})

            def do_POST(self):
                if self.headers.get("content-encoding") == "zstd":
                    import zstandard

                    raw = self.rfile.read(int(self.headers["content-length"]))
                    engine.compressed.append(len(raw))
                    body = json.loads(zstandard.ZstdDecompressor().decompress(raw))
                else:
                    body = self.read_json()
                engine.requests.append(body)
                engine.arrived.append(time.monotonic())
                engine.headers.append(dict(self.headers))
                mode = engine.mode
                if mode == "hang":
                    time.sleep(HANG_S)
                    return
                answers = answers_for(body["questions"])
                ok = {"model": engine.model, "answers": answers, "usage": {"input_tokens": 40, "output_tokens": 2}}
                if mode == "drip":
                    data = json.dumps(ok).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    try:
                        for i in range(min(len(data), int(HANG_S * 10))):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.1)
                    except OSError:  # the client gave up: expected
                        pass
                    return
                errors = {
                    "429": (429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"retry-after": "7"}),
                    # a cooldown no test outlasts, however loaded the machine (7 s did, with two agent turns)
                    "429_long": (429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"retry-after": "600"}),
                    "529": (529, {"error": {"message": "overloaded"}}, {"retry-after-ms": "4500"}),
                    "503": (503, {"detail": "model loading"}, {}),
                    "401": (401, {"detail": "invalid api key"}, {}),
                    "402": (402, {"error": "payment required"}, {}),
                    "400_credits": (400, {"error": {"message": "Your credits are exhausted for this billing period"}}, {}),
                    "500": (500, {"detail": "internal error"}, {}),
                    "422": (422, {"detail": [{"loc": ["body", "state"], "msg": "too long", "type": "value_error"}]}, {}),
                    # A server without this route (FastAPI's default 404 body), vs one that
                    # does not have the model; an http→https redirect; unreadable Retry-After.
                    "404_route": (404, {"detail": "Not Found"}, {}),
                    "404_model": (404, {"error": {"message": "model 'fault-1' not found, try pulling it first"}}, {}),
                    "301": (301, b"", {"location": "https://127.0.0.1:9/v1/systemone"}),
                    "429_bad_retry_after": (429, {"error": "slow down"}, {"retry-after": "soon, maybe"}),
                    "401_bad_retry_after": (401, {"detail": "invalid api key"}, {"retry-after": "Mon, 99 Foo 2026"}),
                }
                if mode in ("huge", "huge_gzip"):  # a valid answer padded past any sane size
                    data = json.dumps({**ok, "pad": "x" * HUGE_BYTES}).encode()
                    headers = {}
                    if mode == "huge_gzip":  # small on the wire, 12 MiB once inflated
                        import gzip

                        data, headers = gzip.compress(data), {"content-encoding": "gzip"}
                    self._send(200, data, headers)
                    return
                if mode == "401_echo":  # a careless server that echoes the credential back
                    self._send(401, {"error": {"message": f"invalid key {self.headers.get('authorization')}; "
                                                          f"raw={self.headers.get('authorization', '').split()[-1]}"}})
                    return
                if mode == "von":  # banded noul + noul_raw, fixed model, output_tokens = answers
                    for a in answers.values():
                        if a["type"] == "noul":
                            p = a["noul"]
                            a["noul_raw"] = p
                            a["noul"] = 0.8 + 0.1 * (p - 0.5) if p >= 0.5 else 0.2 - 0.1 * (0.5 - p)
                    self._send(200, {"model": "von-1.3.0", "answers": answers,
                                     "usage": {"input_tokens": 12, "output_tokens": len(answers)}})
                    return
                if mode == "von_422":
                    self._send(422, {"detail": "checkpoint option_marker.pt not found"})
                    return
                if mode in errors:
                    status, err, headers = errors[mode]
                    self._send(status, err, headers)
                elif mode == "invalid_json":
                    self._send(200, b"{not json")
                elif mode == "wrong_model":
                    self._send(200, {**ok, "model": "someone-else-2"})
                elif mode == "not_argmax":
                    for a in answers.values():
                        if a["type"] == "choice":
                            a["choice"] = list(a["probabilities"])[-1]
                    self._send(200, ok)
                elif mode == "partial":
                    answers.pop(next(iter(answers)))
                    self._send(200, ok)
                else:
                    self._send(200, ok)

        self._local = LocalServer(Handler)
        self.port, self.url = self._local.port, self._local.url

    def close(self):
        self._local.close()


def closed_port() -> int:
    """A loopback port with nothing listening (connection refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
