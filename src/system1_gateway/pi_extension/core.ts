// The System 1 extension's logic that needs no Pi: settings (system1.json), presets, the
// gateway call (warm daemon over HTTP, else the `system1` CLI), notices, result summaries.
// Node built-ins only, so Node's own test runner loads this file as is (core.test.ts).
//
// The extension is a thin face: every judgment goes to the gateway with Pi's order as a
// per-request chain (`?chain=` / `--chain`), so the waterfall, cooldowns, consent checks and
// the audit stay the gateway's. Nothing here retries another rung.

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";

export const JEV = "jev";
export const OPENAI = "openai-decisions";
export const ALIASES: Record<string, string> = { openai: OPENAI };
// Pi's rung names → the gateway's rung names (the gateway calls its OpenAI rung `openai`).
export const GATEWAY_NAMES: Record<string, string> = { [OPENAI]: "openai" };
export const NOTICE_DEDUPE_MS = 60_000;

// The same words `system1 order` shows (config/edit.py BILLING_PRECAUTIONS; a test compares them).
export const BILLING_PRECAUTIONS = `Adding the OpenAI Decisions API (\`{name}\`) to the provider order: calls may be billed.
Before confirming, check on your OpenAI account that:
  - you claimed the included credits you mean to use,
  - there is no purchased (prepaid) balance that these calls could draw down,
  - auto-recharge is off.
This confirmation is consent to send decisions to OpenAI; it is not a spending cap.`;

export interface ToolGate {
	enabled: boolean;
	minConfidence: number;
}

export interface Settings {
	path: string;
	order: string[]; // Pi rung names, normalized (openai → openai-decisions)
	raw: Record<string, unknown> | null; // the file's object, for writes that keep every other field
	toolGate: ToolGate;
	error?: string; // the file is invalid: nothing may be called
}

export interface Preset {
	label: string;
	order: string[];
}

export const PRESETS: Preset[] = [
	{ label: "Jev → OpenAI", order: [JEV, OPENAI] },
	{ label: "OpenAI → Jev", order: [OPENAI, JEV] },
	{ label: "Jev only", order: [JEV] },
	{ label: "OpenAI only", order: [OPENAI] },
	{ label: "Embedded only (offline, on this machine)", order: ["embedded"] },
	{ label: "Jev → OpenAI → Embedded", order: [JEV, OPENAI, "embedded"] },
	{ label: "Jev → Embedded", order: [JEV, "embedded"] },
];

export function agentDir(env: NodeJS.ProcessEnv = process.env): string {
	const dir = env.PI_CODING_AGENT_DIR;
	if (dir) return dir.startsWith("~") ? join(homedir(), dir.slice(1)) : dir;
	return join(homedir(), ".pi", "agent");
}

export function settingsPath(env: NodeJS.ProcessEnv = process.env): string {
	return join(agentDir(env), "system1.json");
}

export function normalize(name: string): string {
	const lower = name.trim();
	return ALIASES[lower] ?? lower;
}

/** The JSON name of a parsed value's type (the file's words). */
function jsonType(value: unknown): string {
	if (value === null) return "null";
	if (Array.isArray(value)) return "array";
	return typeof value === "object" ? "object" : typeof value;
}

