"""Hand-written rules that give each extracted command its `kind` (then reviewed; overrides.json
holds the reviewed exceptions). A command line is split into simple commands (on `&&`, `||`, `;`,
`|`, newlines, outside quotes); each part gets a kind and the line takes the most severe one:

    destructive > write > network > run > other > read

  read         only inspects: ls, cat, grep/rg, find (no -exec/-delete), head/tail, wc, git status/diff/
               log/show/branch (listing), sed -n, jq, which, --version/--help, echo/printf, cd, sleep ...
  write        creates or edits files/state without losing data: mkdir, touch, cp, chmod, tee, a `>`
               redirect to a new or scratch file, git add/commit/checkout -b/stash (push)/config ...
  run          runs project code or tools: tests, builds, scripts, interpreters, package installs
  network      talks to another host: curl/wget, git push/pull/fetch/clone, ssh, scp, gh, gcloud ...
  destructive  could lose data: rm, mv, sed -i, git reset --hard/checkout -- file/clean/restore/
               push --force/branch -D/stash drop, truncating `>` to an existing project file,
               docker rm/prune, DROP/DELETE/TRUNCATE sql, kill -9 of everything ...
  other        anything else (process control such as kill/pkill, shell builtins like export/source)
"""

from __future__ import annotations

import re
import shlex

ORDER = ["read", "other", "run", "network", "write", "destructive"]
READ = {"ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "pwd", "echo", "printf", "which", "type",
        "file", "stat", "du", "df", "tree", "sort", "uniq", "cut", "awk", "jq", "diff", "cmp", "less", "more", "nl",
        "basename", "dirname", "realpath", "readlink", "date", "whoami", "uname", "printenv", "ps", "lsof", "id",
        "hostname", "sleep", "true", "false", "test", "[", "xxd", "hexdump", "od", "strings", "md5sum", "shasum",
        "sha256sum", "md5", "column", "tr", "cd", "pushd", "popd", "where", "whereis", "locate", "fd", "ag", "bat",
        "tac", "rev", "fold", "expr", "seq", "yes", "comm", "join", "paste", "look", "env", "free", "uptime", "top",
        "nproc", "sw_vers", "arch", "tput", "getconf", "ulimit", "netstat", "ss", "pgrep", "jobs", "history",
        "command", "exit", "wait", "mdfind", "pbpaste", "lsblk", "dpkg", "cloc", "tokei", "sqlite3-readonly"}
RUN = {"npm", "npx", "pnpm", "yarn", "bun", "bunx", "node", "deno", "python", "python3", "pytest", "uv", "uvx", "pip",
       "pip3", "poetry", "cargo", "rustc", "go", "make", "cmake", "ninja", "meson", "tsc", "vite", "eslint", "prettier",
       "jest", "vitest", "playwright", "java", "javac", "mvn", "gradle", "./gradlew", "gradlew", "dotnet", "gcc", "g++",
       "clang", "bash", "sh", "zsh", "source", ".", "docker", "docker-compose", "tauri", "flutter", "dart", "ruby",
       "bundle", "rake", "php", "composer", "swift", "xcodebuild", "bitbake", "ruff", "black", "mypy", "tox", "nox",
       "turbo", "nx", "lerna", "biome", "sqlite3", "psql", "mysql", "redis-cli", "convex", "wrangler", "drizzle-kit",
       "prisma", "open", "xdg-open", "code", "cursor", "timeout", "time", "watch", "nohup", "xargs", "tsx", "ts-node",
       "claude", "aider", "codex", "bd", "automaker", "ffmpeg", "magick", "convert", "cmake-build", "ctest", "valgrind",
       "gdb", "lldb", "strace", "perf", "hyperfine", "brew", "apt", "apt-get", "sudo", "adb", "emulator", "expo",
       "eas", "supabase", "vercel", "firebase", "netlify", "minsky", "sqlx", "wasm-pack", "trunk", "pkg-config",
       "ldd", "nm", "objdump", "otool", "cocli", "meson", "qemu-system-arm", "qemu-system-x86_64", "swiftc", "swift", "xcrun", "rustup", "trunk", "playwright-cli", "wasm-bindgen", "clang-format", "shellcheck", "openssl", "sha1sum"}
