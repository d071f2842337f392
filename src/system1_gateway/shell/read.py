"""Every simple command a shell command line would run, from tree-sitter's bash grammar.

`read(text)` returns a `Reading`: the parts in the order they appear (a part is one simple
command after its wrappers are taken off: `sudo env X=1 rm -rf ~` is the part `rm -rf ~`,
reached via `sudo`, `env`), and why the reading is incomplete when it is (bounds, parse
errors). The grammar is error-tolerant: a broken command still yields the parts it has, and
`Reading.broken` says the tree had errors (the caller then also judges the raw text).

What runs is found through: `&&`, `||`, `;`, `&`, newlines, pipelines, subshells, groups,
`if`/`for`/`while`/`case` bodies and function bodies; `$(…)`, backticks and `<(…)`/`>(…)` in
any word, assignment or unquoted heredoc body; `VAR=value` prefixes; the wrappers of
`wrappers.py`; shell strings (`bash -c`, `sh -c`, `su -c`, `eval`, `ssh host '…'`, `watch`,
`env -S`), heredocs and here-strings fed to a shell, and literal `echo`/`printf` text piped
into one; `find -exec/-execdir/-ok/-okdir`; and inline interpreter code (`inline.py`).

Opaque (what runs cannot be known from the text): a command name that is not a literal word
(`$(printf r)m`, `"$CMD"`, `${x}`), a shell fed from anything but literal text (`base64 -d |
sh`, `curl … | bash`, `bash <(curl …)`), `eval` of a variable, a shell string built at run
time, and a command name with characters outside ASCII after NFKC normalisation (look-alikes).
"""

from __future__ import annotations

import codecs
import re
import threading
import time
import unicodedata
from dataclasses import dataclass, field

from . import inline, wrappers

MAX_BYTES = 32_768  # parsed whole; beyond it the rest of the command is unsure
MAX_PARTS = 256
MAX_DEPTH = 8  # shell strings inside shell strings
MAX_NODE_DEPTH = 100  # syntax nesting ($( inside $( …): deeper is unsure, never a RecursionError
PARSE_BUDGET_S = 0.05  # tree-sitter's error recovery is super-linear on junk (`)))…`): bounded

_LANGUAGE = None
_local = threading.local()  # a tree-sitter Parser is not re-entrant: one per thread


def _parser():
    """tree-sitter's bash parser (imported here only: of the hooks, only the hook server loads it)."""
    global _LANGUAGE
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        if _LANGUAGE is None:
            _LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())
        parser = _local.parser = tree_sitter.Parser(_LANGUAGE)
    return parser


# tree-sitter-bash (0.23.3 … 0.25.1, with tree-sitter 0.24 … 0.26.1) reads out of bounds on some
# code points past the BMP — `{` then U+108712 segfaults the process more often than not, so one
# crafted command would kill the daemon. Bash's syntax is ASCII (no character past U+007F is
# special to it), so the parser is given every 4-byte UTF-8 sequence as U+10000, a plain word
# character like any other: same byte length, so every node's offsets still slice the original.
_FOUR_BYTES = re.compile(rb"[\xf0-\xf4][\x80-\xbf]{3}")
_SAFE_FOUR = "\U00010000".encode()


def _parse(data: bytes):
    """The syntax tree, or None when parsing ran past its time budget."""
    parser = _parser()
    data = _FOUR_BYTES.sub(_SAFE_FOUR, data)
    deadline = time.perf_counter() + PARSE_BUDGET_S
    try:
        return parser.parse(lambda offset, _point: data[offset:offset + 65536],
                            progress_callback=lambda *_: time.perf_counter() > deadline)
    except ValueError:  # cancelled; without reset() the next parse would resume this one
        parser.reset()
        return None


@dataclass
class Part:
    """One simple command that would run."""

    words: list[str | None]  # argv; None where a word is built at run time
    texts: list[str]  # each word as written (quotes kept)
    redirects: str = ""  # its redirections as written, each after a space
    via: tuple[str, ...] = ()  # the wrappers and shells it was reached through
    writes: list[str | None] = field(default_factory=list)  # files a `>`-like redirection overwrites
    appends: list[str] = field(default_factory=list)  # files `>>` adds to (their content is kept)
    opaque: str | None = None  # why what runs here cannot be known
    findings: list[tuple[str, str]] = field(default_factory=list)  # (rule id, why) from inline code
    stdin: str | None = None  # literal text fed on stdin (heredoc, here-string, echo | …)
    container: bool = False  # it only runs a shell string whose commands are parts of their own
    # `NAME=value` assignments it runs with, as written: its prefixes, `env`/`sudo` arguments, and
    # those of a shell that runs its string (`X=1 bash -c '…'`)
    assigns: list[str] = field(default_factory=list)
    # why its name or its environment was changed earlier in the same command (a function, a
    # `hash -p`, `export PATH=…`): no rule can know what it runs
    shadowed: str | None = None
    # why it runs code this reading cannot see, so that no rule may certify it harmless (a
    # package a runner fetches: `npx X`; a script on stdin from a file: `ssh host < x.sh`)
    runs_unread: str | None = None

    @property
    def name(self) -> str | None:
        return self.words[0] if self.words else None

    @property
    def text(self) -> str:
        """What the engine is shown: the words as written, then the redirections. The same
        command reads alike alone, chained, or under `sudo`/`bash -c`."""
        return (" ".join(self.texts) + self.redirects).strip()

    @property
    def text_with_assigns(self) -> str:
        """`text` after the assignments that can change what runs (`LD_PRELOAD=./x.so ls`): what
        the engine is shown of a part a safe rule matched but does not certify because of them."""
        shown = [a for a in self.assigns if not harmless_assignment(a)]
        return (" ".join(shown + self.texts) + self.redirects).strip()

    def slice(self, start: int, end: int | None = None, via: str = "") -> "Part":
        """The argv a wrapper runs (`sudo rm -rf ~` → `rm -rf ~`), with this part's redirections."""
        end = len(self.words) if end is None else end
        return Part(words=self.words[start:end], texts=self.texts[start:end], redirects=self.redirects,
                    via=self.via + ((via,) if via else ()), writes=self.writes, appends=self.appends,
                    stdin=self.stdin, assigns=list(self.assigns), shadowed=self.shadowed)

    def stdout(self) -> str | None:
        """What it writes on stdout when that is fixed text (`echo …`, `printf …`, `cat <<EOF`)."""
        name = (self.name or "").rsplit("/", 1)[-1]
        words = [w for w in self.words if w is not None]
        if len(words) < len(self.words):
            return None
        if name == "echo":
            if any("\\" in w for w in words[1:]):
                return None  # `echo -e '\x72m'` (and dash's echo) decodes escapes: not the text as written
            return " ".join(w for w in words[1:] if not re.fullmatch(r"-[neE]+", w)) + "\n"
        if name == "printf" and len(words) >= 2:
            if "\\" in words[1] or "%" in words[1]:
                return None  # a format that decodes escapes or formats its arguments
            return " ".join(words[1:])
        if name == "cat" and len(words) == 1 and self.stdin is not None:
            return self.stdin
        return None


