"""The read-only table (shell/readonly.py, readonly.json) behind `[guard] approve = "read-only"`:
every row's examples; a property suite that varies every approving example with each known
writing option, redirection, substitution, assignment prefix, wrapper and chained write, and
holds that no variant is approved; and the figures (everyday read-only commands
approved, none of about 2,400 writing, destructive, code-running or secret-reading ones)."""

from __future__ import annotations

import json

import pytest

import approve_sets
from system1_gateway.shell import readonly

TABLE = readonly.table()
ROWS = [(rule["id"], command, True) for rule in TABLE.data["rules"] for command in rule.get("match", ())] + \
       [(rule["id"], command, False) for rule in TABLE.data["rules"] for command in rule.get("pass", ())]


@pytest.mark.parametrize("rule,command,approved", ROWS, ids=[f"{r}:{c[:40]}" for r, c, _ in ROWS])
def test_each_row_of_the_table(rule, command, approved):
    approval, why = readonly.judge(command)
    if approved:
        assert approval is not None, why
        assert rule in approval.rules, approval
    else:
        assert approval is None, (command, why)


def test_every_rule_has_examples_both_ways_and_the_table_is_well_formed():
    for rule in TABLE.data["rules"]:
        assert rule.get("match") and rule.get("pass") and rule.get("why"), rule["id"]
    for spec in TABLE.specs.values():
        assert not spec.short & spec.short_valued
        assert all(name.startswith("--") for name in spec.long)
    with pytest.raises(ValueError, match="twice"):
        readonly.Table({**TABLE.data, "rules": TABLE.data["rules"] + TABLE.data["rules"][:1]})


# Options that write a file, run a program or change state, from each tool's manual: inserted
# into every approving example of the tool, none may be approved.
WRITING_OPTIONS = {
    "ls": ["--output=x"], "tree": ["-o out.txt", "-R -H .", "--fromfile"], "cat": ["--output=x"],
    "head": ["-f", "--follow"], "tail": ["-f", "-F", "--follow", "--pid=1"], "wc": ["--files0-from=list"],
    "du": ["--files0-from=list"], "file": ["-C", "-C -m magic", "--compile"], "stat": ["--output=x"], "df": ["--files0-from=x"],
    "grep": ["-d recurse", "--directories=recurse", "--devices=read", "--exclude-from=~/.ssh/id_rsa", "-f .env"],
    "rg": ["--pre ./x", "--pre=./x", "--pre-glob '*'", "-z", "--search-zip", "--hidden", "-u", "-uu", "-uuu", "--no-ignore",
           "-L", "--follow", "--type-add 'x:*.x'", "--ignore-file ~/.ssh/id_rsa"],
    "find": ["-delete", "-exec rm {} ;", "-execdir rm {} ;", "-ok rm {} ;", "-okdir rm {} ;", "-fprint out", "-fprint0 out",
             "-fprintf out %p", "-fls out"],
    "sort": ["-o out", "--output=out", "-T /tmp", "--temporary-directory=/tmp", "--compress-program=./x", "--files0-from=x",
             "-uo out"],
    "uniq": ["a b"], "tr": ["a b c"], "cut": ["--output=x"], "diff": ["--output=x", "-l"], "cmp": ["--output=x"],
    "sha256sum": ["--output=x"], "md5sum": ["--output=x"], "xxd": ["-r", "a b"], "od": ["--output=x"], "strings": ["-T x --output=x"],
    "sed": ["-i", "--in-place", "-f x.sed", "-e 'w out'", "-e '1e id'", "-e 's/a/b/w out'", "-e 's/a/b/e'", "-e 'r /etc/shadow'"],
    "jq": ["-f prog.jq", "--from-file prog.jq", "-L .", "--rawfile k ~/.ssh/id_rsa", "--slurpfile k .env", "--args"],
    "echo": [], "printf": ["-v PATH"], "pwd": ["x"], "whoami": ["x"], "uname": ["x"], "which": [], "type": [], "sleep": [],
    "cd": ["-", "~", "~/.ssh"], "ps": ["e", "axe", "> out"],
}
GIT_OPTIONS = ["-c core.pager=./x", "-c alias.status='!rm -rf ~'", "--exec-path=./x", "--git-dir=/tmp/x", "--work-tree=/",
               "--config-env=core.pager=X", "-p", "--paginate", "--namespace=x", "-C ~/.ssh"]
