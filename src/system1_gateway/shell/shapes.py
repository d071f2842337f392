"""Which argument shapes of a command a "safe" rule may certify.

A rule that says "safe" answers p = 0 with no engine: it must be right about every command it
matches, not only about the command's name. `doubt(rule_id, part)` says why a part a safe rule
matched is *not* certainly harmless (None: it is). The part then goes to the engine, which sees
the part as written (with the assignments that can change what runs). What is doubted:

* an assignment that can change what runs (`LD_PRELOAD=…`, `GIT_EXTERNAL_DIFF=…`, `PATH=…`; any
  name outside read.HARMLESS_ENV), and a name or the environment changed earlier in the same
  command (a function, `hash -p`, `export PAGER=…`: `Part.shadowed`);
* a word built at run time where an option could stand (`git diff "$x"`), except for the plain
  readers (no option of theirs runs a command or writes a file);
* an option, from the tools' own documentation, that runs a command or writes a file: git's
  `-c`, `--config-env`, `--exec-path=`, `--output`, `--upload-pack`; sed's `e`/`w`/`W` commands,
  `s///e` and `s///w`, `-f`; `rg --pre`; `man -P`; `less +!…`; `ssh -o ProxyCommand`; …, and
  any abbreviation of it (GNU getopt, git and Python's argparse accept unique prefixes);
* a second operand of `uniq` or `xxd` (their output file);
* a shape the check does not know (a sed script it cannot read, an unknown sed option).

The lists are written from the tools' manuals (git 2.39+, GNU sed/coreutils, ripgrep 14,
man-db, less 6xx, OpenSSH); they are meant to be sound, not to pass examples.
"""

from __future__ import annotations

import re
from typing import Callable

from .read import Part, harmless_assignment

# Readers none of whose options runs a command or writes a file: a word built at run time
# (`cat "$f"`) cannot turn them into anything else.
PLAIN = frozenset({
    "ls", "ll", "la", "dir", "vdir", "exa", "eza", "lsd", "cat", "head", "tail", "grep", "egrep", "fgrep", "zgrep",
    "which", "whereis", "type", "stat", "wc", "du", "df", "free", "uptime", "whoami", "id", "groups", "uname", "arch",
    "nproc", "lscpu", "lsblk", "lsusb", "lspci", "lsof", "cal", "pwd", "cd", "pushd", "popd", "dirs", "echo", "true",
    "false", ":", "test", "[", "sleep", "wait", "printenv", "ps", "pgrep", "pidof", "jobs", "diff", "colordiff", "cmp",
    "comm", "cut", "tr", "column", "paste", "join", "fold", "fmt", "nl", "rev", "tac", "jq", "od", "hexdump", "strings",
    "md5sum", "sha1sum", "sha256sum", "sha512sum", "shasum", "cksum", "b2sum", "base64", "basename", "dirname",
    "realpath", "readlink", "seq", "expr", "clear", "netstat", "ping", "dig", "nslookup", "host", "traceroute",
    "whois", "tput", "locale", "getconf", "getent", "nm", "objdump", "readelf", "tty", "who", "w", "last", "vmstat",
    "iostat", "mpstat", "lsmod", "ulimit", "umask", "shift", "return", "exit", "break", "continue", "mkdir",
    "mktemp", "lsattr", "getfacl", "numfmt", "factor", "diffstat", "tokei", "help", "printf",
})
# Cloud CLIs whose danger is in the command path (a literal verb), not in an option's value: a
# quoted value built at run time after an option (`--instance-ids "$id"`) changes no verb.
VALUES_AT_RUN_TIME = frozenset({"aws", "gcloud", "az"})