@dataclass
class Reading:
    parts: list[Part] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)  # bounds passed
    broken: bool = False  # the parse tree had errors
    # With errors: the smallest statements that hold them, as written (judged whole by the
    # engine, so that what the grammar could not read is not diluted by what it could).
    unread: list[str] = field(default_factory=list)
    # what the command defines for the commands after it: functions and `hash -p` names (name →
    # kind), aliases (name → value), variables that can change what runs (`export PATH=…`)
    defined: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    env_set: list[str] = field(default_factory=list)
    assigned: list[str] = field(default_factory=list)  # names set by assignment statements (`X=1`, `export X=1`)


# Look-alike letters (Unicode confusables of Latin letters in command names), for the message:
# any non-ASCII letter left after NFKC makes the name opaque whatever it looks like.
_LOOKALIKES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "м": "m", "т": "t", "к": "k", "н": "h", "в": "b", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g",
    "ο": "o", "α": "a", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u", "χ": "x", "ε": "e",
})

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# A shell variable that programs or the shell itself read (`PATH`, `BASH_ENV`, `GIT_PAGER`): set
# without `export`, lower-case names (`line`, `f`) are the script's own and reach no program.
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ASSIGNED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?\+?=(.*)$", re.S)

# Assignments that cannot change what a command runs or which files it writes: locale, time
# zone, terminal and colour settings, identities in git commits, the AWS profile and region.
# Everything else can (`PATH`, `LD_PRELOAD`, `BASH_ENV`, `ENV`, `GIT_*`, `*PAGER`, `EDITOR`,
# `LESSOPEN`, `PYTHONSTARTUP`, `NODE_OPTIONS`, `KUBECONFIG`, a tool's own `*_COMMAND`, …): an
# allow-list, so that a name it does not know is never taken as harmless.
HARMLESS_ENV = re.compile(
    r"^(LC_[A-Z]+|LANG|LANGUAGE|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|COLORTERM|TERM|COLUMNS|LINES"
    r"|IFS|CI|PYTHONUNBUFFERED|PYTHONDONTWRITEBYTECODE|PYTHONIOENCODING|RUST_BACKTRACE|RUST_LOG"
    r"|GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)|GIT_TERMINAL_PROMPT|AWS_PROFILE|AWS_REGION|AWS_DEFAULT_REGION)$")
# A pager set to a plain reader (`GIT_PAGER=cat git log`, `AWS_PAGER=""`) runs nothing else.
_PAGER_ENV = re.compile(r"^([A-Z]+_)?PAGER$")
_PLAIN_PAGER = re.compile(r"^(cat|less|more|)( +-[A-Za-z]+)*$")


def harmless_assignment(word: str) -> bool:
    """`NAME=value` (as written, quotes kept) cannot change what a command runs."""
    m = _ASSIGNED.match(word)
    if m is None:
        return False
    if HARMLESS_ENV.match(m.group(1)):
        return True
    value = m.group(3)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return bool(_PAGER_ENV.match(m.group(1)) and _PLAIN_PAGER.match(value))
_DEV_NULL = re.compile(r"^/dev/(null|zero|stdout|stderr|tty|fd/\d+|pts/\d+)$")


def read(text: str) -> Reading:
    reading = Reading()
    _Reader(reading, 0, ()).run(text)
    return reading