# the writing verbs of a subcommand read with a verb (`git stash list` → `git stash drop`)
GIT_VERBS = {"stash": ["drop", "pop", "clear", "push", "apply", "save x", "branch x", "store x"],
             "worktree": ["add ../x", "remove x", "prune", "move a b", "lock x", "repair"],
             "remote": ["add x y", "remove x", "rm x", "rename a b", "set-url x y", "set-head origin -a", "prune origin", "update", "show origin"],
             "reflog": ["expire --all", "delete HEAD@{1}"]}
GIT_ANY = ["--exec=./x", "--upload-pack=./x", "--receive-pack=./x", "--zzz-unknown", "-%"]
DIFF_WRITES = ["--output=x", "--output x", "--ext-diff", "-O order", "-O./x", "--outp=x"]
GIT_SUB_OPTIONS = {  # what writes, runs a program or reads outside the repository, per subcommand (git's manual)
    "diff": DIFF_WRITES + ["--no-index ~/.ssh/id_rsa /dev/null"], "log": DIFF_WRITES, "show": DIFF_WRITES,
    "whatchanged": DIFF_WRITES, "grep": ["-O", "-O./x", "--open-files-in-pager=./x",
    "--no-index", "--untracked"], "branch": ["-D x", "-d x", "-m x", "-M x", "-c x", "-C x", "--set-upstream-to=x", "-u x",
    "--edit-description", "-f x", "--delete x", "--move x", "--copy x", "new-branch"],
    "tag": ["-d x", "-a x -m y", "-s x", "-f x", "--delete x"], "config": ["--unset x", "--add x y", "--replace-all x y", "--edit", "-e",
    "--file=~/.aws/config", "--rename-section a b"], "remote": ["add x y", "show origin", "prune origin", "remove x",
    "set-url x y", "update"], "reflog": ["expire --all", "delete HEAD@{1}"],
    "cat-file": ["--textconv", "--filters", "--batch"], "blame": ["--contents ~/.ssh/id_rsa"], "status": ["--zzz-unknown"],
}
REDIRECTIONS = ["> out.txt", ">> out.txt", ">| out.txt", "&> out.txt", "2> err.log", "1> out.txt", "> /etc/motd", "< .env",
                "< input.txt", "<<< text", "<<EOF\nx\nEOF", "> >(cat)", ">&3", "3> x", "2>&1 > out.txt"]
SUBSTITUTIONS = ["$(touch x)", "`touch x`", "<(cat .env)", ">(tee out)", "$HOME", "${X}", "\"$(id)\"", "\"$AWS_SECRET_ACCESS_KEY\"",
                 "$'\\x2e'env", "~root"]
TEXT_ONLY = ("$'\\x2e'env", "~root")
ASSIGNMENTS = ["LD_PRELOAD=./x.so", "PATH=.:$PATH", "GIT_PAGER=./x", "GIT_EXTERNAL_DIFF=./x", "GIT_DIR=/tmp/x",
               "GIT_CONFIG_PARAMETERS=x", "BASH_ENV=./x", "LESSOPEN='|./x %s'", "PAGER=./x", "X=1", "LC_ALL=C", "TZ=UTC",
               "RIPGREP_CONFIG_PATH=./x", "HOME=/tmp"]
WRAPPERS = ["sudo", "env", "env -i", "timeout 5", "nice", "nohup", "time", "xargs", "watch", "command", "exec", "strace",
            "doas", "stdbuf -o0", "npx", "uv run", "ssh host", "docker exec c", "flock /tmp/l", "builtin"]
