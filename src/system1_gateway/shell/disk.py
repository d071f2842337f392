"""What is on disk: the working tree, asked where a rule's verdict depends on it.

`answer(command, cwd)` reads the command as the core does (`structure.plan`), and for the parts
whose loss depends on the working tree looks at the paths they name, in `cwd`:

* `git reset --hard [HEAD]`, `git checkout [HEAD] -- <paths>`, `git checkout .`, `git restore
  <paths>` lose nothing when git sees no uncommitted change (staged or not) in what they reset;
  `git stash drop|clear` when there is no stash entry (and no uncommitted change: a drop there
  usually follows a stash of it); `git clean` when nothing it would delete is there (untracked,
  and ignored with `-x`/`-X`);
* `rm -r` of a build, cache or dependency directory (`REGENERATED`: node_modules, build, dist,
  target, .venv, __pycache__, …) that git ignores as a whole, holding no tracked file and not a
  repository itself (or that does not exist);
* a redirection (`> f`, `: > f`, `echo hi > f`), `truncate`, `cp /dev/null f` over a file that
  does not exist (it is created) or is empty.

Each such part gets a verdict of its own (`lossless`, `loses`, or unknown: its text verdict
stands), and the reason says what was looked at ("src/app.py has uncommitted changes",
"build/ is ignored by git and rebuilt"). The command's answer is returned only when the rules
and the disk decide every part (no engine part); otherwise None: the text-only verdict stands.

Sound by construction, never more lenient than the text where it cannot be sure:

* state relaxes a part only when no other part of the command can change it: every other part
  is a plain reader (`ls`, `cat`, `echo`, `git status`, …) certified by its rule, with no
  redirection; `cd x && rm -rf build`, `git add -A && git reset --hard`, `touch x; > x` are
  not relaxed;
* only paths written as plain relative words (no `..`, glob, variable, quote trick, `~`, option),
  inside `cwd`, with no symbolic link on the way (the path resolves to itself), no mount point;
  catastrophic targets (home, root, system paths, devices, remotes) never are such words; a part
  reached through a wrapper (`sudo`, `ssh`, `xargs`, `find -exec`, `bash -c`), or run with an
  assignment that can change what runs (`GIT_DIR=…`), or after a redefinition, is not relaxed;
* `cwd` is hostile input too: absolute, an existing directory, not `/`, home or a system path;
  nothing is relaxed when the hook's own environment points git elsewhere (`GIT_DIR`, …);
* bounded: git only for the paths named (`status --porcelain -- <paths>`, `ls-files -- <paths>`),
  never a walk of ignored trees (`--ignored=matching` stops at an ignored directory), all calls
  in parallel within `BUDGET_S`; past it they are killed and the text verdict stands;
* nothing is written: `--no-optional-locks` and `GIT_OPTIONAL_LOCKS=0` (no index refresh
  written), `core.fsmonitor=false` (no monitor hook run), stdin closed.

Only the hook reads the disk (the user's own machine, the hook input's `cwd`); the daemon and a
team server never do: they answer the text (docs/guard.md, "What is on disk").
"""

from __future__ import annotations

import os
import re
import stat
import time

TYPE_CHECKING = False  # no `typing` on the short-lived path (docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

    from .read import Part
    from .structure import Judged

BUDGET_S = 0.15  # all git calls of one command, in parallel; past it the text verdict stands
MAX_QUERIES = 8  # distinct git calls per command
MAX_SHOWN = 3  # paths named in a reason

# Directories a build, a package manager or a tool makes again from what is committed: deleting
# one loses nothing when git ignores it as a whole. An allow-list: an ignored `.env`, a local
# database (`*.db`, `*.sqlite`), `.idea`, `.terraform` (local state) or `vendor` (often the only
# copy) are not in it, whatever git says.
REGENERATED = frozenset({
    "node_modules", "bower_components", ".pnpm-store", ".yarn-cache", ".next", ".nuxt", ".svelte-kit", ".angular",
    ".parcel-cache", ".turbo", ".vite", ".nyc_output", "coverage", "htmlcov",
    "build", "dist", "target", "_build", ".build", "out-tsc", "elm-stuff", ".stack-work", ".dart_tool",
    ".gradle", ".cxx", ".venv", "venv", ".tox", ".nox", ".eggs", "__pycache__", ".pytest_cache", ".mypy_cache",
    ".ruff_cache", ".hypothesis", ".ipynb_checkpoints", ".sass-cache", ".docusaurus", ".expo",
})