# Long options (without `--`) that run a command or write a file, per command. A unique prefix
# of one (`--outp`, `--forc`) is doubted as well; so are the long flags of the destructive
# rules for the same command (policy.py adds them).
LONG: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {
    "git": "output upload-pack receive-pack exec template open-files-in-pager config config-env exec-path "
           "separate-git-dir force-create output-directory",
    "rg": "pre hostname-bin",
    "ugrep": "filter pager view save-config config",
    "ag": "pager",
    "ack": "pager output ackrc",
    "less": "log-file LOG-FILE lesskey-file lesskey-src lesskey-content",
    "more": "", "most": "",
    "man": "pager html config-file browser",
    "info": "output dribble",
    "tree": "output",
    "bat": "pager", "batcat": "pager",
    "sort": "compress-program output",
    "file": "compile",
    "ss": "kill diag",
    "awk": "file exec load include profile dump-variables pretty-print source",
    "gawk": "file exec load include profile dump-variables pretty-print source",
    "code": "install-extension uninstall-extension",
    "actionlint": "shellcheck pyflakes",
    "cloc": "report-file out sql sql-append write-lang-def write-lang-def-incl-dup ignored counted found "
            "categorized extract-with unique",
    "scc": "output",
    "pytest": "basetemp junitxml junit-xml junit-prefix result-log resultlog report-log log-file debug override-ini "
              "config-file rootdir cov-report html force-regen inline-snapshot",
    "tox": "devenv workdir installpkg recreate",
    "nox": "report envdir",
    "mypy": "junit-xml html-report txt-report xml-report linecount-report any-exprs-report cobertura-xml-report "
            "lineprecision-report linecoverage-report install-types",
    "pyright": "createstub writebaseline",
    "flake8": "output-file tee",
    "pylint": "init-hook load-plugins output rcfile",
    "jest": "outputFile clearCache clear-cache json", "vitest": "outputFile", "mocha": "reporter-option reporter-options",
    "journalctl": "setup-keys update-catalog rotate flush sync relinquish-var smart-relinquish-var",
    "apt-cache": "option config-file",
    "sudo": "edit",
    "xargs": "", "ln": "backup",
    "rsync": "rsh rsync-path write-batch only-write-batch read-batch log-file remote-option config daemon",
    "docker": "output iidfile metadata-file volume mount volumes-from privileged device cap-add pid ipc userns "
              "security-opt entrypoint network uts cgroupns",
    "kubectl": "helm-command enable-exec enable-alpha-plugins enable-helm output", "oc": "",
    "helm": "post-renderer post-renderer-args output-dir",
    "terraform": "", "netlify": "prod-if-unlocked prod production", "vercel": "prod target prebuilt",
    "rclone": "password-command config log-file",
    "gh": "force", "brew": "force",
    "fish": "init-command",
    "bash": "rcfile init-file", "sh": "rcfile init-file",
    "nix-shell": "expr",
    "npx": "package",
    "su": "shell", "runuser": "shell",
    "fd": "exec exec-batch", "fdfind": "exec exec-batch",
}.items()}
for _alias, _same in (("podman", "docker"), ("nerdctl", "docker"), ("docker-compose", "docker"), ("gsed", "sed"),
                      ("tofu", "terraform"), ("terragrunt", "terraform"), ("glab", "gh")):
    LONG[_alias] = LONG.get(_same, frozenset())

# Short options that run a command or write a file (a letter anywhere in a cluster counts).
SHORT: dict[str, str] = {
    "less": "oOk", "man": "PHCX", "tree": "o", "info": "o", "file": "C", "ss": "KD", "sort": "o",
    "awk": "fEli", "gawk": "fEliopd", "pytest": "oc", "sudo": "e", "apt-cache": "oc", "rsync": "e",
    "scc": "o", "fish": "C", "nix-shell": "E", "npx": "p", "su": "s", "runuser": "s", "ln": "b",
}
# Tools that also take long options after one dash (Getopt::Long, Go's flag): `-out=f` is `--out=f`.
ONE_DASH_LONG = frozenset({"cloc", "ack", "actionlint", "terraform", "tofu", "terragrunt"})

GIT_GLOBAL_VALUES = frozenset({"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"})


def doubt(rule_id: str, part: Part, abbreviated: frozenset[str] = frozenset()) -> str | None:
    """Why `part`, matched by the safe rule `rule_id`, is not certainly harmless (None: it is).
    `abbreviated`: more long options (no `--`) whose abbreviations are doubted for this command
    (the flags the rules for it decide on: `--forc` is not `--force` to a rule, but is to git)."""
    for assignment in part.assigns:
        if not harmless_assignment(assignment):
            return f"it runs with `{assignment[:60]}`, which can change what runs"
    if part.shadowed:
        return part.shadowed
    if part.runs_unread:
        return part.runs_unread
    words = part.words
    name = words[0] or ""
    base = name.rsplit("/", 1)[-1]
    if rule_id == "help":
        return _help(base, words)
    if base not in PLAIN:
        previous = ""
        for w, text in zip(words[1:], part.texts[1:], strict=True):
            if w is None and not _fixed_start(text) and not (
                    base in VALUES_AT_RUN_TIME and previous.startswith("--") and "=" not in previous
                    and text.startswith('"') and text.endswith('"')):
                return f"`{text[:40]}` is built at run time and could be any option of `{base}`"
            previous = w or ""
    danger = LONG.get(base, frozenset())
    prefixes = danger | abbreviated
    short = SHORT.get(base, "")
    for w in words[1:]:
        if w is None:
            continue
        if w == "--":
            break
        option = None
        if w.startswith("--") and len(w) > 2:
            option = w[2:].split("=", 1)[0]
        elif base in ONE_DASH_LONG and w.startswith("-") and len(w) > 2 and not w.startswith("--"):
            option = w[1:].split("=", 1)[0]
        if option is not None and not option.startswith("no-"):
            if option in danger:
                return f"`--{option}` of `{base}` runs a command or writes a file"
            if len(option) >= 2 and option not in prefixes and any(d.startswith(option) for d in prefixes):
                return f"`{w[:40]}` may abbreviate an option of `{base}` that runs a command or writes a file"
        if short and w.startswith("-") and not w.startswith("--") and len(w) > 1:
            letters = w[1:]
            if any(c in short for c in letters):
                return f"`{w[:40]}` of `{base}` runs a command or writes a file"
    check = RULE_CHECKS.get(rule_id) or CHECKS.get(base)
    return check(words) if check is not None else None