class _Reader:
    def __init__(self, reading: Reading, depth: int, via: tuple[str, ...], env: tuple[str, ...] = (),
                 stdin: str | None = None, stdin_from: tuple[str, str] | None = None):
        self.reading = reading
        self.depth = depth
        self.via = via
        self.env = env  # assignments the shell running this text was given (`X=1 bash -c '…'`)
        # the stdin of the shell running this text (`ssh host 'bash -s' <<EOF`): its literal text,
        # or where it comes from when that cannot be read (("pipe", producer) or ("file", name))
        self.stdin_in = stdin
        self.stdin_from = stdin_from
        self.src = b""
        self.appended: list[str] = []  # `>>` targets seen while reading the current command

    # -- entry ----------------------------------------------------------------------------
    def run(self, text: str) -> None:
        if self.depth > MAX_DEPTH:
            self.unsure(f"shell strings nested deeper than {MAX_DEPTH}")
            return
        if "\x00" in text:  # no shell passes a NUL on; tree-sitter's recovery from them never ends
            self.unsure("the command contains NUL bytes")
            self.reading.broken = True
            text = text.replace("\x00", " ")
        data = text.encode("utf-8", "replace")
        if len(data) > MAX_BYTES:
            self.unsure(f"the command is longer than {MAX_BYTES} bytes: only the first {MAX_BYTES} were read")
            data = data[:MAX_BYTES]
        self.src = data
        tree = _parse(data)
        if tree is None:
            self.unsure(f"the command could not be parsed within {PARSE_BUDGET_S * 1000:g} ms")
            self.reading.broken = True
            return
        if tree.root_node.has_error:
            self.reading.broken = True
            if self.depth == 0:
                self.reading.unread = self.unread(tree.root_node) or [text]
        self.walk(tree.root_node, 0)

    def unread(self, root) -> list[str]:
        """The statements holding parse errors: an ERROR node with the statement before it
        (`echo 'unterminated`), or the smallest list or pipeline element that holds one."""
        found: list[str] = []
        stack = [root]
        while stack and len(found) < MAX_PARTS:
            node = stack.pop()
            if node.type not in ("program", "list", "pipeline", "compound_statement", "subshell", "do_group"):
                found.append(self.text(node))
                continue
            previous = None
            for child in node.named_children:
                if child.type == "ERROR" or child.is_missing:
                    while previous is not None and previous.type in ("list", "pipeline") and previous.named_children:
                        previous = previous.named_children[-1]  # only the statement right before it
                    start = previous.start_byte if previous is not None and previous.type != "comment" else child.start_byte
                    found.append(self.src[start:child.end_byte].decode("utf-8", "replace"))
                elif child.has_error:
                    stack.append(child)
                previous = child
        return [s.strip() for s in found if s.strip()]

    def unsure(self, why: str) -> None:
        if why not in self.reading.unsure:
            self.reading.unsure.append(why)

    def add(self, part: Part) -> None:
        if len(self.reading.parts) >= MAX_PARTS:
            self.unsure(f"more than {MAX_PARTS} commands: the rest were not read")
            return
        if self.env:
            part.assigns = [*self.env, *(a for a in part.assigns if a not in self.env)]
        base = (part.name or "").rsplit("/", 1)[-1]
        if part.shadowed is None:
            if part.name in self.reading.defined or base in self.reading.defined:
                kind = self.reading.defined.get(part.name or "") or self.reading.defined[base]
                part.shadowed = f"`{shorten(part.name or '')}` is defined earlier in this command ({kind})"
            elif self.reading.env_set:
                names = ", ".join(dict.fromkeys(self.reading.env_set))
                part.shadowed = f"{shorten(names)} set earlier in this command can change what runs"
        self.reading.parts.append(part)
        self.defines(part)

    def defines(self, part: Part) -> None:
        """Record what a part defines for the commands after it: aliases (`alias ll='rm -rf'`),
        `hash -p` names, variables set by `read`, `printf -v`, or a wrapped `export`/`declare`."""
        words = part.words
        base = (part.name or "").rsplit("/", 1)[-1]
        args = words[1:]
        if base == "alias":
            for w in args:
                if w is not None and "=" in w and not w.startswith("-"):
                    name, value = w.split("=", 1)
                    self.reading.aliases[name] = value
        elif base == "hash" and "-p" in args:
            for w in args[args.index("-p") + 2:]:
                if w is not None and not w.startswith("-"):
                    self.reading.defined[w] = "hash -p"
        elif base in ("read", "mapfile", "readarray", "printf", "export", "declare", "typeset", "local", "readonly",
                      "getopts"):
            names: list[str | None]
            if base == "printf":
                names = [args[i + 1] for i, w in enumerate(args[:-1]) if w == "-v"]
            elif base in ("read", "mapfile", "readarray", "getopts"):
                names = [w for w in args if w is not None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w)]
            else:
                names = [w.split("=", 1)[0] for w in args if w is not None and _ASSIGNMENT.match(w)]
            exported = base == "export" or (base in ("declare", "typeset") and any(
                w is not None and w.startswith("-") and "x" in w for w in args))
            for var in names:
                if var is None or (not harmless_assignment(f"{var}=") and (exported or _ENV_NAME.match(var))):
                    self.reading.env_set.append(var or "a variable")

    def brace_command(self, node, level: int) -> None:
        """`{rm,-rf,~/w}` where a command stands: bash expands it into the command's words, the
        grammar reads an error; the expanded text is read as a command line of its own."""
        children = node.children
        for brace, after in zip(children, children[1:], strict=False):
            if brace.type == "{" and after.start_byte == brace.end_byte:
                raw = self.src[brace.start_byte:after.end_byte].decode("utf-8", "replace")
                m = re.match(r"((?:[^\s'\"\\]|\\.|'[^']*'|\"(?:[^\"\\]|\\.)*\")+)(.*)", raw, re.S)
                if m is None:
                    continue
                pieces = brace_expand(m.group(1))
                if len(pieces) > 1:
                    self.sub(" ".join(pieces) + m.group(2), level, self.via)

    def assigned(self, node) -> None:
        """A variable set by a statement (`PATH=.:$PATH; ls`, `export GIT_PAGER=…`): it changes what
        the commands after it run, unless the name is a harmless one."""
        name = node.child_by_field_name("name")
        if name is None or harmless_assignment(self.text(node)):
            return
        parent = node.parent
        exported = parent is not None and parent.type == "declaration_command" and (
            self.text(parent).startswith("export") or re.match(r"(declare|typeset)\s+-\w*x", self.text(parent)))
        if exported or _ENV_NAME.match(self.text(name)):
            self.reading.env_set.append(self.text(name))

    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # -- statements -------------------------------------------------------------------------
    def walk(self, node, level: int, stdin: str | None = None, producer: Part | None = None) -> Part | None:
        """Read `node`; return the last top-level part it ran (for redirections and pipes)."""
        if level > MAX_NODE_DEPTH:
            self.unsure(f"the command nests deeper than {MAX_NODE_DEPTH} levels")
            return None
        kind = node.type
        if kind == "command":
            return self.command(node, level, [], stdin, producer)
        if kind == "redirected_statement":
            return self.redirected(node, level, stdin, producer)
        if kind == "pipeline":
            return self.pipeline(node.named_children, level, stdin, producer)
        if kind in ("comment", "heredoc_body", "heredoc_start", "heredoc_end"):
            return None
        if kind == "variable_assignment":
            self.assigned(node)
            name = node.child_by_field_name("name")
            if name is not None:
                self.reading.assigned.append(self.text(name))
        elif kind == "ERROR":
            self.brace_command(node, level)
        elif kind == "function_definition":
            name = node.child_by_field_name("name")
            if name is not None:
                self.reading.defined[self.text(name)] = "a function"
        last = None
        for child in node.named_children:
            got = self.walk(child, level + 1)
            last = got or last
        return last

    def pipeline(self, commands, level: int, stdin: str | None = None, producer: Part | None = None) -> Part | None:
        last = producer
        for i, child in enumerate(commands):
            last = self.walk(child, level + 1, stdin if i == 0 else None, last if (i or producer) else None)
        return last

    def redirected(self, node, level: int, stdin: str | None, producer: Part | None) -> Part | None:
        body = node.child_by_field_name("body")
        redirects = node.children_by_field_name("redirect")
        if body is None:  # a bare `> file` truncates it
            writes, _ = self.redirections(redirects, level)
            bare = Part(words=[], texts=[], redirects=self.shown(redirects), via=self.via, writes=writes)
            self.add(bare)
            return bare
        if body.type == "command":
            part = self.command(body, level + 1, redirects, stdin, producer)
        else:
            # The grammar hangs a heredoc written after `a && cat` on the whole list; a shell
            # gives it (and any redirection) to the last command: read the body, then attach.
            before = len(self.reading.parts)
            part = self.walk(body, level + 1, stdin, producer) if body is not None else None
            if part is not None and len(self.reading.parts) > before:
                self.attach(part, redirects, level)
        return self.after_redirects(part, redirects, level)

    def attach(self, part: Part, redirects, level: int) -> None:
        self.appended = []
        writes, fed = self.redirections(redirects, level)
        part.writes.extend(writes)
        part.appends.extend(self.appended)
        self.appended = []
        part.redirects += self.shown(redirects)
        if fed is not None and part.stdin is None:
            part.stdin = fed
            if not part.opaque:
                self.feed(part, fed, level)

    def after_redirects(self, part: Part | None, redirects, level: int) -> Part | None:
        """`cat <<EOF | sh`: the grammar puts the pipeline after a heredoc inside the redirect."""
        for redirect in redirects:
            for child in redirect.named_children:
                if child.type in ("pipeline", "command", "list", "redirected_statement"):
                    nodes = child.named_children if child.type == "pipeline" else [child]
                    part = self.pipeline(nodes, level + 1, None, part)
        return part

    def shown(self, redirects) -> str:
        """The redirections as the engine is shown them: operators and targets, not heredoc bodies."""
        shown = ""
        for redirect in redirects:
            if redirect.type == "herestring_redirect":
                shown += " " + self.text(redirect)
            elif redirect.type == "heredoc_redirect":  # `<<EOF > notes.md`: the body is data
                for child in redirect.named_children:
                    if child.type == "heredoc_start":
                        shown += " <<" + self.text(child)
                    elif child.type == "file_redirect":
                        shown += " " + self.text(child)
            elif redirect.type == "file_redirect":
                dests = redirect.children_by_field_name("destination")
                end = dests[0].end_byte if dests else redirect.end_byte
                shown += " " + self.src[redirect.start_byte:end].decode("utf-8", "replace")
        return shown

    def redirections(self, redirects, level: int) -> tuple[list[str | None], str | None]:
        """(files overwritten, literal text fed on stdin) of redirection nodes."""
        writes: list[str | None] = []
        fed = None
        for redirect in redirects:
            if redirect.type == "file_redirect":
                target = self.write_target(redirect, level)
                if target != "":
                    writes.append(target)
            elif redirect.type == "heredoc_redirect":
                quoted = False
                for child in redirect.named_children:
                    if child.type == "heredoc_start":
                        quoted = any(q in self.text(child) for q in ("'", '"', "\\"))
                    elif child.type == "heredoc_body":
                        fed = self.text(child)
                        if not quoted:  # an unquoted body expands: its substitutions run
                            self.substitutions(child, level)
                    elif child.type == "file_redirect":
                        target = self.write_target(child, level)
                        if target != "":
                            writes.append(target)
            elif redirect.type == "herestring_redirect":
                for child in redirect.named_children:
                    fed = self.literal(child, level)
        return writes, fed

    def write_target(self, redirect, level: int) -> str | None:
        """The file a redirection overwrites; '' when it writes nothing that exists (a read,
        an append, a descriptor, /dev/null); None when the name is built at run time."""
        ops = [c.type for c in redirect.children if not c.is_named]
        dest = redirect.child_by_field_name("destination")
        if dest is None or not ops:
            return ""
        op = ops[0]
        if op in (">>", "&>>"):
            target = self.literal(dest, level)
            if target:
                self.appended.append(target)
            return ""
        if op not in (">", ">|", "&>", ">&", "&>|"):
            return ""  # <, <&, <>: reads and descriptor moves
        if dest.type == "number" or self.text(dest).startswith("&") or self.text(dest) == "-":
            return ""
        target = self.literal(dest, level)
        if target is not None and _DEV_NULL.match(target):
            return ""
        return target

    # -- words ------------------------------------------------------------------------------
    def literal(self, node, level: int) -> str | None:
        """The word's value when it is fixed text (quotes and escapes removed); None when it
        is built at run time. Substitutions inside it run: they are read as parts."""
        kind = node.type
        if kind in ("word", "number", "command_name", "test_operator", "extglob_pattern", "regex"):
            if kind == "command_name" and node.named_children:
                return self.literal(node.named_children[0], level)
            return _unescape(self.text(node))
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(self.text(node)[2:-1])
        if kind == "string":
            fixed = True
            pieces = []
            for child in node.named_children:
                if child.type == "string_content":
                    pieces.append(_unescape_dquoted(self.text(child)))
                else:
                    fixed = False
                    self.substitutions(child, level)
            if not fixed:
                return None
            return "".join(pieces) if node.named_children else self.text(node)[1:-1]
        if kind == "concatenation":
            values = [self.literal(child, level) for child in node.named_children]
            literals = [v for v in values if v is not None]
            if len(literals) < len(values):
                return None
            # the grammar splits words such as `{}` in two; text between children is literal
            return _unescape(self.text(node)) if not any(c.type in ("string", "raw_string", "ansi_c_string")
                                                         for c in node.named_children) else "".join(literals)
        self.substitutions(node, level)
        return None

    def substitutions(self, node, level: int) -> None:
        """Read the commands inside `$(…)`, backticks and `<(…)` anywhere under `node`."""
        if level > MAX_NODE_DEPTH:
            self.unsure(f"the command nests deeper than {MAX_NODE_DEPTH} levels")
            return
        if node.type in ("command_substitution", "process_substitution"):
            for child in node.named_children:
                self.walk(child, level + 1)
            return
        for child in node.named_children:
            self.substitutions(child, level + 1)

    # -- one simple command -------------------------------------------------------------------
    def command(self, node, level: int, extra_redirects, stdin: str | None, producer: Part | None) -> Part | None:
        words: list[str | None] = []
        texts: list[str] = []
        dynamic_nodes = []
        redirects = list(extra_redirects)
        assigns: list[str] = []
        for index, child in enumerate(node.children):
            if not child.is_named:
                continue
            if child.type == "variable_assignment":
                value = child.child_by_field_name("value")
                if value is not None:
                    self.substitutions(value, level)
                assigns.append(self.text(child))
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.append(child)
            elif child.type == "command_name" or node.field_name_for_child(index) == "argument":
                value = self.literal(child, level)
                raw = self.text(child)
                pieces = brace_expand(raw) if "{" in raw else [raw]
                if len(pieces) > 1:  # `{rm,-rf,~/w}`, `git push {-f,origin}`: the words bash passes on
                    for piece in pieces:
                        unquoted = _unquote(piece)
                        if unquoted is None:
                            dynamic_nodes.append((len(words), child))
                        words.append(unquoted)
                        texts.append(piece)
                    continue
                if value is None:
                    dynamic_nodes.append((len(words), child))
                words.append(value)
                texts.append(raw)
            else:
                self.substitutions(child, level)
        for redirect in redirects:
            if redirect.type == "file_redirect":
                # tree-sitter-bash #233: in `rm 2>/dev/null -rf /` the words after the target
                # are hung on the redirection; a shell passes them to the command
                for extra in redirect.children_by_field_name("destination")[1:]:
                    value = self.literal(extra, level)
                    if value is None:
                        dynamic_nodes.append((len(words), extra))
                    words.append(value)
                    texts.append(self.text(extra))
        if not words:
            return None
        shown = self.shown(redirects)
        self.appended = []
        writes, fed = self.redirections(redirects, level)
        appends, self.appended = self.appended, []
        if fed is None and stdin is None and producer is None:
            stdin = self.stdin_in  # the shell's own stdin (`ssh host 'bash -s' <<EOF`)
        part = Part(words=words, texts=texts, redirects=shown, via=self.via, writes=writes, appends=appends,
                    stdin=fed if fed is not None else stdin, assigns=assigns)
        self.resolve(part, level, dynamic_nodes, producer, piped=producer is not None and fed is None)
        return part

    def resolve(self, part: Part, level: int, dynamic, producer: Part | None, piped: bool) -> None:
        """Take wrappers off, read shell strings and inline code, then record the part."""
        name = part.words[0]
        if name is None:
            node = dynamic[0][1] if dynamic and dynamic[0][0] == 0 else None
            shown = self.text(node) if node is not None else "?"
            known = _KNOWN_PROGRAM.match(shown)
            if known is None or (len(part.texts) > 0 and part.texts[0] != shown):
                part.opaque = f"the command name `{shorten(shown)}` is built at run time"
                self.add(part)
                return
            # `"$VIRTUAL_ENV/bin/python"`, `$SHELL -c …`, `$EDITOR f`: a program a well-known variable names
            variable, path = known.group(1), known.group(2)
            name = part.words[0] = (path.lstrip("/") if path else _VARIABLE_PROGRAM.get(variable, "$" + variable))
            if path and variable in ("HOME", "PWD", "OLDPWD"):
                part.runs_unread = f"`{shorten(shown)}` is a program in a directory of the user's"
        elif _glob_name((part.texts[0] if part.texts else "").rsplit(" ", 1)[-1] if part.runs_unread
                        else (part.texts[0] if part.texts else "")):
            part.opaque = (f"the command name `{shorten(part.texts[0])}` is a pattern: the shell runs whichever "
                           "file it matches")
            self.add(part)
            return
        normal = unicodedata.normalize("NFKC", name)
        if not normal.isascii():
            reads = normal.translate(_LOOKALIKES)
            hint = f" (reads as `{reads}`)" if reads.isascii() else ""
            part.opaque = f"the command name `{shorten(name)}` has non-ASCII or look-alike characters{hint}"
            self.add(part)
            return
        part.words[0] = normal
        if _ASSIGNMENT.match(normal) and len(part.words) > 1:  # `sudo X=1 rm …`: the assignment is not the name
            inner = part.slice(1, None)
            inner.assigns.append(part.texts[0])
            self.resolve(inner, level, [(i - 1, n) for i, n in dynamic if i >= 1], producer, piped)
            return
        if normal in self.reading.aliases and normal not in self.reading.defined:
            # an alias defined earlier in this command: what runs is its value with these words
            part.container = True
            self.add(part)
            value = self.reading.aliases.pop(normal)  # an alias is not expanded inside itself
            try:
                self.sub(" ".join([value, *part.texts[1:]]), level, part.via + (f"alias {normal}",))
            finally:
                self.reading.aliases[normal] = value
            return
        base = normal.rsplit("/", 1)[-1]
        plan = wrappers.unwrap(base, part.words)
        if plan.opaque:
            part.opaque = plan.opaque
            self.add(part)
            return
        if plan.inner_at and plan.package:  # `npx X …`: X is a package's code, read as X but never certified
            self.package(part, plan.inner_at, base, level, dynamic, producer, piped)
            return
        if plan.inner_at:  # the wrapper itself only runs what it wraps
            inner = part.slice(plan.inner_at, plan.inner_end, base)
            if base == "env":
                inner.assigns.extend(t for w, t in zip(part.words[1:plan.inner_at], part.texts[1:plan.inner_at], strict=True)
                                     if w is not None and _ASSIGNMENT.match(w))
            self.resolve(inner, level, [(i - plan.inner_at, n) for i, n in dynamic if i >= plan.inner_at],
                         producer, piped)
            return
        if plan.script is not None or plan.script_dynamic:
            self.add(part)
            if plan.script is None:
                part.opaque = f"`{base}` runs a shell string built at run time"
            elif {"xargs", "parallel"} & set(part.via) and re.search(r"\{[^}\s]*\}", plan.script):
                part.opaque = f"`{base}` runs a shell string that `{part.via[-1]}` fills in from its input"
            else:
                part.container = True
                fed = part.stdin if part.stdin is not None else (producer.stdout() if piped and producer else None)
                source: tuple[str, str] | None = None
                if fed is None and piped:
                    source = ("pipe", producer.text if producer else "a pipe")
                elif fed is None and stdin_file(part.redirects):
                    source = ("file", stdin_file(part.redirects) or "")
                self.sub(plan.script, level, part.via + (base,), part.assigns, fed, source or self.stdin_from)
            return
        if plan.reads_stdin_script:
            self.add(part)
            code = part.stdin if part.stdin is not None else (producer.stdout() if piped and producer else None)
            from_file = stdin_file(part.redirects)
            if code is not None:
                part.container = True
                self.sub(code, level, part.via + (base,), part.assigns)
            elif piped or (from_file is None and self.stdin_from is not None and self.stdin_from[0] == "pipe"):
                text = (producer.text if producer else "a pipe") if piped else (self.stdin_from or ("", ""))[1]
                part.opaque = f"`{base}` runs text from `{shorten(text)}`, which cannot be read before it runs"
            elif from_file is not None or self.stdin_from is not None:
                where = from_file or (self.stdin_from or ("", ""))[1]
                if from_file is None:  # the file the outer command reads: the engine sees it with this part
                    part.redirects += f" < {where}"
                part.runs_unread = f"`{base}` runs the script it reads from `{shorten(where)}`"
            return
        runs = [(i, n) for i, n in dynamic if base in ("eval", "source", ".") or n.type == "process_substitution"]
        if runs and (base in ("eval", "source", ".") or base in wrappers.SHELLS):
            why = self.runs_output_of(runs)
            if why:
                part.opaque = f"`{base}` runs {why}"
        lang = inline.language(base, part.words)
        if lang is not None:
            fed = part.stdin if part.stdin is not None else (producer.stdout() if piped and producer else None)
            code = inline.code_of(lang, part.words, fed)
            if code is None and lang in ("python", "node", "perl", "ruby", "php", "awk"):
                why = self.code_built_at_run_time(lang, part.words, dynamic)
                if why:
                    part.opaque = f"`{base}` runs code built at run time ({why})"
            if code is None and piped and fed is None and lang != "sql" and inline.reads_stdin(lang, part.words):
                part.opaque = (f"`{base}` runs code from `{shorten(producer.text) if producer else 'a pipe'}`, "
                               "which cannot be read before it runs")
            if code is not None:
                found = inline.scan(lang, code)
                part.findings.extend(found.findings)
                for script in found.shell:
                    self.sub(script, level, part.via + (f"{base} code",))
                if found.dynamic_shell:
                    part.opaque = f"`{base}` code runs a shell command built at run time"
        self.add(part)
        for start, end in wrappers.exec_segments(base, part.words):
            segment = part.slice(start, end, base)
            segment.redirects, segment.writes, segment.stdin = "", [], None
            self.resolve(segment, level, [(i - start, n) for i, n in dynamic if start <= i < end], None, False)

    def code_built_at_run_time(self, lang: str, words: list[str | None], dynamic) -> str | None:
        """The inline code (`python3 -c "$(… | base64 -d)"`, `node -e "$CODE"`) is a substitution's
        output or a whole variable: what it runs cannot be read. Code with a variable inside
        literal text (`python3 -c "print('$HOME')"`) is left to the engine."""
        at: int | None = None
        options = inline.CODE_OPTIONS.get(lang, ())
        for i, w in enumerate(words[1:], 1):
            if lang == "awk":
                if w is None or not w.startswith("-") or len(w) == 1:
                    at = i if w is None else None
                    break
                continue
            if w in options:
                at = i + 1
                break
        node = next((n for i, n in dynamic if i == at), None) if at is not None else None
        if node is None:
            return None
        if any(True for _ in _descendants(node, ("command_substitution", "process_substitution"))):
            return f"`{shorten(self.text(node), 40)}`"
        if re.fullmatch(r'"?\$(\{[^}]*\}|\w+)"?', self.text(node)):
            return f"the variable `{shorten(self.text(node), 40)}`"
        return None

    def runs_output_of(self, dynamic) -> str | None:
        """Why running the output of these words is unsure, or None when each is the output of
        a command that prints its own setup code (`eval "$(ssh-agent -s)"`, `source <(kubectl
        completion bash)`): those commands are read as parts and judged like any other."""
        for _, node in dynamic:
            subs = [n for n in _descendants(node, ("command_substitution", "process_substitution"))]
            if not subs or _has_variable_outside(node):
                return f"text built at run time (`{shorten(self.text(node))}`)"
            for sub in subs:
                names = [_fixed_name(self.text(c.child_by_field_name("name"))) for c in
                         _descendants(sub, ("command",)) if c.child_by_field_name("name") is not None]
                for name in names:
                    if name is None or name.rsplit("/", 1)[-1] in PRODUCES_UNKNOWN_CODE:
                        return f"text from `{shorten(self.text(sub))}`, which cannot be read before it runs"
        return None

    def sub(self, script: str, level: int, via: tuple[str, ...], env: list[str] | tuple[str, ...] = (),
            stdin: str | None = None, stdin_from: tuple[str, str] | None = None) -> None:
        inherited = tuple(dict.fromkeys([*self.env, *(a for a in env if not harmless_assignment(a))]))
        _Reader(self.reading, self.depth + 1, via, inherited, stdin, stdin_from).run(script)

    def package(self, part: Part, at: int, base: str, level: int, dynamic, producer: Part | None, piped: bool) -> None:
        """`npx rimraf dist`, `uvx ruff@0.5 check`, `yarn build`: the package's executable is read
        as the command of that name (so `rimraf` is `rm`'s), shown to the engine with its runner,
        and never certified harmless: the code that runs is the package's, not a known tool's."""
        inner = part.slice(at, None, base)
        name = inner.words[0]
        if name is not None:
            inner.words[0] = _PACKAGE_VERSION.sub("", name) or name
            inner.runs_unread = f"`{base}` runs the package `{shorten(name, 40)}`, whose code no rule has read"
        inner.texts[0] = " ".join(part.texts[:at + 1])
        self.resolve(inner, level, [(i - at, n) for i, n in dynamic if i >= at], producer, piped)

    def feed(self, part: Part, fed: str, level: int) -> None:
        """A heredoc attached after the fact (`a && sh <<EOF`): read it if `part` runs it."""
        base = (part.name or "").rsplit("/", 1)[-1]
        if wrappers.unwrap(base, part.words).reads_stdin_script:
            self.sub(fed, level, part.via + (base,))


