"""The reviewed rule table (shell/policy.json), a test per row: each rule decides the commands it
lists under `match` and none under `pass`; and how the parts' answers combine (shell/structure.py)."""

from __future__ import annotations

import json

import pytest

from system1_gateway.shell import policy as policy_mod
from system1_gateway.shell import structure
from system1_gateway.shell.policy import SENSITIVE_TARGET, decide, policy
from system1_gateway.shell.read import read

RULES = policy().rules


def rules_deciding(command: str, version: int = policy_mod.CURRENT) -> list[tuple[str | None, bool | None]]:
    return [(decide(p, version).rule, decide(p, version).destructive) for p in read(command).parts if not p.opaque]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_each_rule_decides_its_examples_and_not_its_counterexamples(rule):
    """Under every version the rule holds for; a rule of one version never decides under the other."""
    assert rule.raw.get("match"), f"{rule.id}: a rule needs at least one example"
    for version in sorted(rule.versions):
        for command in rule.raw["match"]:
            decided = rules_deciding(command, version)
            assert (rule.id, rule.verdict == "destructive") in decided, (version, command, decided)
        for command in rule.raw.get("pass", []):
            assert rule.id not in [r for r, _ in rules_deciding(command, version)], (version, command)
    for version in set(policy_mod.VERSIONS) - rule.versions:
        for command in rule.raw["match"]:
            assert rule.id not in [r for r, _ in rules_deciding(command, version)], (version, command)


def test_the_table_is_well_formed():
    raw = json.loads(policy_mod.POLICY_PATH.read_text())
    ids = [r["id"] for r in raw["rules"]]
    assert len(ids) == len(set(ids))
    for r in raw["rules"]:
        assert r["verdict"] in ("destructive", "safe") and r["why"]
        assert r.get("commands") or r.get("container"), r["id"]
        assert set(r) <= {"id", "verdict", "why", "commands", "sub", "flags_any", "flags_none", "args_any",
                          "verb_re", "sub_re", "min_args", "targets", "container", "match", "pass", "versions",
                          "unless_all_operands"}, r["id"]
        # a rule of version 1 only is named `<id>@1`; its version-2 successor (if any) keeps the id
        assert (r.get("versions") == [1]) == r["id"].endswith("@1"), r["id"]


@pytest.mark.parametrize("target, sensitive", [
    ("/etc/hosts", True), ("/etc/nginx/nginx.conf", True), ("~/.bashrc", True), ("~/.ssh/authorized_keys", True),
    ("$HOME/.zshrc", True), ("/dev/sda", True), ("/dev/nvme0n1p1", True), ("/usr/local/bin/tool", True),
    ("notes.md", False), ("./build/out.txt", False), ("/tmp/x.log", False), ("docs/.nojekyll", False),
])
def test_sensitive_redirection_targets(target, sensitive):
    assert bool(SENSITIVE_TARGET.match(target)) is sensitive


def test_a_write_is_never_safe_by_rule():
    """`echo` is read-only, `echo x > f` overwrites f: the engine judges it (or a rule, for system files)."""
    assert decide(read("echo ok").parts[0]).destructive is False
    assert decide(read("echo ok > notes.md").parts[0]).destructive is None
    assert decide(read("echo ok > /etc/motd").parts[0]) == policy_mod.Verdict(True, "redirect-system-file",
                                                                               "overwrites /etc/motd")
    assert decide(read("echo ok >> notes.md").parts[0]).destructive is False  # an append keeps what was there


def test_inline_code_that_deletes_is_destructive_whatever_the_interpreter():
    for command in ("python3 -c 'import shutil; shutil.rmtree(\"build\")'", "node -e \"fs.rmSync('x',{recursive:true})\"",
                    "perl -e 'unlink glob \"*.log\"'", "ruby -e 'FileUtils.rm_rf(\"tmp\")'",
                    "psql -c 'DROP TABLE users'", "mysql -e 'DELETE FROM orders'", "sqlite3 app.db 'DROP TABLE t'",
                    "redis-cli FLUSHALL", "mongosh --eval 'db.users.drop()'",
                    "psql <<SQL\nTRUNCATE audit;\nSQL"):
        assert any(d for _, d in rules_deciding(command)), command
    assert not any(d for _, d in rules_deciding("psql -c 'SELECT count(*) FROM users'"))


# -- combining the parts ------------------------------------------------------------------------