def _fixed_start(text: str) -> bool:
    """A word built at run time that still cannot be an option: it starts with fixed text
    other than `-` (`src/$f`, `"v$version"`)."""
    t = text.lstrip("\"'")
    return bool(t) and t[0] not in "-$`\\{*?[~+" and not t.startswith("$")


def _plain(words: list[str | None], values: frozenset[str] = frozenset()) -> list[str]:
    """The operands: words that are not options nor an option's value (`values`: options that
    take the next word), up to and after `--`."""
    out: list[str] = []
    i, ended = 1, False
    while i < len(words):
        w = words[i]
        i += 1
        if w is None:
            out.append("")
            continue
        if not ended and w == "--":
            ended = True
            continue
        if not ended and w.startswith("-") and w != "-":
            if w in values:
                i += 1
            continue
        out.append(w)
    return out


# -- help --------------------------------------------------------------------------------
# Commands whose subcommands are parsed by a framework that prints help for `--help` wherever
# it stands (git's parse-options, cobra, click/argparse, clap, npm): `docker rm web --help`.
SUBCOMMAND_TOOLS = frozenset({
    "git", "docker", "podman", "nerdctl", "kubectl", "oc", "helm", "npm", "pnpm", "yarn", "cargo", "go", "pip", "pip3",
    "uv", "poetry", "gh", "glab", "terraform", "tofu", "pulumi", "systemctl", "apt", "apt-get", "dnf", "brew", "conda",
    "aws", "gcloud", "az", "heroku", "fly", "flyctl", "vercel", "netlify", "firebase", "doctl", "wrangler", "supabase",
})
# cmd.exe commands, where `/?` alone is help; bash passes `/?` on (or expands it as a glob) for
# every other command, so `rm -rf ~ /?` removes the home directory.
WINDOWS_HELP = frozenset({"del", "erase", "copy", "xcopy", "robocopy", "move", "ren", "rd", "md", "attrib", "format",
                          "diskpart", "icacls", "takeown", "cacls", "sc", "reg", "schtasks", "tasklist", "taskkill",
                          "ipconfig", "netsh", "where", "findstr", "cmd", "dir", "type", "cls"})
_SUBCOMMAND_WORD = re.compile(r"^[a-z][a-z0-9-]*$")
_BARE_FLAG = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]*$")


def _help(base: str, words: list[str | None]) -> str | None:
    args = words[1:]
    if "/?" in args:
        if base.lower().removesuffix(".exe") in WINDOWS_HELP and args == ["/?"]:
            return None
        return "bash passes `/?` on to the command (or expands it as a glob): it is not a help option there"
    if "--help" not in args or "--" in args[:args.index("--help")]:
        return "`--help` comes after `--`: it is an operand"
    plain: list[str] = []
    for w in args:
        if w == "--help":
            continue
        if w is None:
            return "a word built at run time stands beside `--help`"
        if w.startswith("-"):
            if not _BARE_FLAG.match(w) or w == "--":
                return f"`{w[:40]}` stands beside `--help`: the command may act on it"
            continue
        plain.append(w)
    if not plain:
        return None
    if base in SUBCOMMAND_TOOLS and len(plain) <= 2 and all(_SUBCOMMAND_WORD.match(w) for w in plain):
        return None
    return f"operands beside `--help` (`{' '.join(plain)[:40]}`): not every `{base}` stops at `--help`"


