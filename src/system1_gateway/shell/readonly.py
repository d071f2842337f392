"""Commands that surely only read: the reviewed table `readonly.json`, for `[guard] approve`.

`approve(command)` answers whether Claude Code's permission prompt for a Bash command may be
answered "allow" on the user's behalf (hooks/approve.py): an `Approval` naming the rule of each
part, or None. It is stricter than the policy's *safe* (`policy.json`: not destructive, which
takes in `mkdir`, `pytest`, `xargs`): every part must be an inspection that writes nothing and
runs no code the command does not name, by a rule of its own here, **and** certified harmless by
the guard's policy rules (so an approval never overrides a guard that would ask). Nothing is
guessed and nothing is read from disk: a command whose answer would need the working tree (what
a glob matches, what a directory holds) is not approved unless the table says why it need not.

No approval, whatever the tool, for:
  * a parse with errors, a reading past its bounds, more than MAX_PARTS parts, characters
    beyond ASCII, a function, alias or variable defined in the command, an assignment;
  * a part that is opaque, reached through a wrapper or a shell string (`sudo`, `env`,
    `xargs`, `bash -c`, `find -exec`, `timeout`), fed a heredoc or here-string, run with an
    assignment prefix, renamed earlier in the command, or named by a path (`./ls`, `/tmp/cat`);
  * a word built at run time (`$VAR`, `$(…)`, backticks, `<(…)`): no such word, anywhere;
  * any redirection but to /dev/null or between descriptors (`2>&1`): no `>`, `>>` or `<` file;
  * an option the rule does not list (unknown means no), a value of an option it does not list;
  * a path operand (or an option's path value) naming a secret: a component such as `.ssh`,
    `.aws`, `.gnupg`, `.config`, `.kube`, `.docker`, `.netrc`, `.pgpass`, `.npmrc`, `keyrings`,
    `.env*`, `*.pem`, `*.key`, `id_rsa*`, `*_history`, `credentials*`, `*secret*`, `*token*`,
    `*.tfstate`, or one under `/proc`, `/sys`, `/dev`, `/root`, `/run/secrets`; a glob that could
    match such a name (`cat *`, `cat .e*`) in a tool that reads contents; a home path other than
    `~` itself through `~user`;
  * a recursive search (`grep -r`, `rg`, `git grep` …) over a path outside the project (absolute,
    `~`, or with `..`); `grep -r` also over the project root (`.`), where `.env` files live (rg
    and git grep skip hidden and ignored files there).
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .read import Part, Reading, read

TABLE_PATH = Path(__file__).with_name("readonly.json")
MAX_PARTS = 16
GLOB = re.compile(r"[*?\[]")
SUBSTITUTION = ("`", "$(", "<(", ">(", "${")


@dataclass(frozen=True)
class Approval:
    rules: tuple[str, ...]  # the rule of each part, in reading order

    @property
    def rule_set(self) -> list[str]:
        return sorted(set(self.rules))


class No(Exception):
    """Why a command or part is not approved (a short fixed phrase, never the command's text)."""


@dataclass(frozen=True)
class Spec:
    """What one tool (or git subcommand) may carry."""

    short: frozenset[str]
    short_valued: frozenset[str]
    short_optional: frozenset[str]
    long: dict[str, str]  # --name -> "" (no value) | "=" (a value) | "?" (an optional attached value)
    paths: frozenset[str]  # options whose value is a path (checked as operands are)
    patterns: frozenset[str]  # options that give the pattern (then no operand is one)


class Table:
    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.redirects = frozenset(data["redirects"])
        secret = data["secret"]
        self.secret_names = frozenset(n.lower() for n in secret["names"])
        self.secret_globs = tuple(g.lower() for g in secret["globs"])
        self.secret_roots = tuple(secret["roots"])
        self.probes = tuple(secret["probes"]) + tuple(secret["names"])
        self.groups = data["groups"]
        self.rules: dict[str, dict[str, Any]] = {}
        self.by_command: dict[str, dict[str, Any]] = {}
        for rule in data["rules"]:
            if rule["id"] in self.rules:
                raise ValueError(f"readonly.json: rule {rule['id']} twice")
            self.rules[rule["id"]] = rule
            for name in rule["commands"]:
                if name in self.by_command:
                    raise ValueError(f"readonly.json: command {name} in two rules")
                self.by_command[name] = rule
        self.specs: dict[tuple[str, str], Spec] = {}
        for rule in data["rules"]:
            if "special" not in rule or rule["special"] == "jq":
                self.specs[(rule["id"], "")] = self.spec(rule)
            for sub, raw in rule.get("sub", {}).items():
                self.specs[(rule["id"], sub)] = self.spec(raw)

    def spec(self, raw: dict[str, Any]) -> Spec:
        parts = [self.groups[g] for g in raw.get("groups", ())] + [raw]
        short, valued, optional, paths, patterns = set(), set(), set(), set(), set()
        long: dict[str, str] = {}
        for part in parts:
            short |= set(part.get("short", ""))
            valued |= set(part.get("short_valued", ""))
            optional |= set(part.get("short_optional", ""))
            paths |= set(part.get("paths", ()))
            patterns |= set(part.get("patterns", ()))
            for option in part.get("long", ()):
                if not option.startswith("--"):
                    raise ValueError(f"readonly.json: long option {option!r} does not start with --")
                name, kind = (option[:-2], "?") if option.endswith("=?") else (option[:-1], "=") if option.endswith("=") else (option, "")
                long[name] = kind
        return Spec(frozenset(short - valued - optional), frozenset(valued), frozenset(optional), long,
                    frozenset(paths), frozenset(patterns))

    # -- paths -------------------------------------------------------------------------------

    def secret_component(self, component: str) -> bool:
        low = component.lower()
        return low in self.secret_names or any(fnmatch.fnmatchcase(low, g) for g in self.secret_globs)

    def check_path(self, word: str, reads: bool) -> None:
        """Raises No when `word` (a path operand) may name a secret, a device or a process's
        memory, or needs the disk to tell (a glob that could match a secret name, in a tool that
        reads contents: `reads`)."""
        if not word:
            return
        if word.startswith("~") and not (word == "~" or word.startswith("~/")):
            raise No("a path under another user's home")
        path = word[1:] if word.startswith("~") else word
        if path.startswith("/"):
            clean = "/" + "/".join(c for c in path.split("/") if c and c != ".")
            if clean != "/dev/null" and any(clean == r or clean.startswith(r + "/") for r in self.secret_roots):
                raise No("a path under a system secret or device folder")
            if clean.startswith("/etc/") and self.secret_component(clean.rsplit("/", 1)[-1]):
                raise No("a secret path")
        for component in re.split(r"[/:]", path):
            if not component:
                continue
            if GLOB.search(component):
                if component.startswith(".") and component not in (".", ".."):
                    raise No("a glob that can match hidden files")
                if reads and self.glob_may_match_secret(component):
                    raise No("a glob that could match a secret file")
                continue  # a lister shows names only, and a glob does not match hidden ones
            if self.secret_component(component):
                raise No("a secret path")
            if word.startswith("~") and component.startswith(".") and component not in (".", ".."):
                raise No("a hidden path in the home folder")

    def glob_may_match_secret(self, pattern: str) -> bool:
        try:
            return any(fnmatch.fnmatchcase(p.lower(), pattern.lower()) for p in self.probes)
        except re.error:
            return True


@lru_cache(maxsize=1)
def table() -> Table:
    return Table(json.loads(TABLE_PATH.read_text(encoding="utf-8")))


# -- the command ------------------------------------------------------------------------------

def approve(command: str) -> Approval | None:
    """The approval of `command`, or None (see the module's docstring)."""
    approval, _ = judge(command)
    return approval


def judge(command: str) -> tuple[Approval | None, str]:
    """(the approval or None, why: the rules that approved, or why not)."""
    try:
        rules = _rules(command)
    except No as exc:
        return None, str(exc)
    return Approval(tuple(rules)), "approved by " + ", ".join(dict.fromkeys(rules))


def _rules(command: str) -> list[str]:
    if not command.strip():
        raise No("an empty command")
    if not command.isascii() or not command.isprintable() and any(c not in "\n\t" for c in command if not c.isprintable()):
        raise No("characters beyond printable ASCII")
    if any(s in command for s in SUBSTITUTION):
        raise No("a substitution")
    if "<<" in command:
        raise No("a heredoc or here-string")
    reading = read(command)
    _whole(reading)
    rules = [_part(part) for part in reading.parts]
    _guard_agrees(command)
    return rules


def _whole(reading: Reading) -> None:
    if reading.broken or reading.unread:
        raise No("the shell grammar could not read all of it")
    if reading.unsure:
        raise No("past the reading's bounds")
    if not reading.parts:
        raise No("no command")
    if len(reading.parts) > MAX_PARTS:
        raise No(f"more than {MAX_PARTS} parts")
    if reading.defined or reading.aliases or reading.env_set or reading.assigned:
        raise No("defines a function, alias or variable")


def _part(part: Part) -> str:
    if part.opaque:
        raise No("an opaque part")
    if part.via or part.container:
        raise No("a part run through a wrapper or a shell string")
    if part.findings or part.runs_unread or part.shadowed:
        raise No("a part that runs code it cannot read, or renamed earlier")
    if part.assigns:
        raise No("an assignment prefix")
    if part.stdin is not None:
        raise No("text fed on standard input")
    if part.writes or part.appends:
        raise No("a redirection to a file")
    for redirect in part.redirects.split():
        if redirect not in table().redirects:
            raise No("a redirection to or from a file")
    if any(w is None for w in part.words) or not part.words:
        raise No("a word built at run time")
    words: list[str] = [w for w in part.words if w is not None]
    name = words[0]
    rule = table().by_command.get(name)
    if rule is None:
        raise No("a command the read-only table does not know" if "/" not in name else "a command named by a path")
    special = rule.get("special")
    if special == "git":
        _git(rule, words)
    elif special == "find":
        _find(words)
    elif special == "sed":
        _sed(words)
    elif special == "jq":
        _jq(rule, words)
    elif special == "ps":
        _ps(words)
    else:
        _generic(rule, table().specs[(rule["id"], "")], name, words[1:])
    return str(rule["id"])


def _guard_agrees(command: str) -> None:
    """The guard's own policy rules certify every part harmless (p = 0, no engine): an approval
    never answers a prompt the guard would have asked, and no table row here can widen what
    the reviewed `policy.json` lets through silently."""
    from .structure import ruled

    answer = ruled(command, 0.0)
    if answer is None or answer.get("abstained") or answer.get("p_true") != 0:
        raise No("the guard's policy rules do not certify every part harmless")


# -- options and operands ------------------------------------------------------------------------

def _options(spec: Spec, args: list[str], numeric: bool = False) -> tuple[list[str], list[tuple[str, str]], set[str]]:
    """(operands, (option, value) pairs, options seen) of `args`, or No for an option the spec
    does not list. A lone `-` is an operand (standard input); `--` ends the options."""
    operands: list[str] = []
    values: list[tuple[str, str]] = []
    seen: set[str] = set()
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word == "--":
            operands += args[i:]
            break
        if word.startswith("--"):
            name, eq, attached = word.partition("=")
            kind = spec.long.get(name)
            if kind is None:
                raise No("an option the rule does not list")
            seen.add(name)
            if kind == "":
                if eq:
                    raise No("a value given to an option that takes none")
            elif kind == "=":
                if not eq:
                    if i >= len(args):
                        raise No("an option missing its value")
                    attached = args[i]
                    i += 1
                values.append((name, attached))
            elif eq:
                values.append((name, attached))
            continue
        if word.startswith("-") and len(word) > 1:
            if numeric and word[1:].isdigit():
                continue  # `head -20`
            j = 1
            while j < len(word):
                letter = word[j]
                flag = "-" + letter
                seen.add(flag)
                if letter in spec.short_valued:
                    value = word[j + 1:]
                    if not value:
                        if i >= len(args):
                            raise No("an option missing its value")
                        value = args[i]
                        i += 1
                    values.append((flag, value))
                    break
                if letter in spec.short_optional:
                    values.append((flag, word[j + 1:]))
                    break
                if letter not in spec.short:
                    raise No("an option the rule does not list")
                j += 1
            continue
        operands.append(word)
    return operands, values, seen


def _generic(rule: dict[str, Any], spec: Spec, name: str, args: list[str]) -> None:
    operands, values, seen = _options(spec, args, numeric=bool(rule.get("numeric")))
    kind = rule.get("operands", "paths")
    reads = not rule.get("lists")
    limit = rule.get("max_operands", {}).get(name)
    if limit is not None and len(operands) > limit:
        raise No("more operands than the tool reads")
    _values(spec, values)
    if kind == "text":
        return
    if kind == "pattern-paths" and not (seen & spec.patterns) and operands:
        operands = operands[1:]  # the first operand is the pattern
    if rule.get("cd"):
        if not operands:
            raise No("cd to the home folder")
        target = operands[0]
        if target in ("-", "~") or target.startswith("~/.") or any(
                c.startswith(".") and c not in (".", "..") for c in target.split("/")):
            raise No("cd to the home folder, the previous one or a hidden folder")
    recursive = rule.get("recursive_always") or bool(seen & set(rule.get("recursive", ())))
    if recursive:
        if rule.get("recursive") and not operands:
            raise No("a recursive search of the working directory")
        for operand in operands:
            _inside(operand)
            if rule.get("recursive") and operand.rstrip("/") in ("", ".", "./."):
                raise No("grep -r over the project root, where .env files live")
    for operand in operands:
        if operand != "-":
            table().check_path(operand, reads=reads)


def _values(spec: Spec, values: list[tuple[str, str]]) -> None:
    """An option's value may be a path even where the manual says it is not (one letter taken
    for another): every value but a pattern's is checked for secret names; a path option's
    value also for globs that could match one."""
    for option, value in values:
        if option in spec.paths:
            table().check_path(value, reads=True)
        elif option not in spec.patterns:
            table().check_path(value, reads=False)


def _inside(path: str) -> None:
    """A recursive search stays in the project: a relative path without `..`."""
    if path.startswith(("/", "~")) or ".." in path.split("/"):
        raise No("a recursive search outside the project")


# -- git ------------------------------------------------------------------------------------------

def _git(rule: dict[str, Any], words: list[str]) -> None:
    i = 1
    short, valued, long = set(rule["global_short"]), set(rule["global_short_valued"]), set(rule["global_long"])
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        i += 1
        if word in long:
            if word == "--version" and i == len(words):
                return
            if word == "--version":
                raise No("git --version with more")
            continue
        if len(word) == 2 and word[1] in short:
            continue
        if len(word) >= 2 and word[1] in valued and not word.startswith("--"):
            value = word[2:]
            if not value:
                if i >= len(words):
                    raise No("an option missing its value")
                value = words[i]
                i += 1
            table().check_path(value, reads=True)
            continue
        raise No("a git option the rule does not list")
    if i >= len(words):
        raise No("git with no command")
    subs = rule["sub"]
    two = " ".join(words[i:i + 2])
    if two in subs:
        sub, args = two, words[i + 2:]
    elif words[i] in subs:
        sub, args = words[i], words[i + 1:]
    else:
        raise No("a git command the rule does not list")
    raw = subs[sub]
    spec = table().specs[(rule["id"], sub)]
    operands, values, seen = _options(spec, args)
    _values(spec, values)
    if "max_operands" in raw and len(operands) > raw["max_operands"]:
        raise No("more operands than the git command reads")
    if "list_only" in raw and operands and not seen & set(raw["list_only"]):
        raise No("a branch or tag name without --list (it would create one)")
    if "require_any" in raw and not seen & set(raw["require_any"]):
        raise No("git config without --get or --list (it would set a value)")
    if raw.get("pattern_first") and not seen & spec.patterns and operands:
        operands = operands[1:]
    if sub == "grep":
        for operand in operands:
            _inside(operand)
    for operand in operands:
        table().check_path(operand, reads=True)


# -- find, sed, jq, ps --------------------------------------------------------------------------

FIND_ARITY = {
    "-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1, "-iregex": 1,
    "-lname": 1, "-ilname": 1, "-type": 1, "-xtype": 1, "-maxdepth": 1, "-mindepth": 1, "-mtime": 1, "-mmin": 1,
    "-atime": 1, "-amin": 1, "-ctime": 1, "-cmin": 1, "-size": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1, "-perm": 1,
    "-user": 1, "-group": 1, "-uid": 1, "-gid": 1, "-links": 1, "-inum": 1, "-samefile": 1, "-regextype": 1, "-used": 1,
    "-fstype": 1, "-printf": 1,
    "-empty": 0, "-readable": 0, "-writable": 0, "-executable": 0, "-print": 0, "-print0": 0, "-ls": 0, "-prune": 0,
    "-quit": 0, "-true": 0, "-false": 0, "-not": 0, "!": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, "(": 0, ")": 0, ",": 0,
    "-depth": 0, "-d": 0, "-follow": 0, "-xdev": 0, "-mount": 0, "-nouser": 0, "-nogroup": 0, "-daystart": 0, "-noleaf": 0,
    "-ignore_readdir_race": 0, "-noignore_readdir_race": 0,
}
FIND_PATH_VALUES = ("-newer", "-anewer", "-cnewer", "-samefile")


def _find(words: list[str]) -> None:
    i = 1
    while i < len(words) and words[i] in ("-H", "-L", "-P"):
        i += 1
    while i < len(words) and not words[i].startswith("-") and words[i] not in ("(", "!", ")", ","):
        table().check_path(words[i], reads=False)
        i += 1
    while i < len(words):
        word = words[i]
        arity = FIND_ARITY.get(word)
        if arity is None:
            raise No("a find expression the rule does not list (-exec, -delete, -fprint …)")
        if i + arity >= len(words) + (1 if arity == 0 else 0) and arity:
            raise No("a find test missing its value")
        if word in FIND_PATH_VALUES:
            table().check_path(words[i + 1], reads=False)
        i += 1 + arity


SED_COMMAND = re.compile(r"\s*(?:(?:\d+|\$|/[^/\\\n]*/)(?:\s*,\s*(?:\d+|\$|\+\d+|/[^/\\\n]*/))?)?\s*!?\s*[pq]\s*")


def _sed(words: list[str]) -> None:
    script: list[str] = []
    quiet = False
    operands: list[str] = []
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        if word in ("-n", "--quiet", "--silent"):
            quiet = True
        elif word in ("-E", "-r", "-s", "-u", "-z", "--regexp-extended", "--separate", "--unbuffered", "--posix", "--null-data"):
            pass
        elif word in ("-e", "--expression"):
            if i >= len(words):
                raise No("an option missing its value")
            script.append(words[i])
            i += 1
        elif word.startswith("--expression="):
            script.append(word.partition("=")[2])
        elif re.fullmatch(r"-[nErsuz]+", word):
            quiet = quiet or "n" in word
        elif word.startswith("-") and word != "-":
            raise No("a sed option the rule does not list")
        else:
            operands.append(word)
    if not script:
        if not operands:
            raise No("sed without a script")
        script, operands = [operands[0]], operands[1:]
    if not quiet:
        raise No("sed without -n")
    for text in script:
        for command in text.replace("\n", ";").split(";"):
            if command.strip() and not SED_COMMAND.fullmatch(command):
                raise No("a sed command other than p or q")
    for operand in operands:
        if operand != "-":
            table().check_path(operand, reads=True)


JQ_NEVER = re.compile(r"\benv\b|\$ENV|\bimport\b|\binclude\b|\binput_filename\b|\$__loc__|\bgetpath\b.*\benv|\$__prog")


def _jq(rule: dict[str, Any], words: list[str]) -> None:
    spec = table().specs[(rule["id"], "")]
    args: list[str] = []
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        if word in ("--arg", "--argjson"):  # two values: a name and a value given on the command line
            if i + 2 > len(words):
                raise No("an option missing its value")
            i += 2
            continue
        args.append(word)
    operands, _, _ = _options(spec, args)
    if not operands:
        raise No("jq with no filter")
    program, files = operands[0], operands[1:]
    if JQ_NEVER.search(program):
        raise No("a jq filter reading the environment or loading modules")
    for path in files:
        table().check_path(path, reads=True)


PS_VALUED = {"-o", "-O", "-p", "-u", "-U", "-C", "-G", "-g", "-t", "--sort", "--pid", "--ppid", "-q", "--format", "--user", "--cols", "--columns", "--width", "--lines", "--rows"}


def _ps(words: list[str]) -> None:
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        name = word.partition("=")[0]
        if name in PS_VALUED:
            if "=" not in word:
                if i >= len(words):
                    raise No("an option missing its value")
                i += 1
            continue
        if re.fullmatch(r"-[A-Za-z]+", word) or re.fullmatch(r"[A-Za-df-z]+", word) or word in ("--forest", "--no-headers", "--headers", "--help"):
            continue
        raise No("a ps option the rule does not list")