SHELL_STRINGS = ["bash -c '{c}'", "sh -c '{c}'", "eval '{c}'", "echo '{c}' | sh", "bash <<< '{c}'", "su -c '{c}'"]
CHAINED_WRITES = ["touch x", "rm -rf build", "tee out.txt", "> x", "mkdir d", "git commit -am x", "npm test", "make",
                  "python3 x.py", "./x", "cp a b", "mv a b", "sh", "xargs rm"]
JOINS = ["{c} && {w}", "{w} && {c}", "{c}; {w}", "{c} || {w}", "{c} | {w}", "{c} & {w}", "{c}\n{w}", "({c}; {w})",
         "{{ {c}; }} > out.txt", "{c} | {w} | cat", "if {c}; then {w}; fi", "while {c}; do {w}; done",
         "f() {{ {w}; }}; {c}", "alias {first}='{w}'; {c}", "export PATH=.:$PATH; {c}", "cd ~/.ssh && {c}"]


def approving_examples() -> list[str]:
    return [command for rule in TABLE.data["rules"] for command in rule["match"]]


def insert_after_name(command: str, option: str, after: int = 1) -> list[str]:
    """`option` put after the first `after` words, and at the end (before a `--`: after it,
    every word is an operand)."""
    command = command.split("&&")[0].strip()
    words = command.split(" ")
    out = [" ".join([*words[:after], option, *words[after:]])]
    out.append(command.replace(" -- ", f" {option} -- ", 1) if " -- " in command else f"{command} {option}")
    return out


def git_sub(words: list[str]) -> int:
    """The index of git's subcommand in an example's words."""
    i = 1
    while words[i].startswith("-"):
        i += 2 if words[i] == "-C" else 1
    return i


def variants() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for command in approving_examples():
        name = command.split()[0]
        first = name if name != "cd" else "ls"
        if name == "git":
            words = command.split(" ")
            sub = git_sub(words)
            out += [("option", " ".join([*words[:sub], o, *words[sub:]])) for o in GIT_OPTIONS]
            if words[sub] in GIT_VERBS and len(words) > sub + 1:
                out += [("option", " ".join([*words[:sub + 1], verb, *words[sub + 2:]])) for verb in GIT_VERBS[words[sub]]]
            for option in GIT_SUB_OPTIONS.get(words[sub], []) + GIT_ANY:
                out += [("option", v) for v in insert_after_name(command, option, sub + 1)]
        else:
            for option in WRITING_OPTIONS.get(name, []) + ["--zzz-unknown", "-%"]:
                out += [("option", v) for v in insert_after_name(command, option)]
        out += [("redirection", f"{command} {r}") for r in REDIRECTIONS]
        text_operands = TABLE.by_command[name].get("operands") == "text"  # `tr a ~root`: not a path
        out += [("substitution", f"{command} {s}") for s in SUBSTITUTIONS if not (text_operands and s in TEXT_ONLY)]
        out += [("assignment", f"{a} {command}") for a in ASSIGNMENTS]
        out += [("assignment", f"export {a.split('=')[0]}=x; {command}") for a in ASSIGNMENTS[:6]]
        out += [("wrapper", f"{w} {command}") for w in WRAPPERS]
        out += [("shell string", s.format(c=command.replace("'", ""))) for s in SHELL_STRINGS]
        out += [("chained write", j.format(c=command, w=w, first=first)) for j in JOINS for w in CHAINED_WRITES[:4]]
        out += [("chained write", f"{command} && {w}") for w in CHAINED_WRITES]
    return out


VARIANTS = variants()


def test_the_property_suite_is_large_and_covers_every_approving_rule():
    assert len(VARIANTS) > 8000, len(VARIANTS)
    kinds = {kind for kind, _ in VARIANTS}
    assert kinds == {"option", "redirection", "substitution", "assignment", "wrapper", "shell string", "chained write"}


