"""The registry of built-in questions: ids, canonical texts, matching by id and by text."""

import json
from pathlib import Path

import pytest

from conftest import run_cli
from system1_gateway.core.gateway import Gateway
from system1_gateway.model import builtins
from system1_gateway.model.requests import parse_decide, parse_judge
from system1_gateway.model.results import CapabilitiesResult

ROUTING = Path(__file__).resolve().parent / "data" / "routing_questions.json"


def test_every_builtin_has_a_stable_id_version_and_hash():
    assert sorted(builtins.BUILTINS) == ["design", "destructive", "read_only", "review", "specified"]
    assert builtins.BUILTINS["destructive"].version == 2  # asks about loss
    for name, b in builtins.BUILTINS.items():
        assert b.id == f"system1/{name}@{b.version}"
        assert builtins.get(b.id) is b and builtins.get(name) is b
        assert builtins.by_hash(b.hash) is b
        assert len(b.hash) == 16
    earlier = builtins.get("system1/destructive@1")  # the version before still answers by its id
    assert earlier is not None and earlier.version == 1 and builtins.by_hash(earlier.hash) is earlier
    assert earlier.hash != builtins.BUILTINS["destructive"].hash and "irreversibly change" in earlier.instructions
    assert builtins.get("destructive") is builtins.BUILTINS["destructive"]  # the short name: the current one


def test_the_routing_texts_the_hooks_send_are_the_builtins_verbatim():
    # tests/data/routing_questions.json holds the dev set's exact question texts
    shipped = json.loads(ROUTING.read_text(encoding="utf-8"))
    for name, question in shipped.items():
        assert builtins.BUILTINS[name].question() == question, name


def test_question_hash_is_the_wording_and_nothing_else():
    b = builtins.BUILTINS["destructive"]
    assert builtins.question_hash("noul", b.instructions, b.criteria) == b.hash
    flipped = {"false": b.criteria["false"], "true": b.criteria["true"]}  # key order is not wording
    assert builtins.question_hash("noul", b.instructions, flipped) == b.hash
    assert builtins.question_hash("noul", b.instructions + " ", b.criteria) != b.hash
    assert builtins.question_hash("noul", b.instructions, None) != b.hash


def test_naming_a_builtin_fills_in_its_canonical_wording():
    request = parse_judge({"state": "rm -rf build/", "questions": {
        "a": {"builtin": "system1/destructive@2"},
        "b": {"builtin": "read_only", "type": "bool"},  # short name, a type alias
    }})
    a, b = request.questions["a"], request.questions["b"]
    assert a.builtin == "system1/destructive@2" and a.type == "noul"
    assert a.instructions == builtins.BUILTINS["destructive"].instructions
    assert a.wording_hash() == builtins.BUILTINS["destructive"].hash
    assert b.builtin == "system1/read_only@1" and b.wording_hash() == builtins.BUILTINS["read_only"].hash


def test_verbatim_text_without_the_id_matches_by_hash():
    question = builtins.BUILTINS["specified"].question()
    parsed = parse_judge({"state": "x", "questions": {"q": question}}).questions["q"]
    assert parsed.builtin is None
    assert builtins.by_hash(parsed.wording_hash()) is builtins.BUILTINS["specified"]


@pytest.mark.parametrize("question, where, says", [
    ({"builtin": "system1/nope@1"}, "questions.q.builtin", "unknown built-in"),
    ({"builtin": 7}, "questions.q.builtin", "unknown built-in"),
    ({"builtin": "destructive", "type": "choice"}, "questions.q.type", "is a noul question"),
    ({"builtin": "destructive", "instructions": "Is it risky?"}, "questions.q.instructions", "differs from the canonical"),
    ({"builtin": "destructive", "criteria": {"true": "yes", "false": "no"}}, "questions.q.criteria", "differs"),
])
def test_a_bad_builtin_reference_is_an_invalid_request_naming_the_field(question, where, says):
    result = Gateway().judge({"state": "ls", "questions": {"q": question}})
    assert result["status"] == "error" and result["error"]["code"] == "invalid_request"
    assert where in result["error"]["message"] and says in result["error"]["message"]