# The cheap look before anything is read: a word of a command whose loss can depend on the disk.
_MIGHT = re.compile(r"(^|[\s;&|(`])truncate(\s|$)|\bcp\s+/dev/null\b"
                    r"|\bgit\s[^;&|]*\b(reset|checkout|restore|stash|clean)\b"
                    r"|(?<!>)>(?![>&])\|?\s*(?!/dev/(null|stdout|stderr)(\s|$))[^\s]")
# A path as written that names itself: no quote, glob, expansion, brace, tilde or backslash.
_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=,.][A-Za-z0-9_@%+=,./-]*$")
# Plain readers: parts that may stand beside a relaxed one (they change nothing on disk), when
# their rule certifies them and they redirect nothing.
NEUTRAL = frozenset({
    "ls", "ll", "la", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "stat", "file", "which", "type",
    "du", "df", "pwd", "echo", "printf", "true", "false", ":", "test", "[", "sleep", "date", "whoami", "id",
    "uname", "basename", "dirname", "realpath", "diff", "cmp", "tree",
})
NEUTRAL_GIT = frozenset({"status", "diff", "log", "show", "rev-parse", "ls-files", "branch"})
# The hook's environment pointing git at another repository than the command's cwd would use.
_GIT_ELSEWHERE = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                  "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")
_SYSTEM = re.compile(r"^/(etc|boot|usr|bin|sbin|lib|lib32|lib64|opt|var|dev|proc|sys|run|System|Library|private|root)"
                     r"(/|$)")
_GIT = ("--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


_RM = re.compile(r"(^|[\s;&|(`])rm\s")
_REGENERATED_WORD = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in sorted(REGENERATED)) + r")(?![\w.-])")


def might_depend(command: str) -> bool:
    """Could any part of `command` be one whose loss depends on the disk? (No parse: regexes.)"""
    return bool(_MIGHT.search(command) or (_RM.search(command) and _REGENERATED_WORD.search(command)))


def usable_cwd(cwd: Any) -> str | None:
    """The hook input's cwd, resolved, when it may be looked at: an absolute path to an existing
    directory that is not `/`, the home directory or a system path."""
    if not isinstance(cwd, str) or not cwd.startswith("/") or "\x00" in cwd or len(cwd) > 4096:
        return None
    try:
        real = os.path.realpath(cwd)
        if not stat.S_ISDIR(os.stat(real).st_mode):
            return None
        home = os.path.realpath(os.path.expanduser("~"))
    except (OSError, ValueError):
        return None
    if real == "/" or real == home or _SYSTEM.match(real):
        return None
    return real


class Outcome:
    """What the disk says of one part: it loses nothing (`lossless`), it loses `why`, or None."""

    def __init__(self, lossless: bool, why: str, rule: str = "disk"):
        self.lossless, self.why, self.rule = lossless, why, rule


class _Check:
    """A part whose loss depends on the disk: the git calls it needs, then its outcome."""

    def __init__(self, judged: Judged, queries: list[tuple[str, ...]], settle):
        self.judged, self.queries, self.settle = judged, queries, settle


# -- the entry point ------------------------------------------------------------------------