const quote = (v: string) => `'${v.slice(0, 100).replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

function nameOf(where: string, value: string): string {
	if (!value || value.includes(",") || /\s/.test(value)) {
		throw new Error(`${where} ${quote(value)} is not a backend name (expected jev, openai-decisions or a gateway rung name: non-empty, no commas or spaces)`);
	}
	return ALIASES[value] ?? value;
}

/** The order a parsed system1.json sets (the rules and messages of pi_settings.py, checked
 * against one table of cases in both languages); throws an Error naming the problem (the
 * caller adds the file). */
export function orderOf(data: unknown): string[] {
	if (data === null || typeof data !== "object" || Array.isArray(data)) {
		throw new Error(`expected a JSON object, got ${jsonType(data)}`);
	}
	const obj = data as Record<string, unknown>;
	if ("waterfall" in obj) {
		const w = obj.waterfall;
		if (!Array.isArray(w)) throw new Error(`waterfall must be a non-empty array of backend names (got ${jsonType(w)})`);
		if (w.length === 0) throw new Error('waterfall is empty (expected at least one backend, e.g. ["jev"])');
		const names: string[] = [];
		w.forEach((entry, index) => {
			const where = `waterfall[${index}]`;
			if (typeof entry !== "string") throw new Error(`${where} must be a string (got ${jsonType(entry)})`);
			const name = nameOf(where, entry);
			if (names.includes(name)) {
				const alias = name === OPENAI ? " (openai is an alias of openai-decisions)" : "";
				throw new Error(`waterfall lists ${quote(name)} twice${alias} (expected each backend once)`);
			}
			names.push(name);
		});
		return names;
	}
	if (!("backend" in obj)) return [JEV];
	const b = obj.backend;
	if (typeof b !== "string") throw new Error(`backend must be a string (got ${jsonType(b)}); or set waterfall, e.g. ["jev"]`);
	return [nameOf("backend", b)];
}

function toolGateOf(obj: Record<string, unknown> | null): ToolGate {
	const gate = obj?.toolGate;
	const out: ToolGate = { enabled: false, minConfidence: 0.7 }; // the Claude Code guard's default
	if (gate && typeof gate === "object" && !Array.isArray(gate)) {
		const g = gate as Record<string, unknown>;
		if (typeof g.enabled === "boolean") out.enabled = g.enabled;
		if (typeof g.minConfidence === "number" && g.minConfidence >= 0 && g.minConfidence <= 1) {
			out.minConfidence = g.minConfidence;
		}
	}
	return out;
}

/** Read system1.json. A missing file is Jev alone; an invalid one is an `error` (never a throw:
 * the extension must load whatever the file holds). */
export function readSettings(path: string = settingsPath()): Settings {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (err) {
		const code = (err as NodeJS.ErrnoException).code;
		if (code === "ENOENT") return { path, order: [JEV], raw: null, toolGate: toolGateOf(null) };
		return { path, order: [], raw: null, toolGate: toolGateOf(null), error: `${path}: cannot read: ${String(err)}` };
	}
	let data: unknown;
	try {
		data = JSON.parse(text);
	} catch (err) {
		return { path, order: [], raw: null, toolGate: toolGateOf(null), error: `${path}: invalid JSON (${(err as Error).message.slice(0, 200)})` };
	}
	try {
		const order = orderOf(data);
		const raw = data as Record<string, unknown>;
		return { path, order, raw, toolGate: toolGateOf(raw) };
	} catch (err) {
		const raw = data && typeof data === "object" && !Array.isArray(data) ? (data as Record<string, unknown>) : null;
		return { path, order: [], raw, toolGate: toolGateOf(raw), error: `${path}: ${(err as Error).message}` };
	}
}

/** Write the order: `waterfall` authoritative, `backend` mirrors its first rung; every other
 * field keeps its value and position. Atomic (a temporary file, then a rename). */
export function writeOrder(path: string, raw: Record<string, unknown> | null, order: string[]): Record<string, unknown> {
	const next: Record<string, unknown> = { ...(raw ?? {}) }; // existing keys keep their place, new ones go last
	next.waterfall = order;
	next.backend = order[0];
	mkdirSync(dirname(path), { recursive: true });
	const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
	writeFileSync(tmp, JSON.stringify(next, null, 2) + "\n", { mode: 0o600 });
	renameSync(tmp, path);
	return next;
}

export function gatewayChain(order: string[]): string[] {
	return order.map((name) => GATEWAY_NAMES[name] ?? name);
}

export function piName(gatewayName: string | null | undefined): string | null {
	if (!gatewayName) return null;
	for (const [pi, gw] of Object.entries(GATEWAY_NAMES)) if (gw === gatewayName) return pi;
	return gatewayName;
}

/** `/system1` argument completions: the verbs, then rung names after `order`. */
export function completions(prefix: string): { value: string; label: string }[] | null {
	const parts = prefix.split(/\s+/);
	if (parts[0] === "order" && parts.length > 1) {
		const stem = parts.slice(0, -1).join(" ");
		const items = [JEV, "openai", OPENAI, "embedded"].filter((w) => w.startsWith(parts[parts.length - 1]) && !parts.slice(1, -1).includes(w))
			.map((w) => ({ value: `${stem} ${w}`, label: w }));
		return items.length ? items : null;
	}
	const items = ["status", "jev", "openai", "order", "retry"].filter((w) => w.startsWith(prefix.trim())).map((w) => ({ value: w, label: w }));
	return items.length ? items : null;
}

// -- where the gateway lives ------------------------------------------------------------------

/** A location variable's value when it is absolute (`~/` expanded, as the gateway does), else
 * `fallback`. Pi runs in the repository being worked on: a relative value would let it supply
 * the daemon's port file or the CLI that is run (the gateway's CLI refuses a relative one, naming it). */
export function absolute(value: string | undefined, fallback: string): string {
	const path = value?.startsWith("~/") ? join(homedir(), value.slice(2)) : value;
	return path && isAbsolute(path) ? path : fallback;
}

export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
	return absolute(env.SYSTEM1_STATE_DIR, join(homedir(), ".system1-gateway"));
}

/** The `system1` CLI: SYSTEM1_CLI (an absolute path, or a bare name looked up on PATH), else the
 * installer's venv, else `system1` on PATH. */
export function cliPath(env: NodeJS.ProcessEnv = process.env): string {
	const given = env.SYSTEM1_CLI && !/[\\/]/.test(env.SYSTEM1_CLI) ? env.SYSTEM1_CLI : absolute(env.SYSTEM1_CLI, "");
	if (given) return given;
	const base = absolute(env.SYSTEM1_INSTALL_DIR, join(homedir(), ".system1-gateway"));
	const venvCli = process.platform === "win32" ? join(base, "venv", "Scripts", "system1.exe") : join(base, "venv", "bin", "system1");
	return existsSync(venvCli) ? venvCli : "system1";
}

export interface Port {
	pid: number;
	host: string;
	port: number;
	fingerprint: string;
	token: string | null; // the daemon's per-user secret, sent as the bearer key (null: a daemon from before tokens)
}

export function readPort(env: NodeJS.ProcessEnv = process.env): Port | null {
	try {
		const rec = JSON.parse(readFileSync(join(stateDir(env), "daemon", "daemon.port"), "utf8"));
		if (typeof rec.pid !== "number" || typeof rec.port !== "number" || typeof rec.host !== "string") return null;
		process.kill(rec.pid, 0); // throws when the process is gone
		return {
			pid: rec.pid,
			host: ["0.0.0.0", "::", ""].includes(rec.host) ? "127.0.0.1" : rec.host,
			port: rec.port,
			fingerprint: String(rec.fingerprint),
			token: typeof rec.token === "string" ? rec.token : null,
		};
	} catch {
		return null;
	}
}

export interface Run {
	code: number;
	stdout: string;
	stderr: string;
}

export function runCli(args: string[], input: string | null, timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Promise<Run> {
	return new Promise((resolve) => {
		let stdout = "";
		let stderr = "";
		let settled = false;
		const done = (run: Run) => {
			if (!settled) {
				settled = true;
				resolve(run);
			}
		};
		let child;
		try {
			child = spawn(cliPath(env), args, { env, stdio: ["pipe", "pipe", "pipe"] });
		} catch (err) {
			done({ code: 127, stdout: "", stderr: String(err) });
			return;
		}
		const timer = setTimeout(() => {
			child.kill("SIGKILL");
			done({ code: 124, stdout, stderr: stderr + `\nsystem1: no answer within ${timeoutMs} ms` });
		}, timeoutMs);
		child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
		child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
		child.on("error", (err: NodeJS.ErrnoException) => {
			clearTimeout(timer);
			done({ code: err.code === "ENOENT" ? 127 : 1, stdout, stderr: String(err) });
		});
		child.on("close", (code: number | null) => {
			clearTimeout(timer);
			done({ code: code ?? 1, stdout, stderr });
		});
		child.stdin.on("error", () => undefined); // a CLI that exits early closes its stdin
		child.stdin.end(input ?? "");
	});
}

/** Is the running daemon serving *this* environment's settings? Asked once of the CLI
 * (`system1 daemon status` compares fingerprints the way the gateway's own client does)
 * and remembered until the port file or the config file changes. */
export class DaemonCheck {
	private key = "";
	private ok = false;
	private env: NodeJS.ProcessEnv;

	constructor(env: NodeJS.ProcessEnv = process.env) {
		this.env = env; // (no parameter properties: Node's type stripping runs this file as is)
	}

	private currentKey(port: Port): string {
		const config = absolute(this.env.SYSTEM1_CONFIG, join(absolute(this.env.XDG_CONFIG_HOME, join(homedir(), ".config")), "system1", "config.toml"));
		let stamp = "absent";
		try {
			const st = statSync(config);
			stamp = `${st.size}:${st.mtimeMs}`;
		} catch {
			/* absent */
		}
		return `${port.pid}:${port.port}:${port.fingerprint}:${stamp}`;
	}

	async usable(timeoutMs: number): Promise<Port | null> {
		const port = readPort(this.env);
		if (!port) return null;
		const key = this.currentKey(port);
		if (key !== this.key) {
			const run = await runCli(["daemon", "status"], null, timeoutMs, this.env);
			let status: Record<string, unknown> = {};
			try {
				status = JSON.parse(run.stdout);
			} catch {
				/* not JSON: not usable */
			}
			this.ok = status.running === true && status.fingerprint_matches === true && status.pid === port.pid;
			this.key = key;
		}
		return this.ok ? port : null;
	}
}

export type Judge = Record<string, unknown>;

export interface GatewayCall {
	result: Judge | null; // the gateway's judge result, unchanged
	via: "daemon" | "cli";
	error?: string; // the gateway could not be reached or answered nothing usable
	exitCode?: number;
}

function isResult(x: unknown): x is Judge {
	return !!x && typeof x === "object" && typeof (x as Judge).status === "string" && "answers" in (x as Judge) && Array.isArray((x as Judge).attempts);
}

/** One judge request through the gateway with Pi's order as the chain. */
export async function judge(request: Judge, order: string[], opts: { timeoutMs: number; daemon?: DaemonCheck; env?: NodeJS.ProcessEnv; signal?: AbortSignal }): Promise<GatewayCall> {
	const env = opts.env ?? process.env;
	const chain = gatewayChain(order).join(",");
	const port = opts.daemon ? await opts.daemon.usable(Math.min(opts.timeoutMs, 10_000)) : null;
	if (port) {
		try {
			const res = await fetch(`http://${port.host}:${port.port}/v1/judge?chain=${encodeURIComponent(chain)}`, {
				method: "POST",
				headers: { "content-type": "application/json", ...(port.token ? { authorization: `Bearer ${port.token}` } : {}) },
				body: JSON.stringify(request),
				signal: opts.signal ?? AbortSignal.timeout(opts.timeoutMs),
			});
			const body = await res.json();
			if (isResult(body)) return { result: body, via: "daemon" };
		} catch {
			/* the daemon went away or hung: the CLI answers (it may start a new one) */
		}
	}
	const run = await runCli(["judge", "--chain", chain, "-"], JSON.stringify(request), opts.timeoutMs, env);
	if (run.code === 127) {
		return { result: null, via: "cli", exitCode: 127, error: `the System-1 gateway is not installed (no \`${cliPath(env)}\` command): run its install.sh, or set SYSTEM1_CLI` };
	}
	try {
		const body = JSON.parse(run.stdout);
		if (isResult(body)) return { result: body, via: "cli", exitCode: run.code };
		const err = (body as { error?: { message?: string } }).error;
		return { result: null, via: "cli", exitCode: run.code, error: err?.message ?? run.stderr.trim().slice(-500) };
	} catch {
		return { result: null, via: "cli", exitCode: run.code, error: (run.stderr.trim() || `system1 exited ${run.code}`).slice(-500) };
	}
}

