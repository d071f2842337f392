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

import json
import re
import shlex
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
    package: bool = False  # the wrapped argv is a package a runner fetches or finds (`npx X`): its code is unread


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
    # Windows' WSL: the rest runs in the distribution's shell (`wsl -d Ubuntu -- bash -lc '…'`)
    "wsl": _w("-d --distribution -u --user --cd --distribution-id", joins_rest=True),
    "wsl.exe": _w("-d --distribution -u --user --cd --distribution-id", joins_rest=True),
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
    runner = package_runner(name, words)
    if runner is not None:
        return runner
    special = _RUNS_LATER.get(name)
    if special is not None:
        plan = special(words)
        if plan is not None:
            return plan
    remote = _cloud_exec(name, words)
    if remote is not None:
        return remote
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
        # `ssh host` with no command: the remote login shell reads its commands from stdin
        return Plan(reads_stdin_script=True) if name == "ssh" and len(words) > 1 else Plan()
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


# -- remote and deferred execution, package runners --------------------------
# Written from each tool's manual or --help: tmux(1) 3.3, GNU screen 4.9, at(1), GNU parallel,
# GNU make, ansible 2.16, flyctl, az vm run-command, aws ssm send-command, heroku run,
# gcloud compute ssh, vagrant ssh, npm exec, pnpm dlx/exec, yarn dlx/exec, bunx, uvx, pipx run.