# A command name under a well-known variable: a program of a tool's installation (the venv's
# python), of the user's (`$HOME/bin/x`: never certified), or the user's shell, editor, pager.
_KNOWN_PROGRAM = re.compile(
    r'^"?\$\{?(VIRTUAL_ENV|CONDA_PREFIX|PYENV_ROOT|JAVA_HOME|GOROOT|GOPATH|GOBIN|CARGO_HOME|NVM_DIR|ANDROID_HOME|'
    r'ANDROID_SDK_ROOT|HOME|PWD|OLDPWD|SHELL|BASH|EDITOR|VISUAL|PAGER)\}?((?:/[A-Za-z0-9._+-]+)*)"?$')
_VARIABLE_PROGRAM = {"SHELL": "sh", "BASH": "bash"}  # EDITOR, VISUAL, PAGER: no rule knows them (the engine)


def _glob_name(text: str) -> bool:
    """The command name as written has an unquoted glob (`/bin/r?`, `/usr/bin/r[m]`, `*`)."""
    if text in ("[", "[[") or not ("*" in text or "?" in text or "[" in text):
        return False
    bare = re.sub(r"\\.|'[^']*'|\"(?:[^\"\\]|\\.)*\"", "", text)
    return bool(re.search(r"[*?]|\[[^]]*\]", bare))


