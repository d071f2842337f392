"""`system1`: the command-line face. Stdout carries exactly one JSON object per request;
notices, progress and logs go to stderr.

Exit codes: 0 answered (abstained included), 1 the provider chain failed (or health is
down), 2 invalid input (bad JSON, a schema violation, an unknown flag).

`decide` and `judge` first look for the per-user daemon (daemon/client.py, stdlib only): when one
with this process's settings is running, it answers and nothing heavy is imported here
(tests/test_imports.py keeps it so); otherwise, or when it fails mid-call, the gateway runs
in-process within what is left of the deadline.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, BinaryIO

from . import __codename__, __version__, bounded_json
from .console import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from .console import JsonArgumentParser as _Parser
from .console import emit as _emit
from .console import exit_code as _exit_code
from .console import invalid as _invalid
from .model.errors import CONFIG_ERROR, INVALID_REQUEST


def _parser() -> _Parser:
    parser = _Parser(prog="system1", description="System-1 Gateway: fast typed decisions with probabilities.")
    parser.add_argument("--version", action="version", version=f"system1-gateway {__version__} ({__codename__})")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p: argparse.ArgumentParser, provider: bool = True) -> None:
        p.add_argument("--pretty", action="store_true", help="indent the JSON for humans")
        if provider:
            # Two spellings of one thing (the per-request chain override): both at once is an error.
            rungs = p.add_mutually_exclusive_group()
            rungs.add_argument("--chain", metavar="A,B,...", help="this call's rung order: configured rung names or "
                               "provider kinds, comma-separated, each once (cooldowns and consent still apply)")
            rungs.add_argument("--provider", metavar="NAME", help="use only this rung for this call (the older "
                               "spelling of --chain; a comma-separated list works too)")

    d = sub.add_parser("decide", help="ask one question; a yes/no choice unless --options are given")
    d.add_argument("question")
    d.add_argument("--options", nargs="+", metavar="OPTION", help="2 to 50 unique options")
    d.add_argument("--context", metavar="JSON", help="a JSON object passed to the engine as the evidence")
    d.add_argument("--min-confidence", type=float, metavar="X", help="abstain below this confidence (0-1)")
    d.add_argument("--request-id")
    d.add_argument("--builtin", metavar="NAME", help="ask a built-in yes/no question (e.g. destructive) about "
                                                    "QUESTION, which is then the text judged")
    common(d)

    j = sub.add_parser("judge", help="state + typed questions, as JSON from a file or stdin")
    j.add_argument("file", nargs="?", default="-", help="request file (default: stdin)")
    j.add_argument("--jsonl", action="store_true", help="one request per line in, one result per line out")
    j.add_argument("--no-batch", action="store_true", help="with --jsonl: answer each line alone instead of "
                   "computing the fast tier's work for a chunk of lines together (same answers, slower)")
    common(j)

    b = sub.add_parser("bulk", help="judge a large JSON Lines file of requests on Ray Data (or a local pool): "
                                    "results in input order, resumable")
    b.add_argument("input", metavar="IN.jsonl", help="one judge request per line (the judge --jsonl shape)")
    b.add_argument("output", metavar="OUT.jsonl", help="one result per input row, in order; rows already "
                                                       "there are skipped (resume)")
    b.add_argument("--ray", metavar="ADDRESS", help="run on this Ray cluster (default: a local Ray in this process)")
    b.add_argument("--pool", action="store_true", help="a local process pool instead of Ray")
    b.add_argument("--workers", type=int, metavar="N", help="actors or processes (default: the CPUs there)")
    b.add_argument("--batch-size", type=int, metavar="ROWS", help="rows per batch (default: from rows and workers)")
    common(b)

    h = sub.add_parser("health", help="probe every provider of the chain")
    common(h, provider=False)
    c = sub.add_parser("capabilities", help="version, schemas, provider chain, thresholds")
    common(c, provider=False)
    st = sub.add_parser("status", help="order, credentials present, cooldowns, last route, today's counts, toggle")
    st.add_argument("--chain", metavar="A,B,...", help="report on this rung order instead of the configured one "
                                                       "(what a call with --chain A,B would see; no engine is asked)")
    common(st, provider=False)
    o = sub.add_parser("order", help="set the provider chain (rewrites provider/fallback in the config file)")
    o.add_argument("names", nargs="+", metavar="PROVIDER")
    common(o, provider=False)
    r = sub.add_parser("retry", help="clear every cooldown")
    common(r, provider=False)
    t = sub.add_parser("toggle", help="pause (off) or resume (on) every decision, from the next request")
    t.add_argument("state", choices=["on", "off", "status"])
    common(t, provider=False)
    sub.add_parser("mcp", help="run the stdio MCP server (what `python -I -m system1_gateway` runs)")
    sv = sub.add_parser("serve", help="run the HTTP server (Jev wire, native API, MCP over HTTP, metrics)")
    sv.add_argument("--host", help="bind address (default [serve] host, 127.0.0.1)")
    sv.add_argument("--port", type=int, help="port (default [serve] port, 8737; 0: any free port)")
    dm = sub.add_parser("daemon", help="the per-user background server that keeps one engine warm")
    dm.add_argument("action", choices=["start", "stop", "status", "restart", "run", "install-login",
                                       "uninstall-login"],
                    help="run: serve in the foreground as the daemon (what start launches)")
    dm.add_argument("--apply", action="store_true", help="install-login/uninstall-login: write or remove the unit "
                                                         "(default: print what would be done)")
    common(dm, provider=False)
    te = sub.add_parser("teach", help="learn heads for your own recurring questions from labelled JSON Lines")
    te.add_argument("file", nargs="?", help="labels: one {state, question, expected} object per line")
    te.add_argument("--k", type=int, default=5, choices=range(2, 11), metavar="K", help="folds for the reported accuracy (2-10)")
    te.add_argument("--no-baseline", action="store_true", help="skip the zero-shot comparison (faster)")
    te.add_argument("--dry-run", action="store_true", help="measure only; write no head")
    te.add_argument("--force", action="store_true", help="install a head even where the zero-shot engine measured better")
    te.add_argument("--list", action="store_true", help="list the heads in use (shipped and yours)")
    te.add_argument("--remove", metavar="HASH", help="remove your head for this question hash (prefix)")
    te.add_argument("--export", metavar="DIR", help="copy your heads to DIR (to share them)")
    common(te, provider=False)
    from .learn import commands as learn_commands  # argparse only: the heavy imports wait for the run

    for name, (help_text, add_arguments) in learn_commands.PARSERS.items():
        lp = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(lp)
        common(lp, provider=False)
    ic = sub.add_parser("install-claude", help="print (or --apply) the command registering the MCP server in Claude Code")
    ic.add_argument("--apply", action="store_true", help="run it (needs the `claude` CLI on PATH)")
    ip = sub.add_parser("install-pi", help="print (or --apply) where the Pi extension goes: "
                                           "$PI_CODING_AGENT_DIR/extensions/system1/")
    ip.add_argument("--apply", action="store_true", help="copy it there, replacing an older copy")
    common(ip, provider=False)
    sm = sub.add_parser("smoke", help="launch the installed MCP server as a client does: handshake, health, "
                                      "one decision")
    sm.add_argument("--question", default=None, help="the question to decide (default: is `rm -rf build/` destructive?)")
    sm.add_argument("--options", nargs="+", default=None, metavar="OPTION", help="two or more options")
    sm.add_argument("--pretty", action="store_true", help="indent the JSON")
    return parser


def _gateway():
    from .daemon import dispatch
    from .logs import configure

    gateway = dispatch.gateway()
    gw = gateway.config.gateway
    configure(gw.log_level, gw.log_file)
    return gateway


def _warm(gateway, provider: str | None) -> None:
    """Load the first rung's models before the request's deadline starts (one-shot process)."""
    if sys.stderr.isatty():
        sys.stderr.write("system1: loading the engine…\r")
        sys.stderr.flush()
    gateway.warm(provider, full=False)  # the accurate tier loads if a question needs it
    if sys.stderr.isatty():
        sys.stderr.write("\x1b[2K")
        sys.stderr.flush()


def _unknown_provider(gateway, names: list[str], where: str, pretty: bool) -> bool:
    """Each rung of `--chain`/`--provider` must be one a call may name (else exit 2)."""
    from .model.errors import InvalidRequest

    try:
        gateway.override(",".join(names), where)
    except InvalidRequest as exc:
        _emit(_invalid(exc.message), pretty)
        return True
    return False


def _override(args: argparse.Namespace) -> tuple[str | None, str]:
    """(this call's chain override as given, the flag it came from)."""
    return (args.chain, "--chain") if args.chain is not None else (args.provider, "--provider")


def _cmd_decide(args: argparse.Namespace) -> int:
    payload: dict[str, Any] = {"question": args.question}
    if args.options is not None:
        payload["options"] = args.options
    if args.context is not None:
        try:
            payload["context"] = bounded_json.loads(args.context)
        except (ValueError, RecursionError) as exc:
            _emit(_invalid(f"--context: invalid JSON: {exc}"), args.pretty)
            return EXIT_INVALID
    if args.min_confidence is not None:
        payload["min_confidence"] = args.min_confidence
    if args.request_id is not None:
        payload["request_id"] = args.request_id
    if args.builtin is not None:
        payload["builtin"] = args.builtin
    answerer = _Answerer("decide", *_override(args))
    if answerer.refuses_provider(args.pretty):
        return EXIT_INVALID
    with answerer:
        result = answerer.answer(payload)
    _emit(result, args.pretty)
    return _exit_code(result)


class _Answerer:
    """Answers decide/judge requests through the warm daemon when one with this process's
    settings runs (stdlib only up to there), else with an in-process gateway, built and
    warmed once, on first need. Which path answered is the result's first attempt
    (`provider: "daemon"`) whenever a daemon was involved; with no daemon the result is
    exactly the in-process one."""

    def __init__(self, kind: str, provider: str | None, where: str = "--provider"):
        from .core import overrides

        self.kind, self.where = kind, where
        self._gateway: Any = None
        self.problem: str | None = None  # an empty entry or a rung listed twice: exit 2 before anything runs
        self.names: list[str] = []
        if provider is not None:
            try:
                self.names = overrides.split(provider, where)
            except ValueError as exc:
                self.problem = str(exc)
        # The override, normalised ("jev,openai"), is what the daemon or the core is given.
        self.provider = ",".join(self.names) if self.names else provider
        # An override goes to the daemon only when it names rungs or kinds it knows, so an
        # unknown name keeps its exit 2 from the in-process check.
        self.fast = self.problem is None and all(_known_provider(name) for name in self.names)
        self.local = False  # the last request was answered in this process (no daemon)
        self.prefetched = False

    def __enter__(self) -> "_Answerer":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._gateway is not None:
            self._gateway.close()

    def gateway(self) -> Any:
        if self._gateway is None:
            self._gateway = _gateway()
            _warm(self._gateway, self.provider)
        return self._gateway

    def refuses_provider(self, pretty: bool) -> bool:
        if self.problem is not None:
            _emit(_invalid(self.problem), pretty)
            return True
        if self.fast:
            return False
        self._gateway = _gateway()
        return _unknown_provider(self._gateway, self.names, self.where, pretty)

    def answer(self, payload: Any) -> dict[str, Any]:
        import time

        from .daemon import dispatch

        started = time.monotonic()
        routed = dispatch.ask(f"/v1/{self.kind}", payload, provider=self.provider, started=started) \
            if self.fast else dispatch.Routed()
        if routed.result is not None:
            self.local = False
            return routed.result
        self.local = True
        return dispatch.in_process(self.gateway(), self.kind, payload, self.provider, routed)

    def prefetch(self, payloads: list[Any]) -> None:
        """The batch path: once the last request was answered in this process (no daemon), the
        gateway computes the next ones' fast-tier work together (core.Gateway.prefetch)."""
        if self.local:
            self.gateway().prefetch(payloads, self.provider)
            self.prefetched = True

    def forget(self) -> None:
        if self.prefetched:
            self.gateway().forget(self.provider)
            self.prefetched = False


def _known_provider(name: str) -> bool:
    """`name` is a rung a call may name (overrides.permitted), read the stdlib way."""
    from .core import overrides
    from .daemon import client

    settings = client.peek()
    return overrides.permitted(name, settings.kinds or {}, settings.chain)


def _open_input(path: str) -> BinaryIO:
    """Bytes, decoded by the caller, so text that is not UTF-8 is an invalid request naming
    where it is, not a traceback."""
    return sys.stdin.buffer if path == "-" else open(path, "rb")


def _decode(data: bytes, where: str) -> tuple[str, None] | tuple[None, dict[str, Any]]:
    """(text, None), or (None, the invalid_request naming the byte at fault)."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        return None, _invalid(f"{where}: not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})")


def _cmd_judge(args: argparse.Namespace) -> int:
    where = "stdin" if args.file == "-" else args.file
    try:
        stream = _open_input(args.file)
    except OSError as exc:
        _emit(_invalid(f"{where}: cannot read: {exc.strerror or exc}"), args.pretty)
        return EXIT_INVALID
    answerer = _Answerer("judge", *_override(args))
    if answerer.refuses_provider(args.pretty):
        return EXIT_INVALID
    with answerer, stream:
        if args.jsonl:
            return _judge_lines(answerer, stream, where, args)
        try:
            data = stream.read()
        except OSError as exc:
            _emit(_invalid(f"{where}: cannot read: {exc.strerror or exc}"), args.pretty)
            return EXIT_INVALID
        text, problem = _decode(data, where)
        if text is not None:
            try:
                payload = bounded_json.loads(text)
            except (ValueError, RecursionError) as exc:
                problem = _invalid(f"{where}: invalid JSON: {exc}")
        if problem is not None:
            _emit(problem, args.pretty)
            return EXIT_INVALID
        result = answerer.answer(payload)
        _emit(result, args.pretty)
        return _exit_code(result)


# `judge --jsonl` reads this many lines, computes their fast-tier work together, then answers
# them in order: memory stays bounded by one chunk whatever the input's length.
BATCH_LINES = 256


def _judge_lines(answerer: _Answerer, stream: BinaryIO, where: str, args: argparse.Namespace) -> int:
    """Stream JSON Lines: one result per non-empty line, in order; a bad line gets its own
    invalid_request and the lines after it are still judged. Lines are read in chunks of
    BATCH_LINES (1 with --no-batch): when this process answers them (no daemon), the
    gateway computes a chunk's fast-tier work in a few batched runs first (the first
    request of a run, which finds out whether a daemon answers, goes alone). Each chunk's
    results are flushed as it is done."""
    worst = EXIT_OK
    progress = _Progress() if sys.stderr.isatty() else None
    size = 1 if getattr(args, "no_batch", False) else BATCH_LINES
    for chunk in _chunks(stream, size):
        items = [_read_line(raw, number, where) for number, raw in chunk]
        for k, (number, payload, result) in enumerate(items):
            if result is None:
                if size > 1 and not answerer.prefetched:
                    answerer.prefetch([p for _, p, r in items[k:] if r is None])
                result = answerer.answer(payload)
                if result.get("error") and result["error"].get("code") == INVALID_REQUEST:
                    result["error"]["message"] = f"line {number}: {result['error']['message']}"
            _emit(result, args.pretty)
            code = _exit_code(result)
            worst = EXIT_INVALID if EXIT_INVALID in (worst, code) else max(worst, code)
            if progress:
                progress.advance(result)
        answerer.forget()
    if progress:
        progress.close()
    return worst


def _chunks(stream: BinaryIO, size: int) -> Any:
    """Lists of up to `size` (line number, raw line) of the non-empty lines, in order. A list
    holds only lines that have arrived: once it has one, it is handed over as soon as reading
    more would wait (a caller writing a line and waiting for its answer gets it), so only
    input already there, a file or a pipe's backlog, is batched."""
    pending = b""
    number = 0
    eof = False
    while not (eof and not pending):
        chunk: list[tuple[int, bytes]] = []
        while len(chunk) < size:
            cut = pending.find(b"\n") + 1
            if not cut and eof:
                cut = len(pending)  # the last line, without its newline
            if cut:
                raw, pending = pending[:cut], pending[cut:]
                number += 1
                if raw.strip():
                    chunk.append((number, raw))
                continue
            if eof or (chunk and not _readable(stream)):
                break
            data = _read_some(stream)
            eof = not data
            pending += data
        if chunk:
            yield chunk