// -- notices: to the user, deduplicated 60 s, never to the model ------------------------------

export class Notices {
	private last = new Map<string, number>();
	private now: () => number;

	constructor(now: () => number = Date.now) {
		this.now = now;
	}

	/** True when `key` was not said in the last 60 s (then it counts as said now). */
	fresh(key: string): boolean {
		const t = this.now();
		const prev = this.last.get(key);
		if (prev !== undefined && t - prev < NOTICE_DEDUPE_MS) return false;
		this.last.set(key, t);
		return true;
	}
}

interface Attempt {
	provider: string;
	outcome: string;
	detail?: string | null;
}

/** What a result says the user should hear: failed rungs, an exhausted chain, a recovery. */
export function noticesOf(result: Judge, failedBefore: Set<string>): { key: string; text: string; level: "info" | "warning" | "error" }[] {
	const out: { key: string; text: string; level: "info" | "warning" | "error" }[] = [];
	const attempts = (result.attempts as Attempt[]).filter((a) => a.provider !== "daemon");
	for (const a of attempts) {
		if (a.outcome !== "ok" && a.outcome !== "skipped") {
			out.push({ key: `failed:${a.provider}`, level: "warning", text: `S1: ${piName(a.provider)} failed (${a.outcome})${a.detail ? `: ${String(a.detail).slice(0, 160)}` : ""}` });
		}
	}
	const winner = result.provider as string | null;
	if (result.status === "error") {
		const err = result.error as { code?: string; message?: string } | null;
		out.push({ key: `exhausted:${err?.code}`, level: "error", text: `S1: no backend answered (${err?.code}): ${String(err?.message ?? "").slice(0, 200)}` });
	} else if (winner && failedBefore.has(winner)) {
		out.push({ key: `recovered:${winner}`, level: "info", text: `S1: ${piName(winner)} answers again` });
	}
	return out;
}