MAX_BRACE_WORDS = 256


def brace_expand(raw: str) -> list[str]:
    """Bash's brace expansion of one word as written (quotes kept): `{rm,-rf}` → `rm`, `-rf`;
    `a{1..3}` → `a1 a2 a3`. Quoted braces, `${…}` and `{}` are left alone."""
    out: list[str] = []
    stack = [raw]
    while stack and len(out) < MAX_BRACE_WORDS:
        word = stack.pop(0)
        found = _first_brace(word)
        if found is None:
            out.append(word)
            continue
        start, end, alternatives = found
        stack[:0] = [word[:start] + alt + word[end + 1:] for alt in alternatives]
    return out + stack


def _first_brace(word: str) -> tuple[int, int, list[str]] | None:
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = word.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            m = re.compile(r'"(?:[^"\\]|\\.)*"').match(word, i)
            i = m.end() if m else n
            continue
        if c == "{" and (i == 0 or word[i - 1] != "$"):
            depth, k, commas = 0, i, []
            while k < n:
                d = word[k]
                if d == "\\":
                    k += 2
                    continue
                if d in "'\"":
                    m = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"").match(word, k)
                    k = m.end() if m else n
                    continue
                if d == "{":
                    depth += 1
                elif d == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif d == "," and depth == 1:
                    commas.append(k)
                k += 1
            if k < n and depth == 0:
                if commas:
                    bounds = [i, *commas, k]
                    return i, k, [word[a + 1:b] for a, b in zip(bounds, bounds[1:], strict=False)]
                seq = _sequence(word[i + 1:k])
                if seq is not None:
                    return i, k, seq
        i += 1
    return None