# -- per-command checks ---------------------------------------------------------------------
def _git(words: list[str | None]) -> str | None:
    args = words[1:]
    i = 0
    while i < len(args):
        w = args[i] or ""
        if not w.startswith("-") or w == "--":
            break
        if w == "-c" or w.startswith("-c") and len(w) > 2:
            return "`git -c` sets configuration that can run commands (core.fsmonitor, core.pager, protocol.ext.allow)"
        if w.startswith("--exec-path="):
            return "`--exec-path=` makes git run its commands from another directory"
        i += 2 if w in GIT_GLOBAL_VALUES else 1
    rest = [w or "" for w in args[i:]]
    sub = rest[0] if rest else ""
    more = rest[1:]
    if any(w.startswith("ext::") or w.startswith("fd::") for w in more):
        return "an `ext::` URL runs a command"
    if sub == "grep" and any(re.match(r"^-[A-Za-z]*O", w) for w in more if not w.startswith("--")):
        return "`git grep -O` runs the pager command it names"
    if sub in ("archive", "format-patch") and any(re.match(r"^-[A-Za-z]*o", w) for w in more if not w.startswith("--")):
        return f"`git {sub} -o` writes the file it names"
    if sub == "clone" and any(re.match(r"^-[A-Za-z]*[uc]", w) for w in more if not w.startswith("--")):
        return "`git clone -u`/`-c` runs a command or sets configuration that can"
    if sub == "bundle":
        return "`git bundle create` writes the file it names"
    if sub == "worktree" and any(re.match(r"^-[A-Za-z]*B", w) for w in more if not w.startswith("--")):
        return "`git worktree add -B` resets an existing branch"
    if sub in ("remote",) and "update" in more and any(w in ("-p", "--prune") for w in more):
        return "`git remote update --prune` deletes remote-tracking branches"
    if sub in ("rebase", "pull") and any(re.match(r"^-[A-Za-z]*x", w) or w.startswith("--exec") for w in more
                                         if not w.startswith("--") or w.startswith("--exec")):
        return "`git rebase -x`/`--exec` runs the command it names after each commit"
    if sub in ("fetch", "pull") and any(re.match(r"^\+[^:]*:.+", w) for w in more):
        return "a forced (`+`) refspec overwrites a local branch"
    return None


_SED_VALUES = frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})
_SED_LONG = frozenset({"quiet", "silent", "expression", "regexp-extended", "separate", "null-data", "unbuffered",
                       "line-length", "debug", "posix", "sandbox", "binary", "follow-symlinks", "help", "version",
                       "zero-terminated"})


def _sed(words: list[str | None]) -> str | None:
    scripts: list[str] = []
    operands: list[str] = []
    args = words[1:]
    i = 0
    sandbox = "--sandbox" in args
    while i < len(args):
        w = args[i] or ""
        i += 1
        if w == "--":
            operands.extend(a or "" for a in args[i:])
            break
        if w.startswith("--"):
            name, _, value = w[2:].partition("=")
            if name not in _SED_LONG:
                return f"`{w[:40]}`: an option of sed this check does not know"
            if name == "expression":
                if not value:
                    if i >= len(args):
                        return None
                    value, i = args[i] or "", i + 1
                scripts.append(value)
            elif name == "line-length" and not value:
                i += 1
            continue
        if w.startswith("-") and len(w) > 1:
            j = 1
            while j < len(w):
                c = w[j]
                if c in "f":
                    return "`sed -f` runs a script from a file"
                if c == "i":
                    return "`sed -i` edits files in place"
                if c in "el":
                    value = w[j + 1:]
                    if not value:
                        value, i = (args[i] or "" if i < len(args) else ""), i + 1
                    if c == "e":
                        scripts.append(value)
                    break
                if c not in "nrEszub":
                    return f"`{w[:40]}`: an option of sed this check does not know"
                j += 1
            continue
        operands.append(w)
    if not scripts:
        if not operands:
            return None
        scripts.append(operands[0])
    if sandbox:
        return None
    for script in scripts:
        why = sed_script_doubt(script)
        if why:
            return why
    return None


_SED_SIMPLE = set("=dDgGhHlnNpPxzF")


