// System 1 for the Pi coding agent: the `system1_judge` tool, the `/system1` command, the
// footer chip, the bash tool gate and (Pi ≥ 0.99) the classifier model `system1/waterfall`,
// all answered by the System-1 Gateway.
//
// A load error stops Pi altogether, so nothing here may throw while loading: a missing
// gateway, a broken system1.json or a missing schema file only change what the tool and
// `/system1 status` say when used.

import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { Text } from "@mariozechner/pi-tui";
import { readFileSync, writeFileSync, renameSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as core from "./core.ts";
import * as classifier from "./classifier.ts";

const STATUS_KEY = "system1";
const JUDGE_TIMEOUT_MS = 30_000; // the gateway's own deadline is shorter; this only bounds a stuck process
const GATE_TIMEOUT_MS = 10_000;
const COMMAND_TIMEOUT_MS = 30_000;
const FORMS = "/system1 (picker) · /system1 status · /system1 jev · /system1 openai · /system1 order <rung> [<rung> …] · /system1 retry";

function here(): string {
	try {
		return typeof __dirname !== "undefined" ? __dirname : dirname(fileURLToPath(import.meta.url));
	} catch {
		return ".";
	}
}

/** The gateway's published judge request schema, shipped beside this file (a test keeps the
 * two identical). Without it the tool still loads with a permissive schema and the gateway
 * validates every call. */
function judgeSchema(): { schema: Record<string, unknown>; problem?: string } {
	try {
		return { schema: JSON.parse(readFileSync(join(here(), "judge_request.schema.json"), "utf8")) };
	} catch (err) {
		return {
			schema: { type: "object", properties: { state: {}, questions: { type: "object" } }, required: ["state", "questions"] },
			problem: `judge_request.schema.json missing beside the extension (${String(err)})`,
		};
	}
}

function recordConsent(gatewayName: string): void {
	// The gateway's own consent record (consent.py): rung name → when a person confirmed.
	const path = join(core.stateDir(), "consents.json");
	let data: Record<string, string> = {};
	try {
		const parsed = JSON.parse(readFileSync(path, "utf8"));
		if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) data = parsed;
	} catch {
		/* none yet */
	}
	const d = new Date();
	const pad = (n: number) => String(n).padStart(2, "0");
	const off = -d.getTimezoneOffset();
	const zone = `${off >= 0 ? "+" : "-"}${pad(Math.floor(Math.abs(off) / 60))}${pad(Math.abs(off) % 60)}`;
	data[gatewayName] = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${zone}`;
	mkdirSync(dirname(path), { recursive: true });
	const tmp = `${path}.${process.pid}.tmp`;
	writeFileSync(tmp, JSON.stringify(data, null, 1), { mode: 0o600 });
	renameSync(tmp, path);
}

export default function system1(pi: ExtensionAPI) {
	const { schema, problem: schemaProblem } = judgeSchema();
	const daemon = new core.DaemonCheck();
	const notices = new core.Notices();
	const failed = new Set<string>(); // gateway rung names that failed and have not answered since
	let starting: string | null = null; // the session's starting backend (Pi name)
	let lastRoute: string | null = null;
	let paused = false;
	let session: ExtensionContext | null = null; // for notices and the chip from classifier calls

	const chip = (ctx: ExtensionContext) => {
		const text = paused ? "S1 off" : `S1 ${lastRoute ?? starting ?? core.readSettings().order[0] ?? "?"}`;
		ctx.ui.setStatus(STATUS_KEY, text);
	};

	const tell = (ctx: ExtensionContext, result: core.Judge) => {
		for (const n of core.noticesOf(result, failed)) {
			if (notices.fresh(n.key)) ctx.ui.notify(n.text, n.level);
		}
		for (const a of result.attempts as { provider: string; outcome: string }[]) {
			if (a.outcome !== "ok" && a.outcome !== "skipped") failed.add(a.provider);
		}
		const answers = Object.values((result.answers ?? {}) as Record<string, { abstain_reason?: string }>);
		paused = answers.length > 0 && answers.every((a) => a.abstain_reason === "paused"); // `system1 toggle off`
		if (result.status === "answered" && typeof result.provider === "string") {
			failed.delete(result.provider);
			lastRoute = core.piName(result.provider);
		}
		chip(ctx);
	};

	/** The gateway's view of Pi's order (credentials present, cooldowns, where a call would
	 * start, paused): `system1 status --chain`, which asks no engine anything. */
	const gatewayStatus = async (order: string[]): Promise<{ status?: Record<string, any>; error?: string }> => {
		const run = await core.runCli(["status", "--chain", core.gatewayChain(order).join(",")], null, COMMAND_TIMEOUT_MS);
		if (run.code === 127) return { error: `the System-1 gateway is not installed (no \`${core.cliPath()}\`)` };
		try {
			const status = JSON.parse(run.stdout);
			if (status?.error) return { error: status.error.message ?? String(status.error) };
			return { status };
		} catch {
			return { error: (run.stderr.trim() || `system1 status exited ${run.code}`).slice(-400) };
		}
	};

	const judge = async (request: core.Judge, timeoutMs: number, signal?: AbortSignal) => {
		const settings = core.readSettings();
		if (settings.error) return { settings, call: null as core.GatewayCall | null };
		const call = await core.judge(request, settings.order, { timeoutMs, daemon, signal });
		return { settings, call };
	};

	pi.registerTool({
		name: "system1_judge",
		label: "System 1",
		description:
			"Judge supplied evidence with fast typed questions (one pass, with probabilities): bool (yes/no), choice (one label of several) " +
			"or score (an ordered scale). Give `state` (the evidence) and `questions` keyed by id, each {type, instructions, criteria}. " +
			"Answers only; it never runs or changes anything.",
		promptSnippet: "system1_judge: fast typed judgments (bool / choice / score) over evidence you supply",
		parameters: schema as any,
		async execute(_toolCallId, params: any, signal, _onUpdate, ctx) {
			if (schemaProblem) ctx.ui.notify(`S1: ${schemaProblem}`, "warning");
			// The parameters are a judge request in the gateway's own schema: sent as they are.
			const { settings, call } = await judge(params as core.Judge, JUDGE_TIMEOUT_MS, signal);
			if (settings.error) throw new Error(`System 1 is not configured: ${settings.error}`);
			if (!call?.result) throw new Error(`System 1 could not reach the gateway: ${call?.error ?? "no answer"}`);
			tell(ctx, call.result);
			if (call.result.status === "error") throw new Error(core.summary(call.result));
			return { content: [{ type: "text", text: core.summary(call.result) }], details: call.result };
		},
		renderCall(args: any, theme) {
			const qs = args?.questions && typeof args.questions === "object" ? Object.entries(args.questions as Record<string, any>) : [];
			const list = qs.map(([id, q]) => `${id}:${q?.type ?? "?"}`).join(", ");
			return new Text(theme.fg("toolTitle", theme.bold("system1_judge ")) + theme.fg("accent", list || "…"), 0, 0);
		},
		renderResult(result, { expanded, isPartial }, theme) {
			if (isPartial) return new Text(theme.fg("warning", "judging…"), 0, 0);
			const details = result.details as core.Judge | undefined;
			if (!details || typeof details !== "object" || !("answers" in details)) {
				const first = result.content?.[0];
				return new Text(first && first.type === "text" ? first.text : "", 0, 0);
			}
			const lines = expanded ? core.detailLines(details) : core.answerLines(details);
			return new Text(lines.join("\n"), 0, 0);
		},
	});

	// Pi's own classifier consumers (codemode `models.classify()`, `ctx.modelRegistry.classify()`,
	// virtual-model routers) reach the gateway as the classifier model `system1/waterfall`.
	// Pi 0.73.1 has no classifier models (nor virtual models, which came with them in 0.99.0).
	const classify = async (_model: unknown, context: classifier.ClassifierContext, options?: { signal?: AbortSignal }) => {
		if (context.images?.length) return classifier.classifierResult(null, "images are not supported (text state only)");
		const { settings, call } = await judge(classifier.judgeRequest(context), JUDGE_TIMEOUT_MS, options?.signal);
		if (settings.error) return classifier.classifierResult(null, `not configured: ${settings.error}`);
		try {
			if (call?.result && session) tell(session, call.result);
		} catch {
			/* a context from an ended session: the answer still goes back */
		}
		return classifier.classifierResult(call?.result ?? null, call?.error);
	};
	if (typeof (pi as { registerVirtualModel?: unknown }).registerVirtualModel === "function") {
		try {
			const register = pi.registerProvider as unknown as (name: string, config: ReturnType<typeof classifier.providerConfig>) => void;
			register.call(pi, classifier.PROVIDER, classifier.providerConfig(classify));
		} catch {
			/* never a load error: system1_judge and the gate work without it */
		}
	}

	const setOrder = async (next: string[], ctx: ExtensionContext): Promise<void> => {
		const settings = core.readSettings();
		if (settings.error && settings.raw === null && !settings.error.includes("cannot read")) {
			ctx.ui.notify(`S1: ${settings.error} — fix or delete the file first`, "error");
			return;
		}
		const order = next.map(core.normalize);
		const dupes = order.filter((n, i) => order.indexOf(n) !== i);
		if (dupes.length) {
			ctx.ui.notify(`S1: ${dupes[0]} is listed twice (each rung once). Forms: ${FORMS}`, "error");
			return;
		}
		if (order.includes(core.OPENAI) && (settings.error || !settings.order.includes(core.OPENAI))) {
			const text = core.BILLING_PRECAUTIONS.replace("{name}", core.GATEWAY_NAMES[core.OPENAI]);
			if (!ctx.hasUI) {
				ctx.ui.notify(`S1: adding OpenAI needs an interactive confirmation of the billing precautions; headless mode cannot approve it. ${settings.path} is unchanged.`, "error");
				return;
			}
			const yes = await ctx.ui.confirm("System 1: OpenAI Decisions may be billed", text);
			if (!yes) {
				ctx.ui.notify(`S1: OpenAI not added (the billing precautions were not confirmed); ${settings.path} is unchanged.`, "warning");
				return;
			}
			recordConsent(core.GATEWAY_NAMES[core.OPENAI]);
		}
		core.writeOrder(settings.path, settings.raw, order);
		starting = order[0];
		lastRoute = null;
		chip(ctx);
		ctx.ui.notify(`S1: order ${order.join(" → ")} (${settings.path})`, "info");
	};

	const statusText = async (): Promise<string> => {
		const settings = core.readSettings();
		const lines = [`System 1 · settings ${settings.path}`];
		if (settings.error) {
			lines.push(`error: ${settings.error} (nothing is called until it is fixed)`);
			return lines.join("\n");
		}
		lines.push(`order: ${settings.order.join(" → ")}`);
		lines.push(`tool gate: ${settings.toolGate.enabled ? `on (ask at ≥ ${settings.toolGate.minConfidence})` : "off"}`);
		if (schemaProblem) lines.push(`warning: ${schemaProblem}`);
		const { status, error } = await gatewayStatus(settings.order);
		if (error || !status) {
			lines.push(`gateway: ${error}`);
			return lines.join("\n");
		}
		paused = status.paused === true;
		if (paused) lines.push("paused: system1 toggle on resumes");
		for (const name of settings.order) {
			const rung = status.rungs?.[core.gatewayChain([name])[0]] ?? {};
			const cred = rung.credentials ?? {};
			const creds = cred.needed ? (cred.present ? `key present (${cred.env})` : `no key (${cred.env ?? "?"})`) : "no key needed";
			lines.push(`  ${name}: ${rung.kind ?? "?"}, ${creds}${rung.blocked ? `, blocked: ${rung.blocked}` : ""}`);
		}
		const cooling = (status.cooldowns ?? []) as { rung?: string; provider?: string; until?: string; reason?: string }[];
		lines.push(cooling.length ? `cooling: ${cooling.map((c) => `${core.piName(c.rung ?? c.provider)} until ${c.until}${c.reason ? ` (${c.reason})` : ""}`).join("; ")}` : "cooling: none");
		lines.push(`session start: ${starting ?? core.piName(status.actual_start) ?? "?"} · last route: ${lastRoute ?? "none yet"}`);
		return lines.join("\n");
	};

	pi.registerCommand("system1", {
		description: "System 1 backends: pick the order, status, jev, openai, order …, retry",
		getArgumentCompletions(prefix: string) {
			return core.completions(prefix);
		},
		async handler(args, ctx) {
			const words = args.trim().split(/\s+/).filter(Boolean);
			const [verb, ...rest] = words;
			try {
				if (!verb) {
					const labels = core.PRESETS.map((p) => p.label);
					const chosen = await ctx.ui.select("System 1 order", labels);
					const preset = core.PRESETS.find((p) => p.label === chosen);
					if (preset) await setOrder(preset.order, ctx);
					else if (!ctx.hasUI) ctx.ui.notify(`S1: the picker needs the interactive UI. Forms: ${FORMS}`, "warning");
					return;
				}
				if (verb === "status" && !rest.length) {
					ctx.ui.notify(await statusText(), "info");
					return;
				}
				if ((verb === "jev" || verb === "openai" || verb === "openai-decisions") && !rest.length) {
					await setOrder([verb], ctx);
					return;
				}
				if (verb === "order" && rest.length) {
					await setOrder(rest, ctx);
					return;
				}
				if (verb === "retry" && !rest.length) {
					const run = await core.runCli(["retry"], null, COMMAND_TIMEOUT_MS);
					failed.clear();
					ctx.ui.notify(run.code === 0 ? "S1: cooldowns cleared (the order is unchanged)" : `S1: retry failed: ${run.stderr.trim() || run.stdout.trim()}`, run.code === 0 ? "info" : "error");
					return;
				}
				ctx.ui.notify(`S1: unknown arguments "${args.trim()}". Valid forms: ${FORMS}`, "error");
			} catch (err) {
				ctx.ui.notify(`S1: ${String(err)}`, "error");
			}
		},
	});

	pi.on("session_start", async (_event, ctx) => {
		session = ctx;
		const settings = core.readSettings();
		if (settings.error) {
			ctx.ui.setStatus(STATUS_KEY, "S1 !");
			return;
		}
		starting = settings.order[0];
		chip(ctx);
		if (!ctx.hasUI) return; // no footer to show (print and json modes): spawn nothing
		// Where a call would start (credentials present, not cooling), without asking any engine.
		void gatewayStatus(settings.order).then(({ status }) => {
			if (!status) return;
			paused = status.paused === true;
			starting = core.piName(status.actual_start) ?? starting;
			chip(ctx);
		});
	});

	pi.on("tool_call", async (event, ctx) => {
		if (event.toolName !== "bash") return undefined;
		const settings = core.readSettings();
		if (!settings.toolGate.enabled) return undefined;
		const command = String((event.input as { command?: unknown })?.command ?? "");
		if (!command.trim()) return undefined;
		const request = { state: command, questions: { destructive: { builtin: "destructive" } }, min_confidence: 0 };
		const { call } = await judge(request, GATE_TIMEOUT_MS);
		const closed = (why: string) => ({ block: true, reason: `System 1 tool gate: blocked because the command could not be judged (${why}); the gate fails closed.` });
		if (settings.error) return closed(settings.error);
		if (!call?.result) return closed(call?.error ?? "no answer");
		tell(ctx, call.result);
		if (call.result.status !== "answered") return closed(core.summary(call.result));
		type GateAnswer = { p_true?: number; abstained?: boolean; abstain_reason?: string | null; part?: { index: number; of: number; text: string } | null };
		const answer = (call.result.answers as Record<string, GateAnswer>).destructive;
		const p = typeof answer?.p_true === "number" ? answer.p_true : NaN;
		if (!Number.isFinite(p)) return closed("no usable answer");
		// Unsure is not safe: a command whose effect cannot be read from its text (opaque), or
		// that the engine abstained on, is confirmed like a destructive one.
		const unsure = answer?.abstained === true && ["opaque", "engine", "bounds", "refused"].includes(answer.abstain_reason ?? "");
		if (!unsure && !(p >= 0.5 && Math.max(p, 1 - p) >= settings.toolGate.minConfidence)) return undefined;
		const where = core.quotedPart(answer?.part);
		const reason = unsure
			? `System 1 tool gate: cannot tell what this command does${where} (${answer?.abstain_reason}).`
			: `System 1 tool gate: this command reads as destructive (p = ${p.toFixed(2)})${where}.`;
		if (ctx.hasUI && (await ctx.ui.confirm("System 1: destructive command", `${reason}\n\n${command}\n\nRun it?`))) return undefined;
		return { block: true, reason: `${reason} Blocked${ctx.hasUI ? " (not confirmed)" : " (no one to confirm in headless mode)"}.` };
	});
}