def _sequence(body: str) -> list[str] | None:
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?", body)
    if m is None:
        return None
    if m.group(1) is not None:
        a, b = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        values = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
        return [str(v) for v in list(values)[:MAX_BRACE_WORDS]]
    a, b = ord(m.group(4)), ord(m.group(5))
    step = abs(int(m.group(6) or 1)) or 1
    return [chr(v) for v in range(a, b + (1 if b >= a else -1), step if b >= a else -step)][:MAX_BRACE_WORDS]


def _unquote(piece: str) -> str | None:
    """A word as written, with its quotes removed; None when it expands something at run time."""
    out, i, n = [], 0, len(piece)
    while i < n:
        c = piece[i]
        if c == "\\":
            out.append(piece[i + 1:i + 2])
            i += 2
        elif c == "'":
            j = piece.find("'", i + 1)
            if j < 0:
                return None
            out.append(piece[i + 1:j])
            i = j + 1
        elif c == "$" and piece[i + 1:i + 2] == "'":
            j = piece.find("'", i + 2)
            if j < 0:
                return None
            out.append(_ansi_c(piece[i + 2:j]))
            i = j + 1
        elif c == '"':
            m = re.compile(r'"((?:[^"\\]|\\.)*)"').match(piece, i)
            if m is None or re.search(r"[$`]", m.group(1)):
                return None
            out.append(_unescape_dquoted(m.group(1)))
            i = m.end()
        elif c in "$`":
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out)