def answer(command: str, cwd: Any, budget_s: float = BUDGET_S) -> dict[str, Any] | None:
    """The answer to the `destructive` built-in for `command` run in `cwd`, with what is on disk,
    when the rules and the disk decide every part; None when they do not (the text verdict
    stands). Never raises for any input."""
    if not might_depend(command) or not command.isascii():
        return None
    stripped = command.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        return None  # it may be a tool call in JSON, which the core reads another way (structure.ruled)
    root = usable_cwd(cwd)
    if root is None or any(os.environ.get(name) for name in _GIT_ELSEWHERE):
        return None
    from . import structure

    plan = structure.plan(command)
    reading = plan.reading
    if reading.unsure or reading.broken or reading.defined or reading.aliases or reading.env_set:
        return None
    checks: list[_Check] = []
    for judged in plan.parts:
        if judged.part is None or judged.unsure is not None:
            return None
        check = _check(judged, root)
        if check is not None:
            checks.append(check)
        elif not _neutral(judged) and not _certain(judged):
            return None  # it may change the disk, or the engine must judge it: the text decides
    if not checks:
        return None
    # Beside the checked parts stand only plain readers and parts a rule finds destructive
    # whatever the disk holds (then so is the answer: the checks only say more in the reason).
    results = _run_git(root, [q for c in checks for q in c.queries], budget_s)
    relaxed: list[tuple[Judged, Outcome]] = []
    for check in checks:
        try:
            outcome = check.settle(results)
        except (OSError, ValueError):
            outcome = None
        judged = check.judged
        if outcome is None or not outcome.lossless:
            if judged.verdict is None or not judged.verdict.destructive:
                return None  # the engine's part, or not decided: the text verdict stands
            if outcome is not None:
                verdict = judged.verdict
                judged.verdict = type(verdict)(True, verdict.rule, f"{verdict.why}; {outcome.why}")
            continue
        judged.verdict = _verdict(False, outcome.rule, outcome.why)
        judged.p, judged.model = 0.0, f"rule:{outcome.rule}"
        relaxed.append((judged, outcome))
    if any(j.p is None for j in plan.parts):
        return None
    out = structure.combine(plan, 0.0)
    if out["p_true"] < 0.5 and relaxed:  # say what was looked at: the first relaxed part
        shown, outcome = relaxed[0]
        why = f"rule {outcome.rule}: {outcome.why}"
        count = len(plan.parts)
        text = structure.shorten(shown.text, structure.MAX_SHOWN)
        out["rationale"] = f"part {shown.index} of {count}: {text}: {why}"[:2000]
        out["model"] = shown.model
        out["part"] = {"index": shown.index, "of": count, "text": text, "rule": outcome.rule,
                       "destructive": False, "why": structure.shorten(why, 300)}
    return out


def _verdict(destructive: bool, rule: str, why: str):
    from .policy import Verdict

    return Verdict(destructive, rule, why)


def _certain(judged: Judged) -> bool:
    return judged.verdict is not None and bool(judged.verdict.destructive)


def _plain_part(part: Part) -> bool:
    """Reached directly (no wrapper, shell string or `find -exec`), with no assignment that can
    change what runs, no redefinition, no inline code."""
    from .read import harmless_assignment

    return (not part.via and part.shadowed is None and not part.container and not part.findings
            and part.opaque is None and all(harmless_assignment(a) for a in part.assigns))


def _neutral(judged: Judged) -> bool:
    """A plain reader its rule certifies, redirecting nothing: it changes nothing on disk."""
    part = judged.part
    if part is None or judged.verdict is None or judged.verdict.destructive is not False:
        return False
    if part.writes or part.appends or not _plain_part(part):
        return False
    base = (part.name or "").rsplit("/", 1)[-1]
    if base == "git":
        return len(part.words) > 1 and part.words[1] in NEUTRAL_GIT
    return base in NEUTRAL


# -- which parts depend on the disk, and what each looks at -----------------------------------

def _check(judged: Judged, root: str) -> _Check | None:
    part = judged.part
    if part is None or not _plain_part(part) or any(w is None for w in part.words):
        return None
    if judged.verdict is not None and judged.verdict.destructive is False:
        return None  # already harmless by its rule
    words: list[str] = [w for w in part.words if w is not None]
    texts = part.texts
    base = words[0].rsplit("/", 1)[-1] if words else ""
    if part.writes:
        return _redirect(judged, part, root)
    if base == "rm" and words[0] == "rm":
        return _rm(judged, words, texts, root)
    if base == "truncate" and words[0] == "truncate":
        return _truncate(judged, words, texts, root)
    if words[:2] == ["cp", "/dev/null"] and len(words) == 3:
        return _files(judged, [(words[2], texts[2])], root)
    if words and words[0] == "git" and len(words) > 1:
        return _git(judged, words[1], words[2:], texts[2:], root)
    return None


