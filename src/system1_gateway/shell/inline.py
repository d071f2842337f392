"""Code passed inline to an interpreter or a database client, read for what it does.

`language(name, words)` says which language a command runs inline (`python -c`, `node -e`,
`perl -e`, `ruby -e`, `php -r`, an awk program, SQL for `psql -c`/`mysql -e`/`sqlite3 DB SQL`,
`mongosh --eval`, `redis-cli` commands); `code_of` takes the code from the argv or the text
fed on stdin; `scan` lists the destructive operations the code names (deleting files,
writing files, dropping tables…) as findings, and the shell command lines it runs through
`system()`, `os.system`, `subprocess`, `exec`, backticks (read by `read.py` as parts). A
shell call whose command is not a literal makes the part opaque.

Reading code by names is a floor, not a proof: code that deletes through an API not listed
here is judged by the engine like any other part (the part's text is the whole command).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

INTERPRETERS = {"python": "python", "python2": "python", "python3": "python", "pypy": "python", "pypy3": "python",
                "node": "node", "nodejs": "node", "bun": "node", "deno": "node", "perl": "perl", "ruby": "ruby",
                "php": "php", "awk": "awk", "gawk": "awk", "mawk": "awk", "nawk": "awk",
                "psql": "sql", "mysql": "sql", "mariadb": "sql", "sqlite3": "sql", "duckdb": "sql",
                "clickhouse-client": "sql", "sqlcmd": "sql", "cqlsh": "sql", "snowsql": "sql", "bq": "sql",
                "trino": "sql", "presto": "sql", "spark-sql": "sql", "hive": "sql", "beeline": "sql", "vsql": "sql",
                "usql": "sql", "mysqlsh": "sql", "cockroach": "sql", "sqlplus": "sql",
                "mongo": "mongo", "mongosh": "mongo", "redis-cli": "redis"}
_PYTHON_VERSION = re.compile(r"^python\d+(\.\d+)?$")

# The option that carries inline code, per language (and those that take another value).
CODE_OPTIONS = {"python": ("-c",), "node": ("-e", "--eval", "-p", "--print"), "perl": ("-e", "-E"),
                "ruby": ("-e",), "php": ("-r",), "sql": ("-c", "--command", "-e", "--execute", "-q", "--query",
                                                          "-Q"),
                "mongo": ("--eval",)}


@dataclass
class Found:
    findings: list[tuple[str, str]] = field(default_factory=list)
    shell: list[str] = field(default_factory=list)
    dynamic_shell: bool = False


def language(name: str, words: list[str | None]) -> str | None:
    if name in ("rails", "bin/rails") and len(words) > 2 and words[1] in ("runner", "r"):
        return "ruby"  # `rails runner CODE`
    if name == "wrangler" and words[1:3] == ["d1", "execute"]:
        return "sql"  # `wrangler d1 execute DB --command SQL` (Cloudflare D1)
    lang = INTERPRETERS.get(name) or ("python" if _PYTHON_VERSION.match(name) else None)
    if lang == "node" and name == "deno" and (len(words) < 2 or words[1] != "eval"):
        return None
    return lang


def code_of(lang: str, words: list[str | None], stdin: str | None) -> str | None:
    """The inline code (None: a script file, or code that cannot be read)."""
    args = words[1:]
    if lang == "awk":
        i = 0
        while i < len(args):
            w = args[i]
            if w in ("-f", "--file"):
                return None
            if w in ("-F", "-v", "--assign", "--field-separator"):
                i += 2
                continue
            if w is not None and w.startswith("-") and len(w) > 1:
                i += 1
                continue
            return w
        return None
    if lang == "redis":
        rest, i = [], 0
        while i < len(args):
            w = args[i]
            if w in ("-h", "-p", "-a", "-n", "-u", "--user", "--pass", "-s"):
                i += 2
                continue
            if w is not None and not w.startswith("-"):
                rest.append(w)
            i += 1
        return " ".join(rest) if rest and all(isinstance(r, str) for r in rest) else stdin
    if words and words[0] in ("rails", "bin/rails") and len(words) > 2 and words[1] in ("runner", "r"):
        return words[2]
    options = CODE_OPTIONS.get(lang, ())
    if lang == "sql":  # clients differ in which option carries SQL (`snowsql -c CONN -q SQL`): read every value
        values = [args[i + 1] for i, w in enumerate(args[:-1]) if w in options]
        values += [w.split("=", 1)[1] for w in args if w is not None and "=" in w
                   and w.split("=", 1)[0] in options and w.startswith("--")]
        if values:
            return "\n".join(v for v in values if v is not None) or None
    for i, w in enumerate(args):
        if w is None:
            continue
        for option in options:
            if w == option:
                return args[i + 1] if i + 1 < len(args) else None
            if option.startswith("--") and w.startswith(option + "="):
                return w.split("=", 1)[1]
            if len(option) == 2 and w.startswith(option) and len(w) > 2 and lang == "python":
                return w[2:]  # python -c'code'
    if lang == "node" and words and words[0] == "deno":
        return args[1] if len(args) > 1 else None
    if lang == "sql" and words and words[0] == "bq":  # `bq query [flags] 'SQL'`: the last operand
        positional = [w for w in args if w is None or not w.startswith("-")]
        if positional[:1] != ["query"] or any(w in ("--dry_run", "--dry_run=true") for w in args):
            return None
        return positional[-1] if len(positional) > 1 else stdin
    if lang == "sql" and words and words[0] in ("sqlite3", "duckdb"):
        positional = [w for w in args if w is None or not w.startswith("-")]
        if len(positional) >= 2:
            return " ".join(w for w in positional[1:] if w is not None) or None
    return stdin


# -- what code does ------------------------------------------------------------------------
_SQL = re.compile(r"\b(DROP\s+(TABLE|DATABASE|SCHEMA|INDEX|VIEW|USER|ROLE|COLUMN|FUNCTION|TRIGGER|SEQUENCE|"
                  r"COLLECTION|KEYSPACE|MATERIALIZED)|TRUNCATE\b|DELETE\s+FROM\b|DELETE\s+\w+\s+FROM\b|"
                  r"UPDATE\s+[\w.\"`\[\]]+\s+SET\b|ALTER\s+TABLE\b[^;]*\b(DROP|RENAME|DELETE|UPDATE|MODIFY|TRUNCATE)\b|REPLACE\s+INTO\b|"
                  r"MERGE\s+INTO\b)", re.I)
_REDIS = re.compile(r"^\s*(FLUSHALL|FLUSHDB|DEL|UNLINK|GETDEL|EXPIRE|RENAME|SET|HDEL|SREM|ZREM|LTRIM|CONFIG\s+SET"
                    r"|SHUTDOWN|DEBUG|SWAPDB|MIGRATE|RESTORE)\b", re.I | re.M)
_MONGO = re.compile(r"\.(drop|dropDatabase|deleteMany|deleteOne|remove|findOneAndDelete|updateMany|updateOne|"
                    r"replaceOne|findOneAndReplace|findOneAndUpdate|renameCollection|dropIndex(es)?)\s*\(")
_APIS = {
    "python": re.compile(r"\b(shutil\.(rmtree|move)|os\.(remove|unlink|rmdir|removedirs|truncate|rename|replace)|"
                         r"rmtree|send2trash)\s*\(|\.(unlink|rmdir|write_text|write_bytes|rename|replace)\s*\(|"
                         r"\bopen\s*\([^)]*,\s*['\"](w|a?\+|x)b?['\"]"),
    "node": re.compile(r"\b(rmSync|rmdirSync|unlinkSync|writeFileSync|truncateSync|renameSync|rimraf|"
                       r"fs\.(rm|rmdir|unlink|writeFile|truncate|rename)|promises\.(rm|rmdir|unlink|writeFile))\b"),
    "perl": re.compile(r"\b(unlink|rmtree|remove_tree|rmdir|rename|truncate)\b|open\s*\(?[^;]*['\"]\s*>"),
    "ruby": re.compile(r"\b(FileUtils\.(rm\w*|remove\w*|mv|move)|File\.(delete|unlink|rename|truncate|write)|"
                       r"Dir\.(delete|rmdir|unlink)|Pathname[^;]*\.(delete|unlink|rmtree))\b|"
                       r"\.(destroy_all|delete_all|update_all|destroy!?|delete|update!?|update_column|update_columns|"
                       r"update_attribute|save!?|truncate|drop_table|remove_column)\b\s*[(!]?"),
    "php": re.compile(r"\b(unlink|rmdir|file_put_contents|rename|ftruncate)\s*\("),
    "awk": re.compile(r"(print|printf)[^;{}]*>\s*\"[^\"]+\""),
}
_SHELL_CALLS = {
    "node": re.compile(r"\b(?:execSync|exec|spawnSync|spawn|execFileSync|execFile)\s*\(\s*"
                       r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`$]*`|[^)\s,]+)"),
    "perl": re.compile(r"\b(?:system|exec|qx)\s*\(?\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^;)\s]+)|`([^`]*)`"),
    "ruby": re.compile(r"\b(?:system|exec|spawn|%x)\s*\(?\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^;)\s]+)|"
                       r"`([^`]*)`"),
    "php": re.compile(r"\b(?:shell_exec|system|exec|passthru|popen|proc_open)\s*\(\s*"
                      r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^)\s,]+)|`([^`]*)`"),
    "awk": re.compile(r"\bsystem\s*\(\s*(\"(?:[^\"\\]|\\.)*\"|[^)]+)\)|(\"(?:[^\"\\]|\\.)*\")\s*\|\s*getline|"
                      r"\|\s*(\"(?:[^\"\\]|\\.)*\")"),
}
_PY_SHELL = {"os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
             "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput",
             "os.execvp", "os.execv", "os.spawnlp", "pty.spawn", "commands.getoutput", "sh.Command"}


_EXPLAIN_ONLY = re.compile(r"\bEXPLAIN\s+(?!ANALY[SZ]E\b|\(\s*ANALY[SZ]E)(?:\([^)]*\)\s*)?", re.I)


def scan(lang: str, code: str) -> Found:
    found = Found()
    # `EXPLAIN DELETE …` only plans the statement; `EXPLAIN ANALYZE DELETE …` runs it
    sql = code
    if lang == "sql":  # comments are not run; `EXPLAIN DELETE …` only plans the statement
        sql = re.sub(r"--[^\n]*|/\*.*?\*/", " ", sql, flags=re.S)
        sql = _EXPLAIN_ONLY.sub("EXPLAIN_PLAN_OF ", sql)
    if _SQL.search(re.sub(r"EXPLAIN_PLAN_OF\s+\w+", "", sql)):
        found.findings.append(("sql-destructive", "its SQL drops, deletes, truncates or updates data"))
    if lang == "redis" and _REDIS.search(code):
        found.findings.append(("redis-destructive", "its Redis command deletes or overwrites keys"))
    if lang in ("mongo", "node") and _MONGO.search(code):
        found.findings.append(("mongo-destructive", "its MongoDB call drops, deletes or overwrites documents"))
    api = _APIS.get(lang)
    if api is not None:
        match = api.search(code)
        if match:
            found.findings.append((f"{lang}-code-deletes", f"its {lang} code deletes or overwrites files "
                                                          f"(`{match.group(0).strip()[:40]}`)"))
    if lang == "python":
        _python_shell(code, found)
    elif lang in _SHELL_CALLS:
        for match in _SHELL_CALLS[lang].finditer(code):
            literal = next((g for g in match.groups() if g), "")
            text = _string_value(literal)
            if text is None:
                found.dynamic_shell = True
            else:
                found.shell.append(text)
    return found


def _string_value(literal: str) -> str | None:
    if len(literal) >= 2 and literal[0] == literal[-1] and literal[0] in "\"'`":
        body = literal[1:-1]
        if literal[0] in "\"`" and re.search(r"\$\{|#\{|\$\w", body):
            return None  # interpolated
        return _ESCAPE.sub(_unescape, body)
    if literal and not re.search(r"[\"'`$]", literal) and "(" not in literal:
        return None  # a variable name
    return None


# String escapes of awk, Perl, Ruby, PHP and JavaScript (`system("\x72m -rf ~")` runs `rm`):
# decoded in every quoting, which at worst reads a single-quoted `\x72` as `r` (a cautious reading)
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u\{[0-9A-Fa-f]{1,6}\}|u[0-9A-Fa-f]{4}|[0-7]{1,3}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b"}


def _unescape(m: re.Match[str]) -> str:
    code = m.group(1)
    try:
        if code[0] == "x" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code[0] == "u" and len(code) > 1:
            return chr(int(code[1:].strip("{}"), 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
    except (ValueError, OverflowError):
        return code
    return _SIMPLE_ESCAPES.get(code, code)


def _python_shell(code: str, found: Found) -> None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        if re.search(r"\b(os\.system|os\.popen|subprocess)\b", code):
            found.dynamic_shell = True
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name not in _PY_SHELL and not (name or "").endswith((".system", ".popen", ".check_output", ".run")):
            continue
        if name not in _PY_SHELL and not (name or "").startswith(("os.", "subprocess.")):
            continue
        if not node.args:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.shell.append(first.value)
        elif isinstance(first, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in first.elts):
            import shlex

            # every element is a str Constant (checked just above): mypy cannot carry all()'s narrowing
            found.shell.append(" ".join(shlex.quote(e.value) for e in first.elts))  # type: ignore[attr-defined]
        else:
            found.dynamic_shell = True


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# A host, database or URL that names production (`db.prod.internal`, `shop_production`,
# `postgres://…@prod-db/…`): SQL from a file restored there overwrites what it holds.
_PRODUCTION = re.compile(r"(?<![a-z0-9])(prod|production|prd|live)(?![a-z0-9])", re.I)
SQL_FILE_OPTIONS = ("-f", "--file", "-i", "--input-file", "--filename", "--queries-file")
# A file named as a dump or a backup (or kept in such a folder): restoring one replaces what the database holds (mysqldump
# writes DROP TABLE before each table; a plain pg_dump restored over data collides with it).
_DUMP_FILE = re.compile(r"dump|backup|(?<![a-z])bak(?![a-z])|restore|snapshot", re.I)


def restores_over_data(words: list[str | None], stdin_file: str | None) -> str | None:
    """Why a database client running SQL from a file (`< dump.sql`, `-f dump.sql`) can lose
    data, or None: the file is named as a dump or backup, or the target names production (the
    file's statements cannot be read here)."""
    args = [w for w in words[1:] if w is not None]
    files = [stdin_file] if stdin_file is not None else []
    for i, w in enumerate(args):
        if w in SQL_FILE_OPTIONS and i + 1 < len(args):
            files.append(args[i + 1])
        files += [w.split("=", 1)[1] for o in SQL_FILE_OPTIONS if o.startswith("--") and w.startswith(o + "=")]
    if not files:
        return None
    if any(_DUMP_FILE.search(f) for f in files):
        return "restores a dump or backup into a database (what its tables hold is replaced)"
    if any(_PRODUCTION.search(w) for w in args):
        return "runs SQL from a file against a production database"
    return None


def reads_stdin(lang: str, words: list[str | None]) -> bool:
    """The interpreter runs code from stdin: no script file and no inline code (`python3`,
    `python3 -`, `node`, `perl`)."""
    if lang in ("awk", "redis", "mongo"):
        return False
    positional = [w for w in words[1:] if w is None or not w.startswith("-") or w == "-"]
    return not positional or positional[0] == "-"