# A package's version or spec after its name (`prettier@3`, `@scope/pkg@latest`, `black==24.1`)
_PACKAGE_VERSION = re.compile(r"(?<=.)@[^/@]*$|[=<>~!]=.*$")
# `< file` among a part's redirections (not a heredoc, here-string or descriptor)
_STDIN_FILE = re.compile(r"(?:^|\s)0?<(?![<&(])\s*(\S+)")


def stdin_file(redirects: str) -> str | None:
    """The file a part reads on stdin (`< dump.sql`), as written, or None."""
    m = _STDIN_FILE.search(redirects)
    return m.group(1) if m else None


# Commands whose output, run as code, is unknown text: downloads, decoders, files, variables.
PRODUCES_UNKNOWN_CODE = frozenset({
    "curl", "wget", "fetch", "http", "https", "xh", "aria2c", "nc", "ncat", "socat", "telnet", "ssh", "scp",
    "base64", "base32", "basenc", "xxd", "od", "openssl", "gpg", "age", "uudecode", "rev", "tr", "sed", "awk",
    "perl", "python", "python3", "node", "ruby", "php", "printf", "echo", "cat", "zcat", "gzip", "gunzip", "bzip2",
    "xz", "unxz", "zstd", "tar", "unzip", "head", "tail", "cut", "dd", "iconv", "jq", "yq", "envsubst",
    "eval", "read", "pbpaste", "xclip", "xsel", "wl-paste", "git",
})


def _descendants(node, kinds: tuple[str, ...]):
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in kinds:
            yield current
        stack.extend(reversed(current.named_children))


def _has_variable_outside(node) -> bool:
    """A `$VAR`/`${…}` in the word outside its command substitutions."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("simple_expansion", "expansion"):
            return True
        if current.type not in ("command_substitution", "process_substitution"):
            stack.extend(current.named_children)
    return False


def _fixed_name(text: str) -> str | None:
    """A command name as written, when it is plain text (no expansion, no quotes to undo)."""
    return None if re.search(r"[$`\"'(]", text) else text


def shorten(text: str, limit: int = 60) -> str:
    """One printable line of at most `limit` characters (parts of commands reach terminals and
    messages: no control characters, no newlines)."""
    text = "".join(c if c.isprintable() else " " for c in " ".join(text.split()))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""))


def _unescape_dquoted(text: str) -> str:
    return re.sub(r'\\([$`"\\])', r"\1", text.replace("\\\n", ""))


def _ansi_c(body: str) -> str:
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body
