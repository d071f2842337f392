"""`ollama`: any local chat model through Ollama's `/api/chat` token logprobs (Ollama ≥ 0.12.11). Ollama's native `/v1/systemone` (≥ 0.35) needs no adapter: use
the `systemone` kind with `endpoint = "http://127.0.0.1:11434"`.

One call per question: the question comes before and after the evidence, the model is asked
for one option **name** (small models over-pick letters), and the first generated position's
top alternatives are credited to the options whose normalised name starts with that token
(mass split evenly when a token prefixes several names), then renormalised over the options.
At most 20 options (Ollama returns at most 20 alternatives). A server that returns no
logprobs, or a thinking model, is an error: no fake 0/1 answers.

Caller text (evidence, instructions, descriptions, labels) is rendered by Ollama into the
model's chat template, and Ollama's tokenizer may read control tokens inside it: evidence
holding `<|im_end|>` could close the user turn and write the answer. The gateway cannot
choose how Ollama tokenizes, so it neutralises the chat control sequences of the common
model families in every caller text before sending (`neutralise`): **a space is inserted
after the first character** of `<|…|>` (ChatML, Llama 3, Phi, Granite…), `<｜…｜>` (DeepSeek),
`[INST]`, `[/INST]`, `<<SYS>>`, `<</SYS>>` (Llama 2), `[SYSTEM_PROMPT]`, `[TOOL_CALLS]` and the
other Mistral brackets, `<s>`, `</s>`, `<bos>`, `<eos>`, `<start_of_turn>`, `<end_of_turn>`
(Gemma), `<think>`, `<tool_call>` and their closing forms (Qwen). `<|im_end|>` becomes
`< |im_end|>`: still readable, no longer a token. Evidence that held turn markers is
answered and abstained: the words of a fake transcript can still steer the model.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any, ClassVar

import httpx
from pydantic import Field

from ..model.errors import MalformedAnswer, ProviderFailure
from ..model.render import render
from ..model.requests import JudgeRequest
from .base import Health, Limits, Reply, parse_settings
from .embedded.prompts import holds_turn_markers, neutralise
from .systemone import SystemOneProvider, SystemOneSettings

TOP = 20


class OllamaSettings(SystemOneSettings):
    endpoint: str = "http://127.0.0.1:11434"
    max_options: int = Field(default=TOP, ge=2, le=TOP)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


class OllamaProvider(SystemOneProvider):
    kind: ClassVar[str] = "ollama"

    def __init__(self, name: str, settings: dict[str, Any]):
        super().__init__(name, settings)
        self.limits = Limits(max_options=self.settings.max_options)
        self.chat_url = self.root + "/api/chat"

    def _parse(self, name: str, settings: dict[str, Any]) -> Any:
        return parse_settings(OllamaSettings, name, settings)

    @staticmethod
    def options(question: Any) -> tuple[list[str], list[str]]:
        """(what the model is asked to say, the answer labels), position for position."""
        if question.type == "noul":
            return ["yes", "no"], ["true", "false"]
        if question.type == "choice":
            return list(question.labels), list(question.labels)
        return [str(i) for i in range(len(question.criteria))], list(question.labels)

    def _messages(self, question: Any, state_text: str, say: list[str]) -> list[dict[str, str]]:
        """The chat messages; every caller text in them passes through `neutralise`."""
        def text(value: Any) -> str:
            return neutralise(render(value))

        instr = text(question.instructions) if question.instructions is not None else "Pick the option that fits."
        lines = [f"Question: {instr}"]
        if question.type == "noul" and question.criteria:
            for word, key in (("yes", "true"), ("no", "false")):
                if question.criteria.get(key):
                    lines.append(f"Answer {word} if: {text(question.criteria[key])}")
        elif question.type == "choice":
            lines += [f"- {neutralise(label)}: {text(d)}" if d else f"- {neutralise(label)}"
                      for label, d in question.label_descriptions()]
        elif question.type == "score":
            lines += [f"{i}: {text(d)}" for i, d in enumerate(question.criteria)]
        listing = ", ".join(neutralise(name) for name in say)
        lines += ["", "Input:", neutralise(state_text), "", f"Question: {instr}", f"Answer with exactly one of: {listing}."]
        return [{"role": "system", "content": f"Answer with exactly one of: {listing}. No other words."},
                {"role": "user", "content": "\n".join(lines)}]

    def _ask(self, question: Any, state_text: str, deadline: float) -> tuple[dict[str, float], dict[str, object]]:
        say, labels = self.options(question)
        body = {"model": self.settings.model, "stream": False, "think": False, "logprobs": True,
                "top_logprobs": TOP, "options": {"temperature": 0, "num_predict": 4},
                "messages": self._messages(question, state_text, say)}
        remaining = max(0.01, deadline - time.monotonic())
        data = self._exchange(json.dumps(body).encode(), remaining, self.chat_url)
        if isinstance(data.get("error"), str):  # a failure reported with status 200
            raise ProviderFailure(f"{self.name}: {data['error']}", kind="server")  # scrubbed, then bounded
        message = m if isinstance(m := data.get("message"), dict) else {}
        if message.get("thinking"):
            raise ProviderFailure(f"{self.name}: {self.settings.model} is a thinking model; its reasoning tokens "
                                  f"would be scored instead of the answer. Use a non-thinking model.", kind="model")
        positions = data.get("logprobs")
        if not positions:
            raise ProviderFailure(f"{self.name}: the server returned no logprobs (Ollama ≥ 0.12.11 needed); "
                                  f"refusing to turn generated text into a fake 0/1 answer", kind="model")
        if not isinstance(positions, list):
            raise MalformedAnswer(f"{self.name}: 'logprobs' is not a list of positions")
        mass = dict.fromkeys(labels, 0.0)
        names = [_norm(s) for s in say]
        first = positions[0] if isinstance(positions[0], dict) else {}
        alternatives = first.get("top_logprobs")
        for alt in alternatives if isinstance(alternatives, list) else []:
            if not isinstance(alt, dict):
                continue
            token = _norm(str(alt.get("token", "")))
            logprob = alt.get("logprob")
            # A log-probability is ≤ 0; anything else (or NaN) is not one, and exp() of it
            # could overflow.
            if not token or isinstance(logprob, bool) or not isinstance(logprob, (int, float)) \
                    or not -1e6 <= logprob <= 0:
                continue
            hits = [labels[i] for i, name in enumerate(names) if name.startswith(token) or token.startswith(name)]
            for label in hits:
                mass[label] += math.exp(logprob) / len(hits)
        total = sum(mass.values())
        if total <= 0:
            raise MalformedAnswer(f"{self.name}: none of the options is among the model's top {TOP} first tokens")
        usage = {"input_tokens": data.get("prompt_eval_count"), "output_tokens": data.get("eval_count")}
        return {label: m / total for label, m in mass.items()}, usage

    def judge(self, request: JudgeRequest, timeout_s: float) -> Reply:
        deadline = time.monotonic() + timeout_s
        state_text = render(request.state)
        answers: dict[str, Any] = {}
        totals: dict[str, int | None] = {"input_tokens": None, "output_tokens": None}
        for qid, question in request.questions.items():
            probs, usage = self._ask(question, state_text, deadline)
            for key, value in usage.items():
                if isinstance(value, int):
                    totals[key] = (totals[key] or 0) + value
            rationale = f"ollama {self.settings.model}: " + ", ".join(f"{k}={v:.2f}" for k, v in probs.items())
            if question.type == "noul":
                answers[qid] = {"type": "noul", "p_true": probs["true"], "rationale": rationale}
            elif question.type == "choice":
                answers[qid] = {"type": "choice", "choice": max(probs, key=probs.__getitem__),
                                "probabilities": probs, "rationale": rationale}
            else:
                answers[qid] = {"type": "score", "probabilities": probs, "rationale": rationale}
            if holds_turn_markers(state_text):  # neutralised, but its words may still steer the model
                answers[qid].update(abstained=True, rationale=rationale + "; the evidence spells chat turn markers "
                                    "(neutralised before sending): abstained")
        return Reply(answers=answers, model=self.settings.model, usage=totals)

    def health(self, timeout_s: float) -> Health:
        try:
            resp = self._client.get(self.root + "/api/version", timeout=httpx.Timeout(timeout_s))
        except httpx.HTTPError as exc:
            return Health(False, f"unreachable ({type(exc).__name__})", self.settings.model)
        if resp.status_code != 200:
            return Health(False, f"/api/version answered {resp.status_code}", self.settings.model)
        try:
            body = resp.json()
        except (ValueError, RecursionError):
            return Health(False, "/api/version answered 200 with a body that is not JSON", self.settings.model)
        version = body.get("version", "?") if isinstance(body, dict) else "?"
        return Health(True, f"ollama {version}", self.settings.model)