def test_no_variant_of_an_approving_example_is_approved():
    """For every rule that may approve: each known writing option, redirection, substitution,
    assignment prefix, wrapper, shell string and chained write makes it not approved."""
    allowed = [(kind, command) for kind, command in VARIANTS if readonly.approve(command) is not None]
    assert not allowed, allowed[:20]


def test_what_the_variants_leave_approved_is_only_what_they_should():
    """Harmless variants the suite must not count: /dev/null and descriptor redirections stay approved."""
    for command in ("ls -la 2>/dev/null", "git status 2>&1 | head", "rg foo src >/dev/null", "cat a.txt 2>/dev/null"):
        assert readonly.approve(command) is not None, command


def test_everyday_read_only_commands_are_approved():
    """The figure: at least 90 % of everyday read-only commands; the 20 plainly read-only
    ones of the issue's kind, all."""
    plain = ["ls -la", "git status && git diff --stat", "rg foo src", "find . -name '*.py'", "git blame README.md",
             "cat README.md", "git log --oneline -10", "git diff", "head -n 20 src/app.py", "wc -l src/*.py", "pwd",
             "grep -rn TODO src/", "git show HEAD --stat", "ls -R docs", "git branch -a", "tree -L 2", "du -sh .",
             "sed -n '1,40p' src/app.py", "jq .version package.json", "git rev-parse HEAD"]
    assert [c for c in plain if readonly.approve(c) is None] == []
    everyday = approve_sets.everyday()
    missed = [c for c in everyday if readonly.approve(c) is None]
    share = 1 - len(missed) / len(everyday)
    assert len(everyday) >= 150 and share >= 0.9, (share, missed)


def test_nothing_that_writes_runs_code_or_reads_secrets_is_approved():
    """The figure: zero false allows over the writing, destructive, code-running,
    network and secret-reading set (about 2,400 commands)."""
    unsafe = approve_sets.unsafe()
    assert len(unsafe) >= 1500
    allowed = [(kind, command) for kind, command in unsafe if readonly.approve(command) is not None]
    assert allowed == []


@pytest.mark.parametrize("path,reads,secret", [
    ("~/.ssh/id_rsa", True, True), ("../.env", True, True), ("config/.env.local", True, True), (".envrc", True, True),
    ("deploy/prod.env", True, True), ("certs/server.PEM", True, True), ("x/credentials.json", True, True),
    ("~/.config/anything", True, True), ("/proc/self/environ", True, True), ("/dev/sda", True, True), ("/dev/null", True, False),
    ("/etc/shadow", True, True), ("/etc/hosts", True, False), ("~user/x", True, True), ("*", True, True), ("*", False, False),
    ("*.py", True, False), (".e*", False, True), ("src/*.ts", True, False), ("docs/*", True, True), ("~", True, False),
    ("~/.bashrc", True, True), ("README.md", True, False), (".github/workflows/ci.yml", True, False), (".gitignore", True, False),
    ("HEAD:src/app.py", True, False), ("HEAD:.env", True, True), ("x/.aws/y", True, True), ("a/.local/share/keyrings/k", True, True),
])
def test_secret_paths(path, reads, secret):
    try:
        TABLE.check_path(path, reads=reads)
        found = False
    except readonly.No:
        found = True
    assert found == secret, path


def test_an_approval_needs_the_guards_rules_too(monkeypatch):
    """A command the read-only table approves is still not approved when the guard's policy
    rules do not certify it (the approval never overrides a guard that would ask)."""
    from system1_gateway.shell import structure

    assert readonly.approve("ls -la") is not None
    monkeypatch.setattr(structure, "ruled", lambda command, threshold: None)
    assert readonly.approve("ls -la") is None
    monkeypatch.setattr(structure, "ruled", lambda command, threshold: {"p_true": 1.0, "abstained": False})
    assert readonly.approve("ls -la") is None


def test_the_table_file_is_valid_json_with_its_about():
    data = json.loads(readonly.TABLE_PATH.read_text())
    assert "about" in data and data["rules"]