def _path(word: str, text: str, root: str, dot: bool = False) -> str | None:
    """The word as a path under `root` (normalised, relative), when it is written plainly
    (quotes around a plain word are fine), names nothing outside `root` and no symbolic link
    lies on the way; else None. `dot`: `.` (all of `root`) may be named (a git pathspec)."""
    if not _PLAIN.match(word) or text not in (word, f"'{word}'", f'"{word}"'):
        return None
    if any(c == ".." for c in word.split("/")):
        return None
    rel = os.path.normpath(word)
    if rel == ".":
        return "." if dot else None
    full = os.path.join(root, rel)
    if os.path.realpath(full) != full:  # a link on the way (or the path itself is one)
        return None
    return rel


# redirections: `> f`, `: > f`, `echo hi > f`, `cat a > f`

def _redirect(judged: Judged, part: Part, root: str) -> _Check | None:
    from dataclasses import replace

    from .policy import decide

    targets = part.writes
    if any(t is None for t in targets):
        return None
    bare = replace(part, writes=[], redirects="")
    if bare.words:
        verdict = decide(bare)
        if verdict.destructive is not False:
            return None  # what it runs is not certainly harmless: the text decides
    return _files(judged, [(t, t) for t in targets if t is not None], root, redirect=True)


def _files(judged: Judged, named: list[tuple[str, str]], root: str, redirect: bool = False) -> _Check | None:
    """Each file is created (it does not exist) or was empty: nothing is lost."""
    paths = []
    for word, text in named:
        rel = _path(word, text, root)
        if rel is None:
            return None
        paths.append(rel)

    def settle(_results) -> Outcome | None:
        said = []
        for rel in paths:
            full = os.path.join(root, rel)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                parent = os.path.dirname(full)
                if not os.path.isdir(parent) or os.path.realpath(parent) != parent:
                    return None
                said.append(f"{rel} does not exist: it is created")
                continue
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size:
                return Outcome(False, f"{rel} exists ({st.st_size} bytes)")
            said.append(f"{rel} is empty")
        return Outcome(True, "; ".join(said[:MAX_SHOWN]), "disk-new-file")

    return _Check(judged, [], settle)


# truncate [-c] [-o] [-s SIZE] [-r RFILE] FILE…

_TRUNCATE_VALUES = frozenset({"-s", "--size", "-r", "--reference"})
_TRUNCATE_FLAGS = re.compile(r"^-[co]+$|^--(no-create|io-blocks)$|^--(size|reference)=.+$|^-s.+$")


def _truncate(judged: Judged, words: list[str], texts: list[str], root: str) -> _Check | None:
    named: list[tuple[str, str]] = []
    i, options = 1, True
    while i < len(words):
        w = words[i]
        if options and w == "--":
            options = False
        elif options and w in _TRUNCATE_VALUES:
            i += 1
        elif options and w.startswith("-"):
            if not _TRUNCATE_FLAGS.match(w):
                return None
        else:
            named.append((w, texts[i]))
        i += 1
    return _files(judged, named, root) if named else None


# rm -r of a regenerated directory, an empty one, or a name that does not exist

_RM_FLAGS = re.compile(r"^-[rRfvdI]+$|^--(recursive|force|verbose|dir|one-file-system|preserve-root)$")