def answer(p: float, abstained: bool = False, reason: str | None = None) -> dict:
    return {"type": "noul", "p_true": p, "abstained": abstained, "abstain_reason": reason,
            "model": "head:destructive@1", "calibrated": True, "rationale": "x"}


def combined(command: str, engine: dict[str, dict], threshold: float = 0.6) -> dict:
    plan = structure.plan(command)
    assert set(plan.engine_texts) <= set(engine), plan.engine_texts
    structure.apply(plan, engine)
    return structure.combine(plan, threshold)


def test_the_most_destructive_part_decides_and_is_named():
    out = combined("git status && git log --oneline -5 && rm -rf ~", {})
    assert out["p_true"] == 1.0 and out["model"] == "rule:rm" and not out["abstained"]
    assert out["part"] == {"index": 3, "of": 3, "text": "rm -rf ~", "rule": "rm", "destructive": True,
                           "why": "rule rm: deletes files or directories"}
    assert out["rationale"].startswith("part 3 of 3: rm -rf ~: rule rm")


def test_engine_parts_are_asked_alone_and_the_maximum_wins():
    out = combined("./scripts/a.sh && ./scripts/b.sh --all", {"./scripts/a.sh": answer(0.1),
                                                             "./scripts/b.sh --all": answer(0.83)})
    assert out["p_true"] == 0.83 and out["part"]["index"] == 2 and out["model"] == "head:destructive@1"


def test_unsure_is_not_safe():
    out = combined("ls && $(printf r)m -rf /", {})
    assert out["abstained"] and out["abstain_reason"] == "opaque" and out["p_true"] >= 0.5
    assert "opaque: the command name" in out["rationale"] and out["part"]["destructive"] is None
    engine = combined("./tool --go", {"./tool --go": answer(0.2, True, "engine")})
    assert engine["abstained"] and engine["abstain_reason"] == "engine"
    # a rule that found a destructive part is certain whatever else is unsure
    sure = combined("$(printf r)m x; rm -rf ~", {})
    assert sure["p_true"] == 1.0 and not sure["abstained"] and sure["model"] == "rule:rm"


def test_below_the_threshold_abstains_as_usual():
    out = combined("./tool --maybe", {"./tool --maybe": answer(0.55)})
    assert out["abstained"] and out["abstain_reason"] == "below_threshold"


def test_a_broken_parse_is_also_judged_whole():
    plan = structure.plan("echo 'unterminated")
    assert plan.reading.broken and plan.engine_texts[-1] == "echo 'unterminated"


def test_too_many_engine_parts_are_unsure():
    command = " ; ".join(f"./step{i}.sh" for i in range(structure.MAX_ENGINE_PARTS + 3))
    plan = structure.plan(command)
    assert len(plan.engine_texts) == structure.MAX_ENGINE_PARTS
    structure.apply(plan, {t: answer(0.01) for t in plan.engine_texts})
    out = structure.combine(plan, 0.6)
    assert out["abstained"] and out["abstain_reason"] == "bounds"


def test_a_json_tool_call_has_its_commands_and_sql_read():
    import json as _json

    def judged(document: dict) -> dict:
        text = _json.dumps(document)
        plan = structure.plan_tool_call(document, text)
        assert plan.engine_texts[-1] == text  # the whole call is still asked of the engine
        structure.apply(plan, {t: answer(0.1) for t in plan.engine_texts})
        return structure.combine(plan, 0.6)

    assert judged({"tool": "bash", "command": "ls && rm -rf dist"})["model"] == "rule:rm"
    nested = {"type": "function", "function": {"name": "shell", "arguments": _json.dumps(
        {"cmd": ["bash", "-lc", "git clean -fdx"]})}}
    assert judged(nested)["model"] == "rule:git-rewrite"
    assert judged({"tool": "postgres.query", "sql": "DELETE FROM flags"})["model"] == "rule:sql-destructive"
    harmless = judged({"tool": "postgres.query", "sql": "SELECT name FROM flags"})
    assert harmless["p_true"] == 0.1 and not harmless["abstained"]


def test_the_part_shown_is_one_printable_line():
    out = combined("ls; rm -rf \"$(printf '\\x1b[2J')\"x", {})
    assert out["part"]["text"].isprintable() and "\n" not in out["rationale"]
    long = combined("rm " + "a" * 500, {})
    assert len(long["part"]["text"]) <= structure.MAX_SHOWN