NETWORK = {"curl", "wget", "ssh", "scp", "rsync", "gh", "gcloud", "aws", "az", "kubectl", "helm", "nc", "telnet",
           "ping", "dig", "nslookup", "ftp", "sftp", "http", "httpie", "git-lfs", "ngrok", "glab"}
WRITE = {"mkdir", "touch", "cp", "chmod", "chown", "tee", "ln", "install", "patch", "unzip", "tar", "gzip",
         "gunzip", "zip", "export", "set", "unset", "alias", "mktemp", "ditto", "pbcopy", "jar"}
DESTRUCTIVE = {"rm", "rmdir", "mv", "shred", "truncate", "dd", "unlink", "srm", "trash"}
OTHER = {"kill", "pkill", "killall", "disown", "bg", "fg", "trap", "read", "shift", "local", "declare", "eval",
         "exec", "for", "do", "done", "if", "then", "else", "fi", "while", "case", "esac", "function", "return"}
GIT_READ = {"status", "diff", "log", "show", "rev-parse", "ls-files", "grep", "blame", "describe", "shortlog",
            "reflog", "cat-file", "for-each-ref", "ls-tree", "ls-remote", "merge-base", "rev-list", "whatchanged",
            "name-rev", "check-ignore", "count-objects", "var", "version", "help", "--version", "show-ref", "cherry"}
GIT_NET = {"push", "pull", "fetch", "clone", "ls-remote", "submodule"}
GIT_WRITE = {"add", "commit", "init", "apply", "merge", "cherry-pick", "tag", "notes", "mv", "worktree", "am",
             "revert", "switch", "config", "remote", "update-index", "bisect", "sparse-checkout", "lfs", "hash-object"}
SEP = {"&&", "||", ";", "|", "&", "\n", "|&", ";;", "(", ")"}
SCRATCH = re.compile(r"^(/dev/null|/dev/std(out|err)|/dev/tty|&\d)$")


HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
FD_REDIR = re.compile(r"(?<![<>])(\d?>&\d|&>\s*/dev/null|\d?>>?\s*/dev/null)")


def strip_heredocs(line: str) -> str:
    """Drop heredoc bodies (they are data, not commands); the `<<` operator becomes `< HEREDOC`."""
    out, lines, i = [], line.split("\n"), 0
    while i < len(lines):
        cur = lines[i]
        m = HEREDOC.search(cur)
        out.append(HEREDOC.sub("< HEREDOC", cur) if m else cur)
        i += 1
        if m:
            while i < len(lines) and lines[i].strip() != m.group(2):
                i += 1
            i += 1
    return "\n".join(out)


def _tokens(line: str) -> list[str]:
    line = FD_REDIR.sub(" ", strip_heredocs(line)).replace("\\(", " ").replace("\\)", " ")
    lex = shlex.shlex(line.replace("\\\n", " "), posix=True, punctuation_chars=";&|()<>")
    lex.whitespace = " \t\r"
    lex.commenters = "#"
    lex.whitespace_split = True
    out = []
    try:
        for t in lex:
            out.append(t)
    except ValueError:  # unbalanced quotes: fall back to a plain split
        return re.split(r"\s+", line.strip())
    return out


def _parts(line: str) -> list[list[str]]:
    parts, cur = [], []
    for t in _tokens(line):
        if t in SEP or t.strip("\n") == "" and "\n" in t or t in {"&&", "||", "|", ";", "&"}:
            if cur:
                parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def _redirect_kind(words: list[str]) -> str | None:
    """The kind a `>` / `>>` redirection gives the part (None when there is none that writes a file)."""
    worst = None
    for i, w in enumerate(words):
        if w in (">", ">>", ">|") and i + 1 < len(words):
            target = words[i + 1]
            if w == ">" and i > 0 and words[i - 1].isdigit() and words[i - 1] != "1" and SCRATCH.match(target):
                continue
            if SCRATCH.match(target) or target.startswith("&"):
                continue
            k = "write" if (w == ">>" or "/tmp" in target or re.search(r"\.(log|out|txt|json|md)$", target) and w == ">>") else "write"
            worst = _max(worst, k)
    return worst