def sed_script_doubt(script: str) -> str | None:
    """Why a sed script may run a command or write a file (GNU sed: `e`, `w`, `W`, the `s///e`
    and `s///w` flags), or may do what this reader cannot follow; None when it only prints."""
    s = script
    n = len(s)
    i = 0

    def regex_end(start: int, delim: str) -> int | None:
        k = start
        while k < n:
            if s[k] == "\\":
                k += 2
                continue
            if s[k] == delim:
                return k
            if s[k] == "\n" and delim != "\n":
                return None
            k += 1
        return None

    def address(k: int) -> int | None:
        if k < n and s[k].isdigit():
            while k < n and s[k].isdigit():
                k += 1
            if k < n and s[k] == "~":
                k += 1
                while k < n and s[k].isdigit():
                    k += 1
            return k
        if k < n and s[k] == "$":
            return k + 1
        if k < n and (s[k] == "/" or s[k] == "\\"):
            if s[k] == "\\":
                if k + 1 >= n:
                    return None
                delim, k = s[k + 1], k + 2
            else:
                delim, k = "/", k + 1
            end = regex_end(k, delim)
            if end is None:
                return None
            k = end + 1
            while k < n and s[k] in "IM":
                k += 1
            return k
        return k

    while i < n:
        c = s[i]
        if c in " \t\n;}{":
            i += 1
            continue
        if c == "#":
            while i < n and s[i] != "\n":
                i += 1
            continue
        start = i
        after = address(i)
        if after is None:
            return "a sed script this check cannot read"
        i = after
        if i > start:
            while i < n and s[i] in " \t":
                i += 1
            if i < n and s[i] == ",":
                i += 1
                while i < n and s[i] in " \t":
                    i += 1
                if i < n and s[i] in "+~":
                    i += 1
                    while i < n and s[i].isdigit():
                        i += 1
                else:
                    j = address(i)
                    if j is None or j == i:
                        return "a sed script this check cannot read"
                    i = j
        while i < n and s[i] in " \t!":
            i += 1
        if i >= n:
            return "a sed script this check cannot read"
        c = s[i]
        if c in "{};\n":
            i += 1
            continue
        if c in "ewW":
            return f"the sed command `{c}` {'runs a command' if c == 'e' else 'writes a file'}"
        if c in "sy":
            if i + 1 >= n or s[i + 1] in "\n\\":
                return "a sed script this check cannot read"
            delim = s[i + 1]
            k = i + 2
            for _ in range(2):
                end = regex_end(k, delim)
                if end is None:
                    return "a sed script this check cannot read"
                k = end + 1
            if c == "s":
                while k < n and s[k] not in ";\n}":
                    if s[k] in "ew":
                        return f"the `{s[k]}` flag of `s` {'runs the result as a command' if s[k] == 'e' else 'writes a file'}"
                    if s[k] not in "gpiImM0123456789 \t":
                        return "a sed script this check cannot read"
                    k += 1
            i = k
            continue
        if c in "aic":  # text to the end of the line (a `\` continues it)
            while i < n and s[i] != "\n":
                i += 2 if s[i] == "\\" else 1
            continue
        if c in "rRbtTv:":  # a file name or a label, to the end of the line (or `;` for labels)
            stop = "\n" if c in "rR:" else ";\n}"
            while i < n and s[i] not in stop:
                i += 1
            continue
        if c in "qQlL":
            i += 1
            while i < n and (s[i].isdigit() or s[i] in " \t"):
                i += 1
            continue
        if c in _SED_SIMPLE:
            i += 1
            continue
        return f"the sed command `{c}` is not one this check knows"
    return None