def _rm(judged: Judged, words: list[str], texts: list[str], root: str) -> _Check | None:
    recursive, named, options = False, [], True
    for w, t in zip(words[1:], texts[1:], strict=True):
        if options and w == "--":
            options = False
        elif options and w.startswith("-") and w != "-":
            if not _RM_FLAGS.match(w):
                return None
            recursive = recursive or w == "--recursive" or (not w.startswith("--") and bool(set(w) & set("rR")))
        else:
            rel = _path(w, t, root)
            if rel is None:
                return None
            named.append(rel)
    if not named:
        return None
    look = []  # the directories that need git
    for rel in named:
        full = os.path.join(root, rel)
        if os.path.basename(rel) not in REGENERATED:
            return None
        if not os.path.lexists(full):
            continue
        if not recursive or not os.path.isdir(full) or os.path.ismount(full) \
                or os.path.lexists(os.path.join(full, ".git")):
            return None
        look.append(rel)
    tracked = ("ls-files", "-z", "-c", "--", *look)
    ignored = ("ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory", "--", *look)

    def settle(results) -> Outcome | None:
        said = []
        for rel in named:
            if rel not in look:
                said.append(f"nothing named {rel} exists")
        if look:
            held, whole = results.get(tracked), results.get(ignored)
            if held is None or whole is None:
                return None
            if held:
                return Outcome(False, f"{_names(held)} under it {'is' if len(held) == 1 else 'are'} tracked by git")
            if sorted(whole) != sorted(f"{rel}/" for rel in look):
                missing = [rel for rel in look if f"{rel}/" not in whole]
                return Outcome(False, f"{_names([m + '/' for m in missing] or look)} "
                                      f"{'is' if len(missing) == 1 else 'are'} not ignored by git as a whole")
            said.append(", ".join(f"{rel}/" for rel in look[:MAX_SHOWN])
                        + (" is" if len(look) == 1 else " are") + " ignored by git and rebuilt")
        return Outcome(True, "; ".join(said[:MAX_SHOWN]), "disk-regenerated")

    return _Check(judged, [tracked, ignored] if look else [], settle)


# git reset --hard, checkout -- <paths>, restore <paths>, stash drop|clear, clean

_CLEAN_FLAGS = re.compile(r"^-[fdxXq]+$|^--(force|quiet)$")
_RESTORE_FLAGS = re.compile(r"^-[SWq]+$|^--(staged|worktree|quiet)$")


def _git(judged: Judged, sub: str, args: list[str], texts: list[str], root: str) -> _Check | None:
    if sub == "reset":
        if "--hard" in args and all(a in ("--hard", "-q", "--quiet", "HEAD") for a in args):
            return _unchanged(judged, None, root)
        return None
    if sub == "checkout":
        if args == ["."]:
            return _unchanged(judged, ["."], root)
        if "--" not in args:
            return None
        at = args.index("--")
        if not all(a in ("-q", "--quiet", "HEAD") for a in args[:at]):
            return None
        paths = _paths(args[at + 1:], texts[at + 1:], root)
        return _unchanged(judged, paths, root) if paths else None
    if sub == "restore":
        at = args.index("--") if "--" in args else len(args)
        if not all(_RESTORE_FLAGS.match(a) for a in args[:at] if a.startswith("-")):
            return None
        given = [(a, t) for a, t in zip(args[:at], texts[:at], strict=True) if not a.startswith("-")]
        given += list(zip(args[at + 1:], texts[at + 1:], strict=True))
        paths = _paths([a for a, _ in given], [t for _, t in given], root)
        return _unchanged(judged, paths, root) if paths else None
    if sub == "stash":
        if args and args[0] in ("drop", "clear") and all(a in ("-q", "--quiet") for a in args[1:]):
            return _no_stash(judged, root)
        return None
    if sub == "clean":
        at = args.index("--") if "--" in args else len(args)
        flags = args[:at]
        if not all(_CLEAN_FLAGS.match(a) for a in flags):
            return None
        paths = _paths(args[at + 1:], texts[at + 1:], root) if at < len(args) else []
        if paths is None or (at < len(args) and not paths):
            return None
        letters = "".join(a for a in flags if not a.startswith("--"))
        return _nothing_to_clean(judged, paths, "x" in letters, "X" in letters)
    return None


def _paths(args: list[str], texts: list[str], root: str) -> list[str] | None:
    out = []
    for a, t in zip(args, texts, strict=True):
        rel = _path(a, t, root, dot=True)
        if rel is None:
            return None
        out.append(rel)
    return out or None


def _status(paths: list[str] | None, untracked: str = "no", ignored: bool = False) -> tuple[str, ...]:
    return ("status", "--porcelain=v1", "-z", "--no-renames", "--ignore-submodules=none", f"--untracked-files={untracked}",
            *(("--ignored=matching",) if ignored else ()), "--", *(paths or (":(top)",)))


def _flags(paths: list[str] | None) -> tuple[str, ...]:
    return ("ls-files", "-z", "-v", "--", *(paths or (":(top)",)))