def _max(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if ORDER.index(a) >= ORDER.index(b) else b


def _git(words: list[str]) -> str:
    args = [w for w in words[1:]]
    while args and args[0] in ("-C", "-c", "--no-pager", "--git-dir", "--work-tree"):
        args = args[2:] if args[0] in ("-C", "-c", "--git-dir", "--work-tree") else args[1:]
    if not args:
        return "read"
    sub, rest = args[0], args[1:]
    if sub in GIT_READ:
        return "read"
    if sub == "push":
        return "destructive" if any(a in ("-f", "--force", "--force-with-lease", "--delete", "-d") or a.startswith("+") or a.startswith("--force") for a in rest) else "network"
    if sub in GIT_NET:
        return "network"
    if sub == "branch":
        if any(a in ("-D", "-d", "--delete", "-M", "-m", "-f", "--force") for a in rest):
            return "destructive"
        return "read" if not [a for a in rest if not a.startswith("-")] or any(a in ("-a", "-r", "-v", "-vv", "--list", "--show-current", "--contains", "--merged", "--no-merged") for a in rest) else "write"
    if sub == "stash":
        if rest and rest[0] in ("list", "show"):
            return "read"
        if rest and rest[0] in ("drop", "clear", "pop"):
            return "destructive" if rest[0] != "pop" else "write"
        return "write"
    if sub == "checkout":
        if any(a in ("-b", "-B") for a in rest) and "-B" not in rest:
            return "write"
        if "--" in rest or "." in rest or "-f" in rest or any("/" in a or "." in a for a in rest if not a.startswith("-")):
            return "destructive"
        return "write"
    if sub == "restore":
        return "write" if "--staged" in rest and "--worktree" not in rest else "destructive"
    if sub in ("reset",):
        return "destructive" if "--hard" in rest or "--merge" in rest or "--keep" in rest else "write"
    if sub in ("clean", "rm", "rebase", "filter-branch", "gc", "prune", "update-ref"):
        return "destructive" if not (sub == "clean" and any(a in ("-n", "--dry-run") for a in rest)) else "read"
    if sub == "commit":
        return "destructive" if "--amend" in rest else "write"
    if sub == "tag":
        if any(a in ("-d", "--delete", "-f") for a in rest):
            return "destructive"
        return "read" if not rest or rest[0] in ("-l", "--list", "-n") else "write"
    if sub == "remote":
        return "read" if not rest or rest[0] in ("-v", "show", "get-url") else "write"
    if sub == "config":
        vals = [a for a in rest if not a.startswith("-")]
        return "read" if "--get" in rest or "--list" in rest or "-l" in rest or len(vals) <= 1 else "write"
    if sub == "worktree":
        return "read" if rest and rest[0] == "list" else ("destructive" if rest and rest[0] in ("remove", "prune") else "write")
    if sub in GIT_WRITE:
        return "write"
    return "other"


def _part(words: list[str]) -> str:
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if not words:
        return "write" if False else "other"
    redir = _redirect_kind(words)
    name = words[0].rsplit("/", 1)[-1] if words[0].startswith("/") else words[0]
    args = words[1:]
    if name in ("sudo", "timeout", "nohup", "time", "command", "exec", "env", "nice", "caffeinate") and args:
        inner = args[:]
        while inner and (inner[0].startswith("-") or re.match(r"^\d+[smh]?$", inner[0]) or "=" in inner[0]):
            inner = inner[1:]
        if inner and name != "command":
            return _max(_part(inner), "run" if name == "sudo" else None)
        if name == "command":
            return "read"
    if name in ("bash", "sh", "zsh", "wsl") and any(a in ("-c", "-lc", "-ic") for a in args):
        i = max(args.index(a) for a in ("-c", "-lc", "-ic") if a in args)
        return _max(kind(args[i + 1]) if i + 1 < len(args) else "run", "run")
    if name == "wsl":
        rest = args[:]
        while rest and (rest[0].startswith("-") or rest[0].startswith("Ubuntu")):
            rest = rest[1:]
        return _part(rest) if rest else "read"
    if name == "git" and args[:1] == ["review"]:
        return "network"
    if name in ("diskutil", "mount", "rustup") and (not args or args[0] in ("list", "info", "target", "show")) and "add" not in args and "install" not in args:
        return "read"
    if name == "ssh-keygen":
        return "write"
    if name == "git":
        k = _git(words)
    elif any(a in ("--version", "-V", "--help", "-h", "version") for a in args[:1]) and len(args) == 1:
        k = "read"
    elif name == "find":
        if any(a in ("-delete",) for a in args):
            k = "destructive"
        elif any(a in ("-exec", "-execdir", "-ok", "-okdir") for a in args):
            k = "destructive" if re.search(r"-exec\S* (rm|mv|sed -i)", " ".join(args)) else "run"
        elif any(a.startswith("-fprint") for a in args):
            k = "write"
        else:
            k = "read"
    elif name in ("sed", "gsed"):
        k = "destructive" if any(a == "-i" or a.startswith("-i") or a.startswith("--in-place") or re.match(r"^-[a-zA-Z]*i", a) for a in args) else "read"
    elif name == "perl":
        k = "destructive" if any(re.match(r"^-[a-zA-Z]*i", a) for a in args) else "run"
    elif name in ("npm", "pnpm", "yarn", "bun"):
        sub = args[0] if args else ""
        k = "read" if sub in ("ls", "list", "outdated", "why", "config") and "set" not in args else (
            "network" if sub in ("view", "info", "search", "publish", "login", "whoami", "show") else
            "destructive" if sub in ("uninstall", "remove", "rm", "un", "prune", "dedupe", "unpublish", "cache") and (sub != "cache" or "clean" in args) else "run")
    elif name == "docker" or name == "docker-compose":
        sub = " ".join(args[:2])
        k = "destructive" if re.match(r"(rm|rmi|kill|system prune|volume rm|volume prune|image prune|container prune|compose down -v)", sub) or ("down" in args and "-v" in args) else (
            "read" if args and args[0] in ("ps", "images", "logs", "inspect", "version", "info") else "run")
    elif name in ("cargo",):
        sub = args[0] if args else ""
        k = "destructive" if sub == "clean" else ("network" if sub in ("publish", "search") else ("read" if sub in ("tree", "metadata", "--list") else "run"))
    elif name in ("pip", "pip3", "uv") and args and args[0] in ("list", "show", "freeze") and redir is None:
        k = "read"
    elif name in ("pip", "pip3", "uv") and args and args[0] == "uninstall":
        k = "destructive"
    elif name in ("python", "python3", "node") and args and args[0] in ("-c", "-e"):
        body = args[1] if len(args) > 1 else ""
        if re.search(r"\b(remove|unlink|rmtree|rmSync|unlinkSync|os\.remove|write_text|writeFileSync|open\([^)]*['\"]w)", body):
            k = "destructive" if re.search(r"remove|unlink|rmtree|rmSync", body) else "write"
        else:
            k = "run"
    elif name in ("kill", "pkill", "killall"):
        k = "other"
    elif name in DESTRUCTIVE:
        k = "destructive"
    elif name in WRITE:
        k = "write"
        if name == "cp" and any(a in ("-f", "--force") for a in args):
            k = "destructive"
        if name == "tar" and args and not re.search(r"[xc]", args[0].lstrip("-")):
            k = "read"
        if name == "tar" and args and "c" in args[0].lstrip("-"):
            k = "write"
        if name in ("export", "set", "unset", "alias"):
            k = "other"
    elif name in NETWORK:
        k = "network"
    elif name in READ:
        k = "read"
    elif name in RUN or name.startswith("./") or name.endswith(".sh") or name.endswith(".py"):
        k = "run"
    else:
        k = "other"
    if redir and k != "destructive":
        k = _max(k, redir)
    return k


def kind(command: str) -> str:
    if re.search(r"\b(DROP\s+(TABLE|DATABASE|SCHEMA)|TRUNCATE\s+TABLE|DELETE\s+FROM)\b", command, re.I):
        return "destructive"
    worst = None
    for words in _parts(command):
        worst = _max(worst, _part(words))
    return worst or "other"