def _read_some(stream: BinaryIO) -> bytes:
    """What the stream has now (waiting only when it has nothing yet); b"" at its end."""
    read1 = getattr(stream, "read1", None)
    return read1(1 << 16) if callable(read1) else stream.read(1 << 16)


def _readable(stream: BinaryIO) -> bool:
    """Reading the stream now would not wait (a file, or a pipe with data in it). False where it
    cannot be told (a Windows pipe): then a chunk is what one read brought."""
    import select

    try:
        return bool(select.select([stream.fileno()], [], [], 0)[0])
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation: no descriptor to ask
        return False


def _read_line(raw: bytes, number: int, where: str) -> tuple[int, Any, dict[str, Any] | None]:
    """(line number, payload, None), or (line number, None, the invalid_request for the line)."""
    decoded = _decode(raw, f"{where} line {number}")
    if decoded[1] is not None:
        return number, None, decoded[1]
    try:
        return number, bounded_json.loads(decoded[0]), None
    except (ValueError, RecursionError) as exc:
        return number, None, _invalid(f"{where} line {number}: invalid JSON: {exc}")


class _Progress:
    """A rich progress line on stderr (only when stderr is a terminal)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
            console=Console(stderr=True), transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("judging", total=None)
        self._done = self._errors = 0

    def advance(self, result: dict[str, Any]) -> None:
        self._done += 1
        self._errors += bool(result.get("error"))
        self._progress.update(self._task, description=f"judged {self._done} requests ({self._errors} errors)")

    def close(self) -> None:
        self._progress.stop()


def _cmd_health(args: argparse.Namespace) -> int:
    with _gateway() as gateway:
        result = gateway.health()
    _emit(result, args.pretty)
    return EXIT_FAILED if result["status"] == "down" else EXIT_OK


def _cmd_capabilities(args: argparse.Namespace) -> int:
    _emit(_gateway().capabilities(), args.pretty)
    return EXIT_OK


def _cmd_status(args: argparse.Namespace) -> int:
    from .model.errors import InvalidRequest

    with _gateway() as gateway:
        try:
            order = None if args.chain is None or gateway.config_error else gateway.override(args.chain, "--chain")
        except InvalidRequest as exc:
            _emit(_invalid(exc.message), args.pretty)
            return EXIT_INVALID
        result = gateway.status(order)
    _emit(result, args.pretty)
    return EXIT_FAILED if result["config_error"] else EXIT_OK


def _cmd_order(args: argparse.Namespace) -> int:
    from .config.edit import write_order
    from .model.errors import ConfigError

    try:
        path = write_order(args.names, confirm=_ask_person if sys.stdin.isatty() else None)
    except (ConfigError, OSError) as exc:  # write_order names the file; OSError is the last net
        if isinstance(exc, OSError):
            exc = ConfigError(f"order: cannot update the config file: {exc.strerror or exc}")
        _emit(_invalid(exc.message), args.pretty)
        return EXIT_INVALID
    _emit({"order": args.names, "config": str(path)}, args.pretty)
    return EXIT_OK


def _ask_person(text: str) -> bool:
    sys.stderr.write(text + "\nType 'yes' to confirm: ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer == "yes"


def _cmd_retry(args: argparse.Namespace) -> int:
    from .config.settings import load_config
    from .model.errors import ConfigError
    from .store import open_store

    try:
        settings = load_config().state
    except ConfigError as exc:
        _emit(_invalid(exc.message), args.pretty)
        return EXIT_INVALID
    store = open_store(settings.url, settings.prefix)
    try:
        _emit({"cleared": store.clear(), "state": store.describe()}, args.pretty)
    finally:
        store.close()
    return EXIT_OK


def _cmd_toggle(args: argparse.Namespace) -> int:
    from . import toggle

    if args.state != "status":
        toggle.set_paused(args.state == "off")
    _emit({"paused": toggle.paused()}, args.pretty)
    return EXIT_OK


def _cmd_mcp(args: argparse.Namespace) -> int:
    from .mcp_server import main as serve

    return serve()


def _cmd_serve(args: argparse.Namespace) -> int:
    from .http.serving import main as serve

    return serve(host=args.host, port=args.port)


def _cmd_daemon(args: argparse.Namespace) -> int:
    from .daemon.lifecycle import command

    def serving(host: str, port: int, token: str, session: str) -> Any:  # `daemon run` serves with the HTTP face
        from .http.serving import Serving

        return Serving(host=host, port=port, token=token, session=session)

    return command(args, serving)


def _cmd_teach(args: argparse.Namespace) -> int:
    try:
        from .learn.teach import main as teach
    except ImportError as exc:  # scikit-learn is an extra: name it, do not trace back
        _emit(_invalid(f"teach needs scikit-learn ({exc.name or exc}): pip install 'system1-gateway[teach]'"), args.pretty)
        return EXIT_FAILED
    return teach(args)


def _cmd_bulk(args: argparse.Namespace) -> int:
    for flag, value in (("--workers", args.workers), ("--batch-size", args.batch_size)):
        if value is not None and not 1 <= value <= 100_000:
            _emit(_invalid(f"{flag}: expected a whole number from 1 to 100000, got {value}"), args.pretty)
            return EXIT_INVALID
    if args.pool and args.ray:
        _emit(_invalid("--pool and --ray: choose one"), args.pretty)
        return EXIT_INVALID
    args.provider = args.chain or args.provider
    from .bulk import main as bulk_main

    return bulk_main(args)


def _cmd_learn(name: str, args: argparse.Namespace) -> int:
    from .learn import commands as learn_commands

    return learn_commands.run(name, args)


def claude_command() -> list[str]:
    """`claude mcp add` for this interpreter: user scope, stdio, isolated mode (-I)."""
    from .smoke import server_command  # (light: smoke imports the mcp SDK only when it runs)

    return ["claude", "mcp", "add", "--scope", "user", "--transport", "stdio", "system1", "--", *server_command()]


def _cmd_install_claude(args: argparse.Namespace) -> int:
    import shlex
    import shutil
    import subprocess

    command = claude_command()
    print(shlex.join(command))
    sys.stderr.write(
        "PowerShell: quote the separator, i.e. write '--' instead of -- (PowerShell otherwise eats it).\n"
    )
    if not args.apply:
        return EXIT_OK
    if shutil.which("claude") is None:
        sys.stderr.write("system1: the `claude` CLI is not on PATH; run the command above once it is\n")
        return EXIT_FAILED
    return EXIT_OK if subprocess.run(command).returncode == 0 else EXIT_FAILED


def _cmd_install_pi(args: argparse.Namespace) -> int:
    from . import pi_install

    source, target = pi_install.source(), pi_install.target()
    problem = pi_install.missing(source)
    if problem:
        _emit({"installed": False, "status": "error", "error": {"code": "not_found", "message": problem}}, args.pretty)
        return EXIT_FAILED
    if not args.apply:
        _emit({"installed": False, "would_install": str(target), "source": str(source)}, args.pretty)
        sys.stderr.write(f"system1: `system1 install-pi --apply` copies {source} to {target} (replacing an older "
                         f"copy); Pi loads it when it next starts\n")
        return EXIT_OK
    try:
        pi_install.install(source, target)
    except OSError as exc:
        _emit({"installed": False, "status": "error", "error": {
            "code": "install_failed", "message": f"{target}: cannot install the Pi extension: {exc.strerror or exc}"}},
            args.pretty)
        return EXIT_FAILED
    _emit({"installed": True, "path": str(target), "source": str(source)}, args.pretty)
    return EXIT_OK


def _cmd_smoke(args: argparse.Namespace) -> int:
    from .smoke import DEFAULT_QUESTION
    from .smoke import main as smoke

    if args.options is not None and len(args.options) < 2:
        _emit(_invalid("--options: give two or more options"), args.pretty)
        return EXIT_INVALID
    args.question = args.question or DEFAULT_QUESTION
    report = smoke(args)
    _emit(report, args.pretty)
    return EXIT_OK if report["ok"] else EXIT_FAILED


COMMANDS = {
    "smoke": _cmd_smoke,
    "status": _cmd_status,
    "order": _cmd_order,
    "retry": _cmd_retry,
    "toggle": _cmd_toggle,
    "install-claude": _cmd_install_claude,
    "install-pi": _cmd_install_pi,
    "mcp": _cmd_mcp,
    "serve": _cmd_serve,
    "daemon": _cmd_daemon,
    "decide": _cmd_decide,
    "judge": _cmd_judge,
    "health": _cmd_health,
    "capabilities": _cmd_capabilities,
    "teach": _cmd_teach,
    "bulk": lambda args: _cmd_bulk(args),
    "calibrate": lambda args: _cmd_learn("calibrate", args),
    "evaluate": lambda args: _cmd_learn("evaluate", args),
    "outcomes": lambda args: _cmd_learn("outcomes", args),
    "report": lambda args: _cmd_learn("report", args),
    "bench": lambda args: _cmd_learn("bench", args),
    "routing": lambda args: _cmd_learn("routing", args),
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ValueError as exc:  # a relative SYSTEM1_CONFIG or SYSTEM1_STATE_DIR, met wherever it is first used
        from .paths import LocationError  # (paths imports pathlib: not at start)

        if not isinstance(exc, LocationError):
            raise
        _emit({"status": "error", "error": {"code": CONFIG_ERROR, "message": str(exc)}}, False)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
