"""Commands that run other commands: what they run, read from their argv.

`unwrap(name, words)` says what a command runs besides itself:
  * `inner`: another argv (`sudo -u x rm …` → `rm …`; `xargs -0 rm` → `rm`; `ssh host rm …`),
  * `script`: a shell string to read as a command line (`bash -c '…'`, `su -c '…'`, `eval …`,
    `watch '…'`, `env -S '…'`, `ssh host '…'`), or `script_dynamic` when it is built at run time,
  * `reads_stdin_script`: a shell that reads its script from stdin (`sh`, `bash -s`).
`exec_segments` lists the commands `find -exec …;` and `fd -x …` run for each file.

The option tables list the options that take a value, so that the value is not mistaken for
the command (`sudo -u root rm` runs `rm`, not `root`). An unknown option is taken as a flag.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "busybox", "yash", "tcsh", "csh"})


@dataclass
class Plan:
    inner_at: int = 0  # the wrapped argv is words[inner_at:inner_end] (0: none)
    inner_end: int | None = None
    script: str | None = None
    script_dynamic: bool = False
    reads_stdin_script: bool = False
    opaque: str | None = None
    findings: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Wrapper:
    values: frozenset[str] = frozenset()  # options that take a value (the next word, or =value)
    positional: int = 0  # words to skip after the options (timeout's DURATION, ssh's HOST)
    script_option: str | None = None  # an option whose value is a shell string (su -c)
    joins_rest: bool = False  # the rest is joined into a shell string (watch, ssh)
    separator: str | None = None  # stop at this word (parallel's :::)


def _w(values: str = "", **kw) -> Wrapper:
    return Wrapper(values=frozenset(values.split()), **kw)


WRAPPERS: dict[str, Wrapper] = {
    "sudo": _w("-u -g -C -D -h -p -r -t -U -T --user --group --close-from --chdir --host --prompt --role --type "
               "--other-user --command-timeout"),
    "doas": _w("-u -C"),
    "nice": _w("-n --adjustment"),
    "ionice": _w("-c -n -p -P -u --class --classdata"),
    "nohup": _w(), "setsid": _w(), "unbuffer": _w(), "builtin": _w(), "torsocks": _w(), "chronic": _w(),
    "time": _w("-f -o --format --output"),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "timeout": _w("-s -k --signal --kill-after", positional=1),
    "taskset": _w(positional=1),
    "chrt": _w(positional=1),
    "flock": _w("-w -E --timeout --conflict-exit-code", positional=1, script_option="-c"),
    "exec": _w("-a"),
    "command": _w(),
    "xargs": _w("-I -n -P -L -d -E -s -a --max-args --max-procs --delimiter --arg-file --replace --max-lines "
                "--eof --max-chars --process-slot-var"),
    "parallel": _w("-j -S --jobs --sshlogin --joblog --results --delay --timeout --retries --colsep -a --arg-file",
                   separator=":::"),
    "watch": _w("-n -d --interval --differences -c -s", joins_rest=True),
    "strace": _w("-o -e -p -s -u -a -P"),
    "ltrace": _w("-o -e -p -s -u -a"),
    "proxychains": _w("-f"), "proxychains4": _w("-f"),
    "systemd-run": _w("-u -p -E -M --unit --property --setenv --uid --gid --working-directory --machine "
                      "--description --slice"),
    "runuser": _w("-u -g -G --user --group --supp-group", script_option="-c"),
    "su": _w("-s -g -G --shell --group --supp-group", positional=1, script_option="-c"),
    "ssh": _w("-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B", positional=1, joins_rest=True),
    "npx": _w("-p --package --cache --registry", script_option="-c"),
    "bunx": _w("-p --package"),
    "direnv": _w(),  # direnv exec DIR cmd: handled below
    "nix-shell": _w("-p -I --arg --argstr -A --attr --packages", script_option="--run"),
    "uv": _w(), "poetry": _w(), "pipenv": _w(), "bundle": _w(), "conda": _w(), "pnpm": _w(), "yarn": _w(),
    "docker": _w(), "podman": _w(), "kubectl": _w(), "oc": _w(),
}

# `<tool> <subcommand>` pairs that run an argv, with their own value options and positionals.
SUBCOMMAND_RUNNERS: dict[tuple[str, str], Wrapper] = {
    ("uv", "run"): _w("--with --python -p --directory --project --package --env-file --extra --group"),
    ("poetry", "run"): _w(), ("pipenv", "run"): _w(), ("bundle", "exec"): _w(),
    ("conda", "run"): _w("-n -p --name --prefix --cwd"),
    ("pnpm", "exec"): _w(), ("pnpm", "dlx"): _w(), ("yarn", "exec"): _w(), ("yarn", "dlx"): _w(),
    ("direnv", "exec"): _w(positional=1),
    ("docker", "exec"): _w("-e -u -w --env --env-file --user --workdir --detach-keys", positional=1),
    ("podman", "exec"): _w("-e -u -w --env --env-file --user --workdir --detach-keys", positional=1),
    ("docker", "run"): _w("-v -e -p -w -u -m -h -l --volume --env --env-file --publish --workdir --user --name "
                          "--entrypoint --network --mount --label --platform --pull --restart --memory --cpus "
                          "--hostname --add-host --device --cap-add --cap-drop --ulimit --tmpfs --log-driver "
                          "--gpus --shm-size --ipc --pid --security-opt --volumes-from --link", positional=1),
    ("podman", "run"): _w("-v -e -p -w -u -m -h -l --volume --env --env-file --publish --workdir --user --name "
                          "--entrypoint --network --mount --label --platform --pull --restart", positional=1),
    ("kubectl", "exec"): _w("-c -n --container --namespace --context --kubeconfig -f --filename", positional=1),
    ("oc", "exec"): _w("-c -n --container --namespace", positional=1),
}
COMPOSE_RUNNERS = {"exec": _w("-e -u -w --env --user --workdir --index", positional=1),
                   "run": _w("-e -u -w -v -p --env --user --workdir --volume --publish --name --entrypoint",
                             positional=1)}

SHELL_VALUES = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def _skip_options(words: list[str | None], start: int, spec: Wrapper) -> int | None:
    """Index of the first word after the options and positionals (None: nothing left)."""
    i = start
    while i < len(words):
        w = words[i]
        if w == "--":
            i += 1
            break
        if w is None or not w.startswith("-") or w == "-":
            break
        if w in spec.values:
            i += 2
            continue
        i += 1
    i += spec.positional
    if i < len(words) and words[i] == "--":  # kubectl exec POD -- cmd
        i += 1
    return i if i < len(words) else None


def unwrap(name: str, words: list[str | None]) -> Plan:
    if name in SHELLS:
        return _shell(words)
    if name == "eval":
        args = words[1:]
        if not args:
            return Plan()
        known = [a for a in args if a is not None]
        if len(known) < len(args):
            return Plan()  # read.py decides: the output of a known command, or opaque
        return Plan(script=" ".join(known))
    if name == "env":
        return _env(words)
    if name == "command" and any(w in ("-v", "-V") for w in words[1:2]):
        return Plan()  # a lookup: runs nothing
    if name in ("docker", "podman") and len(words) > 2 and words[1] == "compose":
        spec = COMPOSE_RUNNERS.get(words[2] or "")
        return _runner(words, 3, spec) if spec else Plan()
    if name == "docker-compose" and len(words) > 1:
        spec = COMPOSE_RUNNERS.get(words[1] or "")
        return _runner(words, 2, spec) if spec else Plan()
    if len(words) > 1 and words[1] is not None and (name, words[1]) in SUBCOMMAND_RUNNERS:
        return _runner(words, 2, SUBCOMMAND_RUNNERS[(name, words[1])])
    if name in ("docker", "podman", "kubectl", "oc", "uv", "poetry", "pipenv", "bundle", "conda", "pnpm", "yarn",
                "direnv"):
        return Plan()  # their other subcommands are judged as themselves
    spec = WRAPPERS.get(name)
    if spec is None:
        return Plan()
    if spec.script_option:
        for i, w in enumerate(words[1:], 1):
            if w is None:
                continue
            if w == spec.script_option or w.startswith(spec.script_option + "="):
                value = w.split("=", 1)[1] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
                return Plan(script_dynamic=True) if value is None else Plan(script=value)
    at = _skip_options(words, 1, spec)
    if at is None:
        return Plan()
    end = len(words)
    if spec.separator and spec.separator in words[at:]:
        end = words.index(spec.separator, at)
    rest = words[at:end]
    if spec.joins_rest and not (name == "watch" and any(w in ("-x", "--exec") for w in words[1:at])):
        known = [w for w in rest if w is not None]
        if len(known) < len(rest):
            return Plan(script_dynamic=True)
        return Plan(script=" ".join(known))
    return Plan(inner_at=at, inner_end=end) if rest else Plan()


def _runner(words: list[str | None], start: int, spec: Wrapper) -> Plan:
    at = _skip_options(words, start, spec)
    if at is None:
        return Plan()
    return Plan(inner_at=at)


def _env(words: list[str | None]) -> Plan:
    i = 1
    while i < len(words):
        w = words[i]
        if w is None:
            return Plan(inner_at=i)
        if w in ("-S", "--split-string") or w.startswith("--split-string="):
            value = w.split("=", 1)[1] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
            return Plan(script_dynamic=True) if value is None else Plan(script=value)
        if w in ("-u", "--unset", "-C", "--chdir"):
            i += 2
            continue
        if w.startswith("-") or ("=" in w and not w.startswith("=")):
            i += 1
            continue
        break
    if i >= len(words):
        return Plan()
    return Plan(inner_at=i)


def _shell(words: list[str | None]) -> Plan:
    """sh -c STRING, sh SCRIPT (a file: judged as itself), sh / sh -s (a script on stdin)."""
    i = 1
    command_string = False
    stdin = False
    while i < len(words):
        w = words[i]
        if w is None or not (w.startswith("-") or w.startswith("+")) or w in ("-", "--"):
            break
        if w in SHELL_VALUES:
            i += 2
            continue
        if not w.startswith("--"):
            command_string = command_string or "c" in w[1:]
            stdin = stdin or "s" in w[1:]
        i += 1
    if command_string:
        if i >= len(words):
            return Plan()
        return Plan(script_dynamic=True) if words[i] is None else Plan(script=words[i])
    if i < len(words) and words[i] == "-":
        return Plan(reads_stdin_script=True)
    if i >= len(words) or stdin:
        return Plan(reads_stdin_script=True)
    return Plan()  # a script file: the engine judges the command as written


def exec_segments(name: str, words: list[str | None]) -> list[tuple[int, int]]:
    """(start, end) of each argv that `find -exec … ;` (and -execdir, -ok, -okdir) and
    `fd -x …` run."""
    segments: list[tuple[int, int]] = []
    if name in ("find", "gfind", "bfs"):
        i = 1
        while i < len(words):
            if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(words) and words[j] not in (";", "+"):
                    j += 1
                if j > i + 1:
                    segments.append((i + 1, j))
                i = j + 1
                continue
            i += 1
    elif name in ("fd", "fdfind"):
        for i, w in enumerate(words[1:], 1):
            if w in ("-x", "--exec", "-X", "--exec-batch"):
                end = words.index(";", i + 1) if ";" in words[i + 1:] else len(words)
                if end > i + 1:
                    segments.append((i + 1, end))
                break
    return segments