def _opts(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


def _options_end(words: list[str | None], start: int, values: frozenset[str], short_values: str = "") -> int:
    """Index of the first operand after `start` (options, their values and `--` skipped). A
    cluster whose last letter takes a value (`-dmS name`) takes the next word."""
    i = start
    while i < len(words):
        w = words[i]
        if w == "--":
            return i + 1
        if w is None or not w.startswith("-") or w == "-":
            return i
        if w in values or (not w.startswith("--") and len(w) > 2 and w[-1] in short_values):
            i += 2
        else:
            i += 1
    return i


def _joined(words: list[str | None], sep: str = " ") -> Plan:
    """The words, joined, as a shell string (or built at run time)."""
    if not words:
        return Plan()
    if any(w is None for w in words):
        return Plan(script_dynamic=True)
    return Plan(script=sep.join(w for w in words if w is not None))


def _value_of(words: list[str | None], names: tuple[str, ...]) -> tuple[bool, str | None]:
    """(present, value) of the first option in `names` (`-C x`, `--command=x`, `-Cx` for a
    short one); value None when it is built at run time."""
    for i, w in enumerate(words):
        if w is None:
            continue
        for name in names:
            if w == name:
                return True, (words[i + 1] if i + 1 < len(words) else "")
            if name.startswith("--") and w.startswith(name + "="):
                return True, w.split("=", 1)[1]
            if not name.startswith("--") and w.startswith(name) and len(w) > len(name):
                return True, w[len(name):]
    return False, ""


def _script_value(words: list[str | None], names: tuple[str, ...]) -> Plan | None:
    present, value = _value_of(words, names)
    if not present:
        return None
    return Plan(script_dynamic=True) if value is None else Plan(script=value)


def _at(words: list[str | None]) -> Plan:
    """at/batch read the job's commands from stdin (or `-f FILE`) and run them later with sh."""
    args = [w for w in words[1:]]
    for w in args:
        if w is not None and w.startswith("-") and not w.startswith("--") and any(c in w[1:] for c in "lrdcf"):
            return Plan()  # list, remove, cat a job, or a script file: judged as written
    return Plan(reads_stdin_script=True)


_SCREEN_VALUES = _opts("-c -e -h -p -S -T -t -s -Logfile -X")


def _screen(words: list[str | None]) -> Plan:
    """screen [-opts] [cmd args]: a new window runs the command; `-X stuff TEXT` types TEXT."""
    i = 1
    while i < len(words):
        w = words[i]
        if w is None or not w.startswith("-"):
            break
        if w in ("-X", "-Q"):
            rest = words[i + 1:]
            if rest[:1] == ["stuff"]:
                text = rest[1:2]
                if not text:
                    return Plan()
                if text[0] is None:
                    return Plan(script_dynamic=True)
                return Plan(script=_typed(text[0]))
            return Plan()  # another screen command (quit, kill, …): judged as written
        if w in ("-ls", "-list", "-r", "-R", "-x", "-wipe", "-v", "-version", "-q"):
            return Plan()
        i += 2 if w in _SCREEN_VALUES or (len(w) > 2 and not w.startswith("--") and w[-1] in "ScephpTts") else 1
    at = _options_end(words, 1, _SCREEN_VALUES - {"-X"}, "ScephpTts")
    return Plan(inner_at=at) if at < len(words) else Plan()


def _typed(text: str) -> str:
    """Text typed into a terminal (screen's stuff): `^M`, `\\n`, `\\r`, `\\015` end a line."""
    for key in ("^M", "^J", "\\n", "\\r", "\\015", "\\012"):
        text = text.replace(key, "\n")
    return text


# tmux commands that run a shell command (their last operands) and their options that take a value
_TMUX_RUNS = {
    "new-session": _opts("-c -e -f -F -n -s -t -x -y"), "new": _opts("-c -e -f -F -n -s -t -x -y"),
    "new-window": _opts("-c -e -F -n -t"), "neww": _opts("-c -e -F -n -t"),
    "split-window": _opts("-c -e -l -t -F -p"), "splitw": _opts("-c -e -l -t -F -p"),
    "respawn-pane": _opts("-c -e -t"), "respawnp": _opts("-c -e -t"),
    "respawn-window": _opts("-c -e -t"), "respawnw": _opts("-c -e -t"),
    "run-shell": _opts("-d -t -c"), "run": _opts("-d -t -c"),
    "display-popup": _opts("-b -c -d -e -h -s -S -t -T -w -x -y"), "popup": _opts("-b -c -d -e -h -s -S -t -T -w -x -y"),
    "pipe-pane": _opts("-t"), "pipep": _opts("-t"),
}
_TMUX_KEY = re.compile(r"^((C|M|S)-)+\S$|^(Enter|Escape|Tab|BTab|BSpace|Space|Up|Down|Left|Right|Home|End|"
                       r"PageUp|PageDown|PgUp|PgDn|PPage|NPage|IC|DC|Insert|Delete|F\d{1,2}|KP\w+)$")
_TMUX_NEWLINE = frozenset({"Enter", "C-m", "C-j", "KPEnter", "C-c", "C-d", "C-z"})


def _tmux(words: list[str | None]) -> Plan:
    """tmux [-opts] command [args] [; command …]: what its commands run in a shell."""
    i = 1
    while i < len(words):
        w = words[i]
        if w is None or not w.startswith("-"):
            break
        if w == "-c":  # `tmux -c shell-command`: run by the default shell
            value = words[i + 1] if i + 1 < len(words) else ""
            return Plan(script_dynamic=True) if value is None else Plan(script=value or "")
        i += 2 if w in ("-f", "-L", "-S", "-T") else 1
    scripts: list[str] = []
    dynamic = False
    commands: list[list[str | None]] = [[]]
    for w in words[i:]:  # `;` alone or at the end of a word (not `\;`) separates tmux commands
        if w is not None and w.endswith(";") and not w.endswith("\\;"):
            if w[:-1]:
                commands[-1].append(w[:-1])
            commands.append([])
        else:
            commands[-1].append(w)
    for command in commands:
        plan = _tmux_command(command)
        if plan.script_dynamic:
            dynamic = True
        elif plan.script:
            scripts.append(plan.script)
    if dynamic:
        return Plan(script_dynamic=True)
    return Plan(script="\n".join(scripts)) if scripts else Plan()


def _tmux_command(command: list[str | None]) -> Plan:
    if not command or command[0] is None:
        return Plan()
    name, args = command[0], command[1:]
    if name in _TMUX_RUNS:
        if name in ("run-shell", "run") and any(w is not None and w.startswith("-") and "C" in w for w in args):
            return Plan()  # -C: a tmux command, not a shell command
        at = _options_end(args, 0, _TMUX_RUNS[name])
        return _joined(args[at:])
    if name in ("send-keys", "send"):
        if any(w is not None and w.startswith("-") and ("X" in w or "H" in w) for w in args[:4]):
            return Plan() if not any(w is not None and w.startswith("-") and "H" in w for w in args[:4]) else \
                Plan(script_dynamic=True)
        literal = any(w is not None and w.startswith("-") and "l" in w for w in args[:4])
        at = _options_end(args, 0, _opts("-N -t"))
        typed = ""
        for w in args[at:]:
            if w is None:
                return Plan(script_dynamic=True)
            if not literal and _TMUX_KEY.match(w):
                typed += "\n" if w in _TMUX_NEWLINE else (" " if w == "Space" else "\n")
            else:
                typed += w
        return Plan(script=typed) if typed.strip() else Plan()
    if name in ("if-shell", "if"):
        at = _options_end(args, 0, _opts("-t"))
        rest = args[at:]
        if not rest:
            return Plan()
        if any(w is None for w in rest):
            return Plan(script_dynamic=True)
        scripts = [rest[0] or ""]
        for nested in rest[1:3]:  # tmux commands, themselves read as tmux would
            try:
                inner = _tmux_command(list(shlex.split(nested or "")))
            except ValueError:
                return Plan(script_dynamic=True)
            if inner.script_dynamic:
                return inner
            if inner.script:
                scripts.append(inner.script)
        return Plan(script="\n".join(scripts))
    return Plan()


def _make(words: list[str | None]) -> Plan:
    """`make -f -` / `-f /dev/stdin`: the makefile, and the recipes it runs, come from stdin."""
    present, value = _value_of(words[1:], ("-f", "--file", "--makefile"))
    if present and (value is None or value in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")):
        return Plan(opaque="`make` reads its makefile, and the recipes it runs, from stdin or a pipe")
    return Plan()


def _parallel(words: list[str | None]) -> Plan | None:
    """GNU parallel with no command runs each argument (after `:::`) or each input line as a
    command line; a command whose name is a replacement string (`{}`) likewise. None: it has a
    command, unwrapped as a wrapper."""
    spec = WRAPPERS["parallel"]
    at = _skip_options(words, 1, spec)
    first = words[at] if at is not None else None
    if at is not None and first not in (":::", "::::", ":::+", "::::+") and not (first is not None and "{" in first):
        return None
    if "::::" in words or "::::+" in words or any(w in ("-a", "--arg-file") for w in words):
        return Plan(opaque="`parallel` runs command lines read from a file")
    if ":::" in words or ":::+" in words:
        args = [w for w in words[words.index(":::" if ":::" in words else ":::+") + 1:] if w not in (":::", ":::+")]
        return _joined(args, "\n")
    return Plan(reads_stdin_script=True)


_ANSIBLE_VALUES = _opts("-m --module-name -a --args -i --inventory --inventory-file -u --user -e --extra-vars -f "
                        "--forks -l --limit -M --module-path -B --background -P --poll -t --tree -c --connection -T "
                        "--timeout --private-key --key-file --become-user --become-method --vault-id "
                        "--vault-password-file --ssh-common-args --ssh-extra-args --scp-extra-args --sftp-extra-args "
                        "--playbook-dir --task-timeout -R --become-password-file --connection-password-file")
_ANSIBLE_SHELL = re.compile(r"^((ansible\.(builtin|legacy|windows)\.)?(command|shell|raw|win_command|win_shell))$")


def _ansible(words: list[str | None]) -> Plan:
    """`ansible HOSTS [-m MODULE] -a ARGS`: the command, shell and raw modules (command is the
    default) run ARGS as a command line on every host."""
    present, module = _value_of(words[1:], ("-m", "--module-name"))
    if module is None:
        return Plan(script_dynamic=True)
    if present and not _ANSIBLE_SHELL.match(module):
        return Plan()
    has_args, args = _value_of(words[1:], ("-a", "--args"))
    if not has_args:
        return Plan()
    return Plan(script_dynamic=True) if args is None else Plan(script=args)


def _cloud_exec(name: str, words: list[str | None]) -> Plan | None:
    """Cloud and VM CLIs whose command runs a shell command on a machine: the command is read."""
    if name not in _CLOUD_EXEC:
        return None
    plain = [w for w in words[1:6] if w is not None and not w.startswith("-")]
    if name in ("fly", "flyctl") and plain[:2] == ["ssh", "console"]:
        return _script_value(words, ("-C", "--command"))
    if name == "az" and "run-command" in plain[:3]:
        return _az_scripts(words)
    if name == "az" and plain[:2] == ["container", "exec"]:
        return _script_value(words, ("--exec-command",))
    if name == "aws" and plain[:2] == ["ssm", "send-command"]:
        return _ssm(words)
    if name == "aws" and plain[:2] == ["ecs", "execute-command"]:
        return _script_value(words, ("--command",))
    if name == "gcloud" and plain[:2] in (["compute", "ssh"], ["cloud-shell", "ssh"]):
        found = _script_value(words, ("--command",))
        if found is not None:
            return found
        if "--" in words:
            return _joined(words[words.index("--") + 1:])
        return Plan()
    if name == "heroku" and plain[:1] in (["run"], ["run:detached"]):
        at = _options_end(words, words.index(plain[0]) + 1, _opts("-a --app -r --remote -e --env -s --size --type"))
        return _joined(words[at:])
    if name == "vagrant" and plain[:1] == ["ssh"]:
        return _script_value(words, ("-c", "--command"))
    if name in ("multipass", "lxc", "incus") and plain[:1] == ["exec"] and "--" in words:
        return Plan(inner_at=words.index("--") + 1)
    return None


def _az_scripts(words: list[str | None]) -> Plan:
    for i, w in enumerate(words):
        if w in ("--scripts", "--script", "--source-script"):
            scripts = []
            for v in words[i + 1:]:
                if v is not None and v.startswith("--"):
                    break
                if v is None:
                    return Plan(script_dynamic=True)
                if v.startswith("@"):
                    return Plan()  # a local script file: judged as written
                scripts.append(v)
            return Plan(script="\n".join(scripts)) if scripts else Plan()
    return Plan()


def _ssm(words: list[str | None]) -> Plan:
    present, document = _value_of(words, ("--document-name",))
    if not present or document is None or not re.search(r"Run(Shell|PowerShell)Script$", document):
        return Plan()  # another document: what it runs is not in the command
    present, params = _value_of(words, ("--parameters",))
    if not present:
        return Plan()
    if params is None:
        return Plan(script_dynamic=True)
    text = params.strip()
    if text.startswith("file://") or text.startswith("fileb://"):
        return Plan()
    commands: object = None
    try:
        parsed = json.loads(text)
        commands = parsed.get("commands") if isinstance(parsed, dict) else None
    except ValueError:
        m = re.match(r"^commands=(.*)$", text, re.S)
        if m:
            value = m.group(1).strip()
            try:
                commands = json.loads(value)
            except ValueError:
                commands = value.strip("[]")
    if isinstance(commands, str):
        return Plan(script=commands)
    if isinstance(commands, list) and all(isinstance(c, str) for c in commands):
        return Plan(script="\n".join(commands))
    return Plan(script=text)  # a shape not parsed here: its text is read as the command line


# Package runners: the package named runs code nobody here has read (`npx rimraf dist` is read
# as `rimraf dist`, never certified harmless). Options that take a value, per runner.
PACKAGE_RUNNERS: dict[tuple[str, ...], frozenset[str]] = {
    ("npx",): _opts("-p --package --cache --registry -w --workspace --userconfig"),
    ("npm", "exec"): _opts("-p --package -w --workspace --cache --registry --userconfig"),
    ("npm", "x"): _opts("-p --package -w --workspace --cache --registry --userconfig"),
    ("pnpm", "dlx"): _opts("--package --reporter"), ("pnpm", "exec"): _opts("--filter -F --reporter --workspace-concurrency"),
    ("yarn", "dlx"): _opts("-p --package"), ("yarn", "exec"): frozenset(), ("yarn", "run"): frozenset(),
    ("bunx",): _opts("-p --package"), ("bun", "x"): _opts("-p --package"),
    ("uvx",): _opts("--from --with --with-editable --with-requirements -p --python --index --index-url "
                    "--extra-index-url --default-index -c --constraints --overrides --env-file --directory --project "
                    "--python-preference --cache-dir --config-file --find-links -f"),
    ("uv", "tool", "run"): _opts("--from --with --with-editable --with-requirements -p --python --index --index-url "
                                 "--extra-index-url --default-index -c --constraints --overrides --env-file "
                                 "--directory --project --cache-dir --find-links -f"),
    ("pipx", "run"): _opts("--spec --python --pip-args --index-url --fetch-missing-python"),
}
_RUNNER_NAMES = frozenset(key[0] for key in PACKAGE_RUNNERS)
_CLOUD_EXEC = frozenset({"fly", "flyctl", "az", "aws", "gcloud", "heroku", "vagrant", "multipass", "lxc", "incus"})
# yarn's own commands (v1 and berry): any other first word is a package.json script or a bin
YARN_COMMANDS = frozenset(
    "add audit autoclean bin cache check config constraints create dedupe dlx exec explain generate-lock-entry global "
    "help import info init install licenses link list login logout node npm outdated owner pack patch patch-commit "
    "plugin policies publish rebuild remove run search set stage tag team unlink unplug up upgrade "
    "upgrade-interactive version versions why workspace workspaces".split())
# runners whose `-c` (or --call, --shell-mode) runs its value, or the rest, as a shell string
_RUNNER_SHELL = {("npx",): ("-c", "--call"), ("npm", "exec"): ("-c", "--call"), ("npm", "x"): ("-c", "--call"),
                 ("pnpm", "dlx"): ("-c", "--shell-mode"), ("pnpm", "exec"): ("-c", "--shell-mode")}


def package_runner(name: str, words: list[str | None]) -> Plan | None:
    """`npx X …`, `npm exec -- X …`, `pnpm dlx X`, `yarn X`, `bunx X`, `uvx X`, `pipx run X`:
    X runs (Plan.package set); None when this is not a package runner."""
    if name not in _RUNNER_NAMES:
        return None
    key: tuple[str, ...] | None = None
    start = 1
    for size in (3, 2, 1):
        candidate = tuple(w or "" for w in words[:size])
        if len(words) >= size and (name,) + candidate[1:] in PACKAGE_RUNNERS:
            key, start = (name,) + candidate[1:], size
            break
    if key is None and name == "yarn" and len(words) > 1 and words[1] is not None and not words[1].startswith("-") \
            and words[1] not in YARN_COMMANDS:
        key, start = ("yarn", "run"), 1
    if key is None:
        return None
    shell = _RUNNER_SHELL.get(key)
    if shell:
        for i, w in enumerate(words[start:], start):
            if w is None:
                continue
            if w in shell or any(w.startswith(s + "=") for s in shell if s.startswith("--")):
                if key[0] == "pnpm":  # pnpm's -c is a flag: the rest is the shell string
                    return _joined(words[i + 1:])
                value = w.split("=", 1)[1] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
                return Plan(script_dynamic=True) if value is None else Plan(script=value)
    if key == ("yarn", "exec"):
        return _joined(words[start:])  # a shell command line (yarn's portable shell)
    at = _options_end(words, start, PACKAGE_RUNNERS[key])
    if at >= len(words):
        return Plan()
    return Plan(inner_at=at, package=True)


_RUNS_LATER = {"at": _at, "batch": _at, "screen": _screen, "tmux": _tmux, "make": _make, "gmake": _make,
               "ansible": _ansible, "parallel": _parallel}
