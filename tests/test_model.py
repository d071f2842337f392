"""The canonical model: every validation rule, with the message a user sees."""

import pytest
from pydantic import ValidationError

from system1_gateway.model.render import render
from system1_gateway.model.requests import (
    DecideRequest,
    JudgeRequest,
    describe_validation_error,
    parse_decide,
    parse_judge,
)
from system1_gateway.model.results import json_schemas


def judge_error(payload):
    with pytest.raises(ValidationError) as info:
        parse_judge(payload)
    return describe_validation_error(info.value)


def decide_error(payload):
    with pytest.raises(ValidationError) as info:
        parse_decide(payload)
    return describe_validation_error(info.value)


def q(**fields):
    return {"state": "s", "questions": {"x": fields}}


@pytest.mark.parametrize("alias", ["noul", "bool", "boolean", "yesno", "predicate"])
def test_noul_aliases_become_noul(alias):
    request = parse_judge(q(type=alias, instructions="Is it?"))
    assert request.questions["x"].type == "noul"


@pytest.mark.parametrize(
    "payload, expected",
    [
        ({"questions": {"x": {"type": "noul", "instructions": "?"}}}, "state: required field is missing"),
        ({"state": "s"}, "questions: required field is missing"),
        ({"state": "s", "questions": {}}, "questions: Dictionary should have at least 1 item"),
        ({**q(type="noul", instructions="?"), "extra": 1}, "extra: unknown field (not allowed)"),
        (q(type="maybe", instructions="?"), "questions.x: Input tag 'maybe'"),
        (q(type="noul"), "questions.x: a noul question needs instructions or a described outcome"),
        (q(type="noul", instructions="?", criteria={"maybe": "x"}), "questions.x.criteria.maybe"),
        (q(type="noul", instructions="?", colour="red"), "questions.x.colour: unknown field"),
        (q(type="choice", criteria=["only"]), "questions.x.criteria: needs 2 to 256 labels, got 1"),
        (q(type="choice", criteria=[f"l{i}" for i in range(257)]), "needs 2 to 256 labels, got 257"),
        (q(type="choice", criteria=["a", "b", "a"]), "labels must be unique; repeated: a"),
        (q(type="choice", criteria={"a": "x", " ": "y"}), "labels must be non-empty strings"),
        (q(type="score", criteria=["only"]), "questions.x.criteria: List should have at least 2 items"),
        (q(type="score", criteria=[str(i) for i in range(11)]), "List should have at most 10 items"),
        ({**q(type="noul", instructions="?"), "min_confidence": 1.5}, "min_confidence: Input should be less than or equal to 1"),
        ({**q(type="noul", instructions="?"), "min_confidence": -0.1}, "min_confidence: Input should be greater than or equal to 0"),
        ({**q(type="noul", instructions="?"), "schema_version": "2"}, "schema_version: Input should be '1'"),
        ({**q(type="noul", instructions="?"), "request_id": "r" * 201}, "request_id: String should have at most 200"),
        ({"state": 5, "questions": {"x": {"type": "noul", "instructions": "?"}}}, "state"),
    ],
)
def test_judge_rules_name_the_field(payload, expected):
    assert expected in judge_error(payload)


def test_a_question_id_that_looks_like_a_type_is_still_named():
    message = judge_error({"state": "s", "questions": {"choice": {"type": "choice", "criteria": ["a"]}}})
    assert message.startswith("questions.choice.criteria:")


def test_choice_criteria_object_or_list_and_null_descriptions():
    request = parse_judge(q(type="choice", criteria={"billing": "payments", "tech": None}))
    assert request.questions["x"].labels == ["billing", "tech"]
    assert request.questions["x"].label_descriptions() == [("billing", "payments"), ("tech", None)]
    assert parse_judge(q(type="choice", criteria=["a", "b"])).questions["x"].labels == ["a", "b"]


