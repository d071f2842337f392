"""The reviewed rules of `policy.json`: the `destructive` policy for well-known tools.

A rule holds for both versions of the built-in unless its `versions` names one: version 2
asks about loss, so the rules that flagged mere change (a rebase, a formatter, a
deploy, `docker stop`) hold for version 1 only (`<id>@1`), and their loss-only successors for
version 2. `decide(part, version)` reads a part under one version (default: the current).

`decide(part)` answers a part when the rules know it: destructive (with the rule's id and
why), safe, or None (the engine judges it). Inline code that deletes (`inline.py`'s
findings) and a redirection over a system or shell-startup file are destructive whatever the
command; a part that overwrites any other file is never *safe* by rule (the engine judges
it). Rules match on the command's name (after its path), its subcommand words, flags (a
one-letter flag also matches inside a cluster: `-f` in `-rf`) and argument patterns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import inline
from .read import Part, stdin_file
from .shapes import doubt

POLICY_PATH = Path(__file__).with_name("policy.json")
CURRENT = 2  # builtins.BUILTINS["destructive"].version (stdlib-light: not imported from there)
VERSIONS = (1, 2)

# A redirection over one of these is destructive whatever the command (system files, shell
# start-up and credential files, block devices).
SENSITIVE_TARGET = re.compile(
    r"^(/(etc|boot|usr|bin|sbin|lib|lib32|lib64|opt|var/lib|var/spool|System|Library|private/etc|root)(/|$)"
    r"|/dev/(sd|nvme|hd|vd|xvd|disk|mmcblk|mapper/|md)"
    r"|(~|\$HOME|\$\{HOME\})?/?\.(bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|zlogin|cshrc|tcshrc"
    r"|gitconfig|npmrc|yarnrc|netrc|pypirc|pgpass|my\.cnf|vimrc|tmux\.conf|inputrc|ssh/|gnupg/|aws/|kube/|docker/"
    r"|config/(fish|git|gh|gcloud)/))")


@dataclass(frozen=True)
class Verdict:
    destructive: bool | None  # None: no rule knows this part; the engine judges it
    rule: str | None
    why: str
    shown: str | None = None  # what the engine is shown of the part, when not its text


@dataclass(frozen=True)
class Rule:
    id: str
    verdict: str
    why: str
    commands: frozenset[str]
    sub: tuple[tuple[str, ...], ...]
    flags_any: tuple[str, ...]
    flags_none: tuple[str, ...]
    args_any: tuple[re.Pattern[str], ...]
    verb_re: re.Pattern[str] | None
    sub_re: re.Pattern[str] | None
    min_args: int
    targets: str | None  # "any" / "last" / "of": a word names a SENSITIVE_TARGET
    container: bool
    versions: frozenset[int]  # the built-in's versions this rule holds for
    # the rule does not apply when every operand matches this (`rm -rf node_modules` under
    # version 2: a folder a reinstall rebuilds); a word built at run time never matches
    unless_all_operands: re.Pattern[str] | None
    raw: dict[str, Any]


class Policy:
    def __init__(self, data: dict[str, Any]):
        self.globals = {tool: frozenset(values) for tool, values in data.get("globals", {}).items()}
        self.rules = [_rule(r) for r in data["rules"]]
        ids = [r.id for r in self.rules]
        if len(ids) != len(set(ids)):
            raise ValueError("policy.json: rule ids must be unique")
        self.by_command: dict[str, list[Rule]] = {}
        for rule in self.rules:  # a rule for every command ("*") keeps its place in the order
            for name in rule.commands:
                self.by_command.setdefault(name, []).append(rule)
        anywhere = [r for r in self.rules if "*" in r.commands]
        for rules in self.by_command.values():
            order = {id(r): i for i, r in enumerate(self.rules)}
            merged = {id(r): r for r in rules + anywhere}
            rules[:] = sorted(merged.values(), key=lambda r: order[id(r)])
        self.anywhere = anywhere
        # the long flags the rules decide on, per command: their abbreviations (`--forc`) are
        # never certainly harmless (shapes.doubt)
        flags: dict[str, set[str]] = {}
        for rule in self.rules:
            tokens = [t for sub in rule.sub for t in sub]
            for name in rule.commands - {"*"}:
                for flag in (*rule.flags_any, *rule.flags_none, *tokens):
                    if flag.startswith("--") and len(flag) > 2:
                        flags.setdefault(name, set()).add(flag[2:])
        self.decided_flags = {name: frozenset(v) for name, v in flags.items()}

    def match(self, part: Part, version: int = CURRENT) -> Rule | None:
        """The first rule that decides this part, or None."""
        return next(self.matches(part, version), None)

    def matches(self, part: Part, version: int = CURRENT):
        """The rules that match this part under the built-in's `version`, in the table's order."""
        name = part.name
        if part.container:
            yield from (r for r in self.rules if r.container and version in r.versions)
            return
        if name is None:
            return
        base = name.rsplit("/", 1)[-1]
        for rule in self.by_command.get(base) or self.by_command.get(name) or self.anywhere:
            if version in rule.versions and self._applies(rule, base, part.words):
                yield rule

    def _applies(self, rule: Rule, base: str, words: list[str | None]) -> bool:
        args = words[1:]
        flags = [w for w in args if w is not None]
        plain = [w for w in args if w is not None and not w.startswith("-")]
        if rule.sub or rule.verb_re is not None:
            # subcommands come after the tool's global options (`git -C repo push`, `kubectl -n x delete`)
            rest = args[_options_end(args, 0, self.globals.get(base, frozenset())):]
            sub_values = self.globals.get(f"{base} {rest[0]}") if rest and rest[0] is not None else None
            if sub_values is not None:  # `docker compose -f prod.yml down`: compose's own options
                rest = rest[:1] + rest[_options_end(rest, 1, sub_values):]
            plain = [w for w in rest if w is not None and not w.startswith("-")]
            if rule.sub and not self._sub(rule, rest, plain):
                return False
            if rule.sub:
                plain = plain[1:]
            if rule.verb_re is not None and not any(rule.verb_re.match(w) for w in plain[:3]):
                return False
        if rule.sub_re is not None and not rule.sub_re.search(" " + " ".join(flags) + " "):
            return False
        # a unique prefix of a long option is that option to git, GNU getopt and argparse (`git push
        # --forc`, `git clean --f`): it counts where counting it is the cautious reading — for the
        # flags that make a part destructive, and for those that keep a safe rule off
        destructive = rule.verdict == "destructive"
        if rule.flags_any and not any(_has_flag(w, f, destructive) for w in flags for f in rule.flags_any):
            return False
        if rule.flags_none and any(_has_flag(w, f, not destructive) for w in flags for f in rule.flags_none):
            return False
        if rule.args_any and not any(p.search(w) for w in flags for p in rule.args_any):
            return False
        if rule.min_args and len(plain) < rule.min_args:
            return False
        if rule.unless_all_operands is not None:
            operands = [w for w in args if w is None or not w.startswith("-")]
            if operands and all(w is not None and rule.unless_all_operands.match(w) for w in operands):
                return False
        if rule.targets == "last":
            paths = [w for w in args if w is not None and not w.startswith("-")]
            if len(paths) < 2 or not SENSITIVE_TARGET.match(paths[-1]):
                return False
        elif rule.targets == "of" and not any(w.startswith("of=") and SENSITIVE_TARGET.match(w[3:]) for w in flags):
            return False
        elif rule.targets == "any" and not any(
                SENSITIVE_TARGET.match(w) or ("=" in w and SENSITIVE_TARGET.match(w.split("=", 1)[1])) for w in flags):
            return False
        return True

    @staticmethod
    def _sub(rule: Rule, rest: list[str | None], plain: list[str]) -> bool:
        for tokens in rule.sub:
            dashed = any(t.startswith("-") for t in tokens)
            pool = rest if dashed else plain
            if list(pool[:len(tokens)]) == list(tokens):
                return True
            if dashed and len(pool) >= len(tokens) and all(  # `git merge --abo` is `--abort` to git
                    w == t or (t.startswith("--") and _abbreviates(w, t)) for w, t in zip(pool, tokens, strict=False)):
                return True
        return False


def _options_end(args: list[str | None], start: int, values: frozenset[str]) -> int:
    """Where the options from `start` end: the first word that is not one (`values` take the
    next word as their value)."""
    i = start
    while i < len(args):
        w = args[i]
        if w is None or not w.startswith("-") or w == "--":
            break
        i += 2 if w in values else 1
    return i


# `--dry-run=none` (kubectl) or `=false` asks for no dry run: it is not the flag `--dry-run`
_NO_DRY_RUN = re.compile(r"^--dry-?run=(none|false|no|off|0)$", re.I)


def _abbreviates(word: str | None, flag: str) -> bool:
    """`word` is a unique-prefix abbreviation of the long option `flag` (`--forc` of `--force`),
    with or without a `=value`."""
    if word is None or not word.startswith("--") or len(word) < 3:
        return False
    name = word.split("=", 1)[0]
    return len(name) > 2 and len(name) < len(flag) and flag.startswith(name)


def _has_flag(word: str, flag: str, abbreviated: bool = False) -> bool:
    if _NO_DRY_RUN.match(word):
        return False
    if word == flag or (flag.startswith("--") and word.startswith(flag + "=")):
        return True
    if abbreviated and flag.startswith("--") and _abbreviates(word, flag):
        return True
    if len(flag) == 2 and flag[0] == "-" and flag[1] != "-" and re.fullmatch(r"-[A-Za-z]{2,}", word):
        return flag[1] in word[1:]
    return False


def _rule(raw: dict[str, Any]) -> Rule:
    if raw.get("targets") not in (None, "any", "last", "of"):
        raise ValueError(f"policy.json: rule {raw.get('id')!r}: targets must be \"any\", \"last\" or \"of\"")
    if raw.get("verdict") not in ("destructive", "safe"):
        raise ValueError(f"policy.json: rule {raw.get('id')!r} needs verdict destructive or safe")
    versions = frozenset(raw.get("versions", VERSIONS))
    if not versions or not versions <= set(VERSIONS):
        raise ValueError(f"policy.json: rule {raw.get('id')!r}: versions must be a list of {list(VERSIONS)}")
    return Rule(
        id=raw["id"], verdict=raw["verdict"], why=raw["why"], commands=frozenset(raw.get("commands", ())),
        sub=tuple(tuple(s.split()) for s in raw.get("sub", ())), flags_any=tuple(raw.get("flags_any", ())),
        flags_none=tuple(raw.get("flags_none", ())), args_any=tuple(re.compile(p) for p in raw.get("args_any", ())),
        verb_re=re.compile(raw["verb_re"]) if raw.get("verb_re") else None,
        sub_re=re.compile(r"(?<![\w-])" + raw["sub_re"] + r"(?![\w-])") if raw.get("sub_re") else None,
        min_args=int(raw.get("min_args", 0)), container=bool(raw.get("container")),
        targets=raw.get("targets"), versions=versions,
        unless_all_operands=re.compile(raw["unless_all_operands"]) if raw.get("unless_all_operands") else None,
        raw=raw)


_POLICY: Policy | None = None


def policy() -> Policy:
    global _POLICY
    if _POLICY is None:
        _POLICY = Policy(json.loads(POLICY_PATH.read_text(encoding="utf-8")))
    return _POLICY


def _writes_nothing(part: Part) -> bool:
    """The part prints nothing (or one empty line), so its `>` only empties the file (`> f`,
    `: > f`, `true > f`, `cat /dev/null > f`, `echo > f`, `echo "" > f`, `echo -n > f`,
    `printf '' > f`)."""
    if not part.words:
        return True
    base = (part.name or "").rsplit("/", 1)[-1]
    args = part.words[1:]
    return (base in (":", "true", "false") or (base == "cat" and args == ["/dev/null"])
            or (base == "echo" and all(a in ("", "-n", "-e", "-E", "-ne", "-en") for a in args))
            or (base == "printf" and args in ([""], ["\\n"], ["%s", ""])))


def decide(part: Part, version: int = CURRENT) -> Verdict:
    """What the rules say of one (non-opaque) part, under the built-in's `version`."""
    if part.findings:
        rule_id, why = part.findings[0]
        return Verdict(True, rule_id, why)
    base = (part.name or "").rsplit("/", 1)[-1]
    restore = inline.restores_over_data(part.words, stdin_file(part.redirects)) if inline.language(
        base, part.words) == "sql" else None
    if restore is not None:
        return Verdict(True, "sql-restore", restore)
    for target in part.writes:
        if target is not None and SENSITIVE_TARGET.match(target):
            return Verdict(True, "redirect-system-file", f"overwrites {target}")
    for target in part.appends:
        if SENSITIVE_TARGET.match(target):
            return Verdict(True, "redirect-system-file", f"changes {target}")
    if part.writes and _writes_nothing(part):
        return Verdict(True, "redirect-truncate", f"empties {part.writes[0] or 'a file'}")
    for target in part.writes:
        if target is not None and target in part.words[1:]:
            return Verdict(True, "redirect-same-file", f"empties {target} before reading it (`> {target}`)")
    doubted: tuple[Rule, str] | None = None
    for rule in policy().matches(part, version):
        if rule.verdict == "destructive":
            return Verdict(True, rule.id, rule.why)
        if part.writes:
            break
        base = (part.name or "").rsplit("/", 1)[-1]
        reason = doubt(rule.id, part, policy().decided_flags.get(base, frozenset()))
        if not reason:
            return Verdict(False, rule.id, rule.why)
        # a "safe" rule certifies only shapes known to be harmless: the next rule,
        # or the engine, decides
        doubted = doubted or (rule, reason)
    if part.writes:
        return Verdict(None, None, "it overwrites a file: the engine judges whether that destroys anything")
    if doubted is not None:
        shown = part.text_with_assigns
        return Verdict(None, None, f"rule {doubted[0].id} does not certify this: {doubted[1]}",
                       shown if shown != part.text else None)
    return Verdict(None, None, "")