def _changes(results, paths: list[str] | None) -> Outcome | None:
    """None: git could not tell (or a file is marked assume-unchanged or skip-worktree, which
    git status does not look at); else whether anything in `paths` has uncommitted changes."""
    status, flags = results.get(_status(paths)), results.get(_flags(paths))
    if status is None or flags is None:
        return None
    if any(not entry.startswith("H ") for entry in flags):
        return None
    changed = [entry[3:] for entry in status if entry[:2] not in ("??", "!!")]
    if changed:
        return Outcome(False, f"{_names(changed)} {'has' if len(changed) == 1 else 'have'} uncommitted changes")
    if paths is None:
        return Outcome(True, "the working tree has no uncommitted changes", "disk-clean")
    if paths == ["."]:
        return Outcome(True, "no file here has uncommitted changes", "disk-clean")
    return Outcome(True, f"{_names(paths)} {'has' if len(paths) == 1 else 'have'} no uncommitted changes", "disk-clean")


def _unchanged(judged: Judged, paths: list[str] | None, root: str) -> _Check:
    return _Check(judged, [_status(paths), _flags(paths)], lambda results: _changes(results, paths))


_STASH = ("rev-parse", "-q", "--verify", "refs/stash")


def _no_stash(judged: Judged, root: str) -> _Check:
    def settle(results) -> Outcome | None:
        stash = results.get(_STASH)
        if stash is None:
            return None
        if stash:
            return Outcome(False, "the stash has entries (git stash list)")
        tree = _changes(results, None)
        if tree is None or not tree.lossless:
            return tree
        return Outcome(True, "there is no stash entry (and no uncommitted change)", "disk-clean")

    return _Check(judged, [_STASH, _status(None), _flags(None)], settle)


def _nothing_to_clean(judged: Judged, paths: list[str], untracked_too: bool, ignored_only: bool) -> _Check:
    query = _status(paths or ["."], untracked="normal", ignored=untracked_too or ignored_only)
    kinds = ("!!",) if ignored_only and not untracked_too else ("??", "!!") if untracked_too else ("??",)

    def settle(results) -> Outcome | None:
        status = results.get(query)
        if status is None:
            return None
        gone = [entry[3:] for entry in status if entry[:2] in kinds]
        if gone:
            what = "ignored" if kinds == ("!!",) else "untracked or ignored" if len(kinds) > 1 else "untracked"
            return Outcome(False, f"{_names(gone)} would be deleted ({what})")
        return Outcome(True, "nothing it would delete is there", "disk-clean")

    return _Check(judged, [query], settle)


def _names(paths: list[str]) -> str:
    from .read import shorten

    shown = ", ".join(shorten(p, 80) for p in paths[:MAX_SHOWN])
    return shown + (f" and {len(paths) - MAX_SHOWN} more" if len(paths) > MAX_SHOWN else "")


# -- git, bounded -------------------------------------------------------------------------------

def _run_git(root: str, queries: list[tuple[str, ...]], budget_s: float) -> dict[tuple[str, ...], list[str] | None]:
    """Each query's output entries (split on NUL; a `rev-parse --verify` query: [] when it
    found nothing), or None when git failed or the budget ran out. In parallel, in `root`."""
    import shutil
    import subprocess

    unique = list(dict.fromkeys(queries))
    results: dict[tuple[str, ...], list[str] | None] = {q: None for q in unique}
    git = shutil.which("git")
    if not unique or git is None or len(unique) > MAX_QUERIES:
        return results
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    deadline = time.perf_counter() + budget_s
    running = []
    try:
        for query in unique:
            running.append((query, subprocess.Popen([git, *_GIT, *query], cwd=root, env=env, stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)))
        for query, proc in running:
            left = deadline - time.perf_counter()
            if left <= 0:
                break  # past the budget: what has not been read stays unknown
            try:
                out, _ = proc.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                break
            if query == _STASH:
                results[query] = ["stash"] if proc.returncode == 0 else [] if proc.returncode == 1 else None
            elif proc.returncode == 0:
                results[query] = [e for e in out.decode("utf-8", "surrogateescape").split("\0") if e]
    except (OSError, subprocess.SubprocessError):
        for query in unique:
            results[query] = None
    finally:
        for _, proc in running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results