def test_structured_state_and_instructions_accepted():
    request = parse_judge({"state": [{"cmd": "ls"}], "questions": {"x": {"type": "score", "instructions": {"ask": "how?"}, "criteria": ["lo", {"d": "hi"}]}}})
    assert request.questions["x"].labels == ["0", "1"]


@pytest.mark.parametrize(
    "payload, expected",
    [
        ({}, "question: required field is missing"),
        ({"question": ""}, "question: String should have at least 1 character"),
        ({"question": "x" * 8001}, "question: String should have at most 8000 characters"),
        ({"question": "q", "options": ["a"]}, "options: List should have at least 2 items"),
        ({"question": "q", "options": [str(i) for i in range(51)]}, "options: List should have at most 50 items"),
        ({"question": "q", "options": ["a", "a"]}, "options: options must be unique"),
        ({"question": "q", "options": ["a", ""]}, "options.1: String should have at least 1 character"),
        ({"question": "q", "context": "text"}, "context: Input should be a valid dictionary"),
        ({"question": "q", "min_confidence": 2}, "min_confidence: Input should be less than or equal to 1"),
        ({"question": "q", "temperature": 0}, "temperature: unknown field (not allowed)"),
        ({"question": "q", "schema_version": "0"}, "schema_version: Input should be '1'"),
    ],
)
def test_decide_rules_name_the_field(payload, expected):
    assert expected in decide_error(payload)


def test_decide_without_options_is_a_yes_no_choice():
    judge = parse_decide({"question": "Is it safe?", "context": {"cmd": "ls"}}).to_judge("rid")
    question = judge.questions["decision"]
    assert question.type == "choice" and question.labels == ["yes", "no"]
    assert judge.state == {"cmd": "ls"} and judge.request_id == "rid"


def test_schemas_are_generated_and_strict():
    schemas = json_schemas()
    assert set(schemas) == {"judge_request", "judge_result", "decide_request", "decide_response"}
    assert schemas["judge_request"]["additionalProperties"] is False
    assert schemas["decide_request"]["properties"]["question"]["maxLength"] == 8000
    assert "p_true" in str(schemas["judge_result"])


def test_render_is_deterministic_and_readable():
    value = {"goal": "ship", "steps": ["build", {"test": True}], "owner": None}
    assert render(value) == render(value)
    assert render(value) == "goal: ship\nsteps:\n  - build\n  - test: true\nowner: null"
    assert render("plain") == "plain"


def test_models_are_frozen():
    request = parse_judge(q(type="noul", instructions="?"))
    with pytest.raises(ValidationError):
        request.state = "other"
    assert isinstance(parse_decide({"question": "q"}), DecideRequest)
    assert isinstance(request, JudgeRequest)


def test_json_nested_too_deeply_is_invalid_and_names_the_field():
    from system1_gateway.model.requests import MAX_DEPTH

    deep = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    for payload, field in (({"state": deep, "questions": {"q": {"type": "noul", "instructions": "x"}}}, "state"),
                           ({"state": "s", "questions": {"q": {"type": "noul", "instructions": deep}}}, "questions")):
        with pytest.raises(ValidationError, match=f"{field}: nested deeper than {MAX_DEPTH} levels"):
            parse_judge(payload)
    with pytest.raises(ValidationError, match="context: nested deeper"):
        parse_decide({"question": "q", "context": {"a": deep}})
    parse_judge({"state": [[["fine"]]], "questions": {"q": {"type": "noul", "instructions": {"a": [1]}}}})


def test_a_lone_surrogate_anywhere_is_invalid_and_named():
    for payload, field in (({"state": "s\ud800", "questions": {"q": {"type": "noul", "instructions": "x"}}}, "state"),
                           ({"state": "s", "questions": {"q": {"type": "choice", "criteria": ["\udfff", "b"]}}}, "questions")):
        with pytest.raises(ValidationError, match=f"{field}: text contains a lone surrogate"):
            parse_judge(payload)