// -- presenting a result ------------------------------------------------------------------------

interface Answer {
	type: string;
	question_type?: string;
	p_true?: number;
	choice?: string;
	score?: number;
	confidence?: number;
	probabilities?: Record<string, number>;
	abstained?: boolean;
	abstain_reason?: string | null;
}

const pct = (x: number | undefined) => (typeof x === "number" ? `${Math.round(x * 100)}%` : "?");

/** One line per question: its type and its named answer (never the evidence). */
export function answerLines(result: Judge, expanded = false): string[] {
	const answers = (result.answers ?? {}) as Record<string, Answer>;
	const lines: string[] = [];
	for (const [qid, a] of Object.entries(answers)) {
		let text: string;
		if (a.type === "noul") text = `bool: p(true) = ${a.p_true?.toFixed(3)}`;
		else if (a.type === "choice") {
			text = `choice: ${a.choice} (${pct(a.confidence)})`;
			if (expanded && a.probabilities) {
				text += " · " + Object.entries(a.probabilities).sort((x, y) => y[1] - x[1]).map(([k, v]) => `${k} ${pct(v)}`).join(", ");
			}
		} else if (a.type === "score") text = `score: ${a.score?.toFixed(2)} (${pct(a.confidence)})`;
		else text = `${a.type}: refused`;
		if (a.abstained) text += ` — abstained${a.abstain_reason ? ` (${a.abstain_reason})` : ""}`;
		lines.push(`${qid} · ${text}`);
	}
	return lines;
}