def _uniq(words: list[str | None]) -> str | None:
    if len(_plain(words, frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"}))) >= 2:
        return "`uniq INPUT OUTPUT` overwrites OUTPUT"
    return None


def _xxd(words: list[str | None]) -> str | None:
    if len(_plain(words, frozenset({"-c", "-g", "-l", "-o", "-s", "-n", "-cols", "-len", "-seek", "-name"}))) >= 2:
        return "`xxd INFILE OUTFILE` overwrites OUTFILE"
    return None


def _less(words: list[str | None]) -> str | None:
    for w in words[1:]:
        if w is not None and w.startswith("+") and not re.fullmatch(r"\+(\d*[GFg]?|/[^\n!|]*)", w):
            return f"`{w[:40]}`: less runs it as a command when it starts"
    return None


def _awk(words: list[str | None]) -> str | None:
    args = words[1:]
    program = None
    i = 0
    while i < len(args):
        w = args[i] or ""
        if w in ("-F", "-v", "--assign", "--field-separator"):
            i += 2
            continue
        if w.startswith("-") and len(w) > 1:
            i += 1
            continue
        program = w
        break
    if program is None:
        return None
    if re.search(r"\bsystem\s*\(|(?<!\|)\|(?!\|)|\bprintf?\b[^;{}]*>|@load|@include|\bclose\s*\(", program):
        return "the awk program runs a command or writes a file"
    return None


_SSH_OPTION_DANGER = re.compile(r"^\s*(proxycommand|localcommand|permitlocalcommand|knownhostscommand|match|include|"
                                r"pkcs11provider|securitykeyprovider|remotecommand)\b", re.I)


def _ssh(words: list[str | None]) -> str | None:
    args = words[1:]
    for i, w in enumerate(args):
        if w is None or not w.startswith("-") or w.startswith("--"):
            continue
        if w[1:2] in ("F", "I"):
            return f"`ssh {w[:2]}` reads a configuration or library that can run commands"
        if "o" in w[1:]:
            value = w[w.index("o") + 1:] if w.index("o") + 1 < len(w) else (args[i + 1] if i + 1 < len(args) else "")
            if value is None or _SSH_OPTION_DANGER.match(value):
                return "an `ssh -o` option that runs a local command"
    return None


def _docs_or_urls(words: list[str | None]) -> str | None:
    for w in words[1:]:
        if w is None or w.startswith("-") or not (
                re.match(r"^https?://", w) or w == "." or re.search(r"\.(html?|pdf|png|jpe?g|gif|svg|md|txt|csv|json|log)$", w)):
            return "`open` runs an application, or a script it is given"
    return None


def _ldd(words: list[str | None]) -> str | None:
    for w in _plain(words):
        if not re.match(r"^/(usr/|bin/|sbin/|lib)", w):
            return "`ldd` may run the program it inspects"
    return None


def _git_lfs(words: list[str | None]) -> str | None:
    plain = _plain(words)
    if plain and plain[0] not in ("ls-files", "status", "env", "version", "logs", "pull", "fetch", "track", "locks",
                                  "pointer", "help"):
        return f"`git-lfs {plain[0][:30]}` is not one of its read commands"
    return None


def _bat(words: list[str | None]) -> str | None:
    plain = _plain(words)
    return "`bat cache` rebuilds or clears its cache" if plain[:1] == ["cache"] else None


def _ssh_agent(words: list[str | None]) -> str | None:
    return "`ssh-agent COMMAND` runs the command" if _plain(words, frozenset({"-a", "-E", "-P", "-t", "-O"})) else None


def _shell(words: list[str | None]) -> str | None:
    return None


CHECKS: dict[str, Callable[[list[str | None]], str | None]] = {
    "git": _git, "sed": _sed, "gsed": _sed, "uniq": _uniq, "xxd": _xxd, "less": _less, "most": _less,
    "awk": _awk, "gawk": _awk, "ssh": _ssh, "open": _docs_or_urls, "xdg-open": _docs_or_urls, "ldd": _ldd,
    "git-lfs": _git_lfs, "bat": _bat, "batcat": _bat, "ssh-agent": _ssh_agent,
}


_DOCKER_RUN_VALUES = frozenset("-e -p -w -u -m -h -l --env --env-file --publish --workdir --user --name --network "
                               "--label --platform --pull --restart --memory --cpus --hostname --add-host --ulimit "
                               "--tmpfs --log-driver --gpus --shm-size".split())


def _docker(words: list[str | None]) -> str | None:
    plain = _plain(words, frozenset({"-H", "--host", "--context", "-c", "--config", "-l", "--log-level", "-f",
                                     "--file", "-p", "--project-name"}))
    args = [w or "" for w in words[1:]]
    if any(re.match(r"^-[A-Za-z]*v", w) or w.startswith("--volume") for w in args) and any(
            w in ("run", "create") for w in plain[:2]):
        return "a container started with a host directory mounted can change it"
    if any(w in ("build",) for w in plain[:2]) and any(re.match(r"^-[A-Za-z]*o", w) for w in args):
        return "`docker build -o` writes the build's output over a host directory"
    if plain[:2] == ["compose", "config"] and any(re.match(r"^-[A-Za-z]*o", w) for w in args):
        return "`docker compose config -o` writes the file it names"
    return None


def _kube(words: list[str | None]) -> str | None:
    args = [w or "" for w in words[1:]]
    for i, w in enumerate(args):
        if w == "--kubeconfig" or w.startswith("--kubeconfig="):
            value = w.split("=", 1)[1] if "=" in w else (args[i + 1] if i + 1 < len(args) else "")
            if not re.match(r"^(~|\$HOME|\$\{HOME\})/\.kube/", value):
                return "a kubeconfig outside ~/.kube can name a command to run (exec credentials)"
    plain = _plain(words)
    if plain[:1] == ["kustomize"] and any(re.match(r"^-[A-Za-z]*o", w) for w in args):
        return "`kubectl kustomize -o` writes the file it names"
    return None


def _terraform(words: list[str | None]) -> str | None:
    args = [w or "" for w in words[1:]]
    for i, w in enumerate(args):
        if w in ("-out", "--out") or w.startswith(("-out=", "--out=")):
            value = w.split("=", 1)[1] if "=" in w else (args[i + 1] if i + 1 < len(args) else "")
            if "plan" not in value.rsplit("/", 1)[-1].lower():
                return "`-out` writes the plan over the file it names"
    plain = _plain(words)
    if plain[:1] == ["providers"] and plain[1:2] in (["lock"], ["mirror"]):
        return f"`providers {plain[1]}` rewrites the lock file or writes a mirror"
    return None


# Words of a cloud CLI's command path that change something (a segment of `batch-delete-image`).
CLOUD_CHANGE = frozenset(
    "delete remove rm rb rmdir terminate destroy purge deregister revoke detach disassociate disable put update modify "
    "reset restore stop reboot cancel drop wipe erase deprovision uninstall unpublish archive scale deploy replace "
    "rotate move mv sync transfer rename kill logout unset edit pull push import clear flush truncate overwrite "
    "write upload cp copy apply exec invoke ssh execute shell attach evict expire rollback revert merge "
    "close lock unlock abort promote failover empty batch force send start reinstall install rerun enable".split())
# (`set` and `release` are nouns too: `gcloud config set` is cloud-destroy's, `aws ec2 release-address` has no read verb)
# cloud-read's verbs (policy.json); the verb must stand in the command path, not as an option's value
CLOUD_READ = re.compile(r"^(describe|list|ls|get|show|view|status|logs|log|whoami|version|help|info|search|diff|"
                        r"inspect|check|cat|head|du|tree|config|auth|login|print|browse|open|api|watch|wait|tail|"
                        r"lookup|validate|checkout|clone|create|sts)([-:_].*)?$")
CLOUD_GLOBAL_VALUES = frozenset("--profile --region --output --endpoint-url --query --cli-read-timeout --project "
                                "--format --account --configuration --verbosity --subscription -o -R --repo -a --app "
                                "--context -t --access-token --config".split())


def _cloud(words: list[str | None]) -> str | None:
    base = (words[0] or "").rsplit("/", 1)[-1]
    lead: list[str] = []
    args = words[1:]
    i = 0
    while i < len(args) and (args[i] or "").startswith("-"):
        i += 2 if args[i] in CLOUD_GLOBAL_VALUES else 1
    for w in args[i:]:
        if w is None or w.startswith("-"):
            break
        lead.append(w)
    for w in lead[:4]:  # the command path: `batch-delete-image`, `instances delete list`
        for segment in re.split(r"[-:_./=,\s]+", w.lower()):
            if segment in CLOUD_CHANGE:
                return f"`{w[:40]}` names an operation that changes something"
    if base == "az" and lead[:2] == ["account", "set"]:
        return None  # the default subscription (cloud-cli-config)
    if base == "aws":
        if len(lead) < 2 or not CLOUD_READ.match(lead[1]):
            return "the operation (`aws SERVICE OPERATION`) is not one that only reads"
        verbs = [lead[1]]
    else:
        verbs = [w for w in lead[:4] if CLOUD_READ.match(w)]
        if not verbs:
            return "no read verb stands in the command path (before its options)"
    if base not in ("gh", "glab") and all(v.startswith("create") for v in verbs):
        # a forge's `pr create` is ordinary work; a cloud's create deploys (`az deployment group
        # create --mode Complete` deletes what the template omits), invalidates or runs code
        return f"`{verbs[0][:40]}` creates cloud resources, which can deploy, replace or run code"
    if base == "aws":
        plain = _plain(words, frozenset({"--profile", "--region", "--output", "--endpoint-url", "--query",
                                         "--cli-read-timeout"}))
        if len(plain) >= 2 and plain[1].startswith("get-object") and len(plain) >= 3:
            return "`get-object` writes the object over the local file it names"
        if any((w or "").startswith("--outfile") for w in words[1:]):
            return "`--outfile` writes a local file"
    if base in ("gh", "glab"):
        plain = _plain(words)
        given = [w or "" for w in words[1:]]
        query_only = plain[1:2] == ["graphql"] and not any(
            "mutation" in w.lower() or "=@" in w or re.match(r"^(-[A-Za-z]*X|--(input|method))", w) for w in given)
        if plain[:1] == ["api"] and not query_only and any(
                re.match(r"^(-[A-Za-z]*[fFX]|--(field|raw-field|input|method))", w) for w in given):
            return f"`{base} api` with fields sends a request that can change or delete"
        if any(re.match(r"^-[A-Za-z]*f$", w) for w in given if not w.startswith("--")) and plain[1:2] == ["checkout"]:
            return "`checkout --force` resets the local branch"
    if base == "rclone" and any((w or "").startswith("--") and "command" in (w or "") for w in words[1:]):
        return "an rclone option that runs a command"
    return None


_SERVICE_VALUES = frozenset("-H --host -M --machine -n --lines -o --output -p --property -t --type --state -s --signal "
                            "--since --until -u --unit".split())
SERVICE_READ = frozenset("status is-active is-enabled is-failed list-units list-unit-files list-timers list-sockets "
                         "show cat list ls logs monit info describe print get-default list-dependencies "
                         "list-jobs".split())


def _service(words: list[str | None]) -> str | None:
    base = (words[0] or "").rsplit("/", 1)[-1]
    plain = _plain(words, _SERVICE_VALUES)
    if base == "service":
        if plain in ([], ["--status-all"]) or "--status-all" in words:
            return None
        verb = plain[1] if len(plain) > 1 else ""
    else:
        verb = plain[0] if plain else ""
    if verb not in SERVICE_READ:
        return f"`{verb[:30]}` is not one of `{base}`'s read commands"
    return None


SERVICE_LIFECYCLE = frozenset("start stop restart reload try-restart reload-or-restart try-reload-or-restart "
                              "condrestart force-reload enable disable daemon-reload".split())


def _service_lifecycle(words: list[str | None]) -> str | None:
    """`systemctl restart nginx`, `service redis restart`: the verb must be one that stops, starts
    or reloads (no `clean`, `revert`, `isolate`, `reboot`: those lose state or the machine)."""
    base = (words[0] or "").rsplit("/", 1)[-1]
    plain = _plain(words, _SERVICE_VALUES)
    verb = (plain[1] if len(plain) > 1 else "") if base == "service" else (plain[0] if plain else "")
    if verb not in SERVICE_LIFECYCLE | SERVICE_READ:
        return f"`{verb[:30]}` is not one of `{base}`'s start, stop or reload commands"
    return None


_PERL_SUBST = re.compile(r"^\s*(s|y|tr)([^\w\s])")


def _rename(words: list[str | None]) -> str | None:
    plain = _plain(words, frozenset({"-e", "-E"}))
    exprs = [w or "" for i, w in enumerate(words[1:]) if i > 0 and words[i] in ("-e", "-E")] or plain[:1]
    for expr in exprs:
        m = _PERL_SUBST.match(expr)
        if m is None:
            return "a rename expression is Perl code: only `s///` and `y///` are read"
        flags = re.search(r"([A-Za-z]*)\s*$", expr).group(1)  # type: ignore[union-attr]
        if "e" in flags or re.search(r"[@$]\{|\(\?\??\{|\\N\{", expr):
            return "the rename expression evaluates code (`/e`, `@{[…]}`, `(?{…})`)"
    return None


_SFDISK_READ = frozenset("-d --dump -l --list -s --show-size -V --verify -J --json -F --list-free -r --raw -q --quiet "
                         "--color -n --no-act -T --list-types -h --help -v --version -x --sectors -g --show-geometry "
                         "--bytes".split())


def _sfdisk(words: list[str | None]) -> str | None:
    for w in words[1:]:
        if w is not None and w.startswith("-") and w.split("=", 1)[0] not in _SFDISK_READ and not (
                w.startswith("--color") or w.startswith("--output") or w in ("-o",)):
            return f"`{w[:40]}`: not one of sfdisk's read options"
    return None


_BREW_DRY = frozenset({"cleanup", "autoremove", "install", "upgrade", "uninstall", "remove", "rm", "reinstall",
                       "bundle", "untap", "fetch"})


def _brew(words: list[str | None]) -> str | None:
    plain = _plain(words)
    if not plain or plain[0] not in _BREW_DRY:
        return f"`-n` of `brew {(plain or [''])[0][:30]}` is not a dry run"
    return None


def _fd(words: list[str | None]) -> str | None:
    for w in words[1:]:
        if w is not None and re.match(r"^(-[A-Za-z]*[xX].+|--exec(-batch)?=)", w):
            return "`fd` runs the command it is given"
    return None


def _find(words: list[str | None]) -> str | None:
    for w in words[1:]:
        if w in ("-rm", "-fprint", "-fprint0", "-fprintf", "-fls", "-delete"):
            return f"`{w}` deletes or writes files"
    return None


def _vercel(words: list[str | None]) -> str | None:
    args = [w or "" for w in words[1:]]
    for i, w in enumerate(args):
        if w.startswith("--target") and "production" in (w + " " + (args[i + 1] if i + 1 < len(args) else "")):
            return "`--target production` replaces the live site"
    return None


# Checks of one safe rule, in place of its command's (the rule certifies more than reading).
RULE_CHECKS: dict[str, Callable[[list[str | None]], str | None]] = {"service-lifecycle": _service_lifecycle}
CHECKS.update({
    "docker": _docker, "podman": _docker, "nerdctl": _docker, "docker-compose": _docker,
    "kubectl": _kube, "oc": _kube, "helm": _kube,
    "terraform": _terraform, "tofu": _terraform, "terragrunt": _terraform,
    "aws": _cloud, "gcloud": _cloud, "gsutil": _cloud, "az": _cloud, "doctl": _cloud, "flyctl": _cloud, "fly": _cloud,
    "heroku": _cloud, "firebase": _cloud, "gh": _cloud, "glab": _cloud, "wrangler": _cloud, "supabase": _cloud,
    "rclone": _cloud, "s3cmd": _cloud,
    "systemctl": _service, "service": _service, "launchctl": _service, "pm2": _service, "supervisorctl": _service,
    "rename": _rename, "prename": _rename, "file-rename": _rename,
    "sfdisk": _sfdisk, "brew": _brew, "fd": _fd, "fdfind": _fd, "find": _find, "gfind": _find, "bfs": _find,
    "vercel": _vercel,
})