def test_sending_the_canonical_text_along_with_the_id_is_fine():
    b = builtins.BUILTINS["review"]
    parsed = parse_judge({"state": "x", "questions": {"q": {"builtin": b.id, **b.question()}}})
    assert parsed.questions["q"].builtin == b.id


def test_decide_with_a_builtin_judges_the_question_text():
    judge = parse_decide({"question": "rm -rf build/", "builtin": "destructive"}).to_judge("r1")
    assert judge.state == "rm -rf build/"
    assert judge.questions["decision"].builtin == "system1/destructive@2"


@pytest.mark.parametrize("payload, says", [
    ({"question": "ls", "builtin": "nope"}, "builtin: unknown built-in"),
    ({"question": "ls", "builtin": "destructive", "options": ["a", "b"]}, "options: not allowed with builtin"),
    ({"question": "ls", "builtin": "destructive", "context": {"a": 1}}, "context: not allowed with builtin"),
])
def test_decide_builtin_refuses_what_does_not_fit(payload, says):
    result = Gateway().decide(payload)
    assert result["status"] == "error" and says in result["error"]["message"]


def test_decide_builtin_answers_yes_or_no(mock_gateway):
    result = mock_gateway(answer=None).decide({"question": "git status", "builtin": "destructive", "min_confidence": 0})
    assert result["status"] == "decided"
    assert result["decision"] in ("yes", "no") and set(result["probabilities"]) == {"yes", "no"}
    assert abs(sum(result["probabilities"].values()) - 1) < 1e-6


def test_capabilities_list_the_builtins():
    caps = Gateway().capabilities()
    CapabilitiesResult.model_validate(caps)
    ids = [b["id"] for b in caps["builtins"]]
    assert ids == [b.id for b in builtins.BUILTINS.values()] + ["system1/destructive@1"]
    assert [b["current"] for b in caps["builtins"]] == [True] * len(builtins.BUILTINS) + [False]
    entry = caps["builtins"][0]
    assert entry["hash"] == builtins.get(entry["id"]).hash and entry["criteria"]


def test_cli_decide_builtin_is_the_short_form():
    code, (out,), err = run_cli("decide", "--builtin", "destructive", "./scripts/cleanup.sh build/", "--provider",
                                "mock", "--min-confidence", "0")
    assert code == 0, err
    assert out["decision"] in ("yes", "no") and out["provider"] == "mock"
    code, (ruled,), err = run_cli("decide", "--builtin", "destructive", "rm -rf build/", "--provider", "mock")
    assert ruled["decision"] == "yes" and ruled["provider"] == "rules" and ruled["rationale"].startswith("part 1 of 1")
    code, (bad,), _ = run_cli("decide", "--builtin", "nosuch", "rm -rf build/", "--provider", "mock")
    assert code == 2 and "unknown built-in" in bad["error"]["message"]


def test_builtins_module_is_stdlib_only():
    import ast

    tree = ast.parse(Path(builtins.__file__).read_text())
    imported = {n.names[0].name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "hashlib", "json", "dataclasses", "typing"}


def test_each_version_of_destructive_is_read_under_its_own_rules(mock_gateway):
    """Version 1 (any change) and version 2 (loss) in one request: each question gets its own
    version's rules; a command both call destructive is decided by rules alone."""
    gw = mock_gateway(answer=None)
    both = {"old": {"builtin": "system1/destructive@1"}, "new": {"builtin": "destructive"}}
    result = gw.judge({"state": "docker compose down -v", "questions": both})
    assert result["status"] == "answered", result
    assert result["answers"]["old"]["model"] == "rule:docker-remove@1"
    assert result["answers"]["new"]["model"] == "rule:docker-compose-volumes"
    assert result["answers"]["old"]["p_true"] == result["answers"]["new"]["p_true"] == 1.0
    # a change that loses nothing: destructive by version 1's rule, harmless by version 2's
    alone = gw.judge({"state": "docker stop web", "questions": {"d": {"builtin": "system1/destructive@1"}}})
    assert alone["answers"]["d"]["model"] == "rule:docker-remove@1" and alone["answers"]["d"]["p_true"] == 1.0
    now = gw.judge({"state": "docker stop web", "questions": {"d": {"builtin": "destructive"}}})
    assert now["answers"]["d"]["model"] == "rule:docker-lifecycle" and now["answers"]["d"]["p_true"] == 0.0