export const EXCERPT = 60; // characters of the deciding part quoted to the model (hooks/guard.py's EXCERPT)

/** ` (part 2 of 2, command text "rm -rf ~")`: where the deciding part is, and the part as a
 * JSON-quoted excerpt of at most EXCERPT characters. The block reason reaches the model, and the
 * command is the agent's (or an attacker's) text: it must not speak with the gate's voice. */
export function quotedPart(part: { index?: unknown; of?: unknown; text?: unknown } | null | undefined): string {
	if (!part || typeof part.text !== "string") return "";
	const place = Number.isInteger(part.index) && Number.isInteger(part.of) ? `part ${part.index} of ${part.of}` : "a part";
	const chars = Array.from(part.text); // code points, as Python counts: a pair is never cut in half
	const text = chars.length <= EXCERPT ? part.text : chars.slice(0, EXCERPT - 1).join("") + "…";
	return ` (${place}, command text ${JSON.stringify(text)})`;
}

export function summary(result: Judge): string {
	if (result.status === "error") {
		const err = result.error as { code?: string; message?: string } | null;
		return `System 1 could not judge: ${err?.code}: ${err?.message ?? ""}`;
	}
	return answerLines(result).join("\n") + `\n(by ${piName(result.provider as string)}${result.model ? ` ${result.model}` : ""}, ${Math.round(Number(result.latency_ms))} ms)`;
}

export function detailLines(result: Judge): string[] {
	const lines = answerLines(result, true);
	for (const a of result.attempts as Attempt[]) {
		lines.push(`attempt ${piName(a.provider)}: ${a.outcome}${a.detail ? ` (${String(a.detail).slice(0, 120)})` : ""}`);
	}
	const usage = (result.usage ?? {}) as { input_tokens?: number | null; output_tokens?: number | null };
	lines.push(`usage: input ${usage.input_tokens ?? "unknown"}, output ${usage.output_tokens ?? "unknown"}`);
	return lines;
}
