// System 1 as one of Pi's classifier models (Pi ≥ 0.99: `ctx.modelRegistry.classify()`, codemode
// `models.classify()`, virtual-model routers): provider `system1`, model `waterfall`. A call is
// one judge request through the gateway in the order of system1.json, like `system1_judge`.
//
// Node built-ins only, and no Pi types: Pi 0.73.1 has no classifier models, and the extension
// must type-check and load on both releases. The shapes below are Pi 1.x's (pi-ai `types.d.ts`
// ClassifierContext / ClassifierResult, pi-coding-agent ProviderConfig); tests/test_pi.py
// checks them against Pi 1.6's own types.

export const PROVIDER = "system1";
export const MODEL = "waterfall";
export const API = "system1-gateway";

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

export type ClassifierQuestion =
	| { type: "choice"; instructions: string; criteria: Record<string, string> }
	| { type: "score"; instructions: string; criteria: string[] }
	| { type: "bool"; instructions: string; criteria: { true: string; false: string } };

export interface ClassifierContext {
	state: { readonly [key: string]: Json };
	images?: unknown[];
	questions: Record<string, ClassifierQuestion>;
}

export type ClassifierAnswer =
	| { type: "choice"; choice: string; probabilities: Record<string, number>; confidence: number }
	| { type: "score"; score: number; confidence: number }
	| { type: "bool"; probability: number };

export interface Usage {
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	totalTokens: number;
	cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

export interface ClassifierResult {
	api: string;
	provider: string;
	model: string;
	answers: Record<string, ClassifierAnswer>;
	usage?: Usage;
	stopReason: "stop" | "error" | "aborted";
	errorMessage?: string;
	timestamp: number;
}

type Judge = Record<string, unknown>;

/** Pi's classifier context as a gateway judge request. Pi's question shapes are the gateway's
 * own (`bool` / `choice` / `score`, `instructions`, `criteria`), so they pass unchanged; the
 * gateway validates them. `min_confidence: 0`: Pi's classifier answers have no abstention,
 * the caller reads the probabilities and applies its own bar. */
export function judgeRequest(context: ClassifierContext): Judge {
	return { state: context.state, questions: context.questions, min_confidence: 0 };
}

interface GatewayAnswer {
	type: string;
	p_true?: number;
	choice?: string;
	score?: number;
	confidence?: number;
	probabilities?: Record<string, number>;
	abstained?: boolean;
	abstain_reason?: string | null;
}

/** A gateway judge result as Pi's ClassifierResult: an error result (never a throw) when the
 * chain gave no answer, or when any question has none (refused, paused). */
export function classifierResult(result: Judge | null, failure?: string): ClassifierResult {
	const base = { api: API, provider: PROVIDER, model: MODEL, answers: {}, timestamp: Date.now() };
	if (!result) return { ...base, stopReason: "error", errorMessage: `System 1: ${failure ?? "no answer"}` };
	if (result.status !== "answered") {
		const err = result.error as { code?: string; message?: string } | null;
		return { ...base, stopReason: "error", errorMessage: `System 1 could not judge: ${err?.code}: ${err?.message ?? ""}` };
	}
	const answers: Record<string, ClassifierAnswer> = {};
	for (const [qid, a] of Object.entries((result.answers ?? {}) as Record<string, GatewayAnswer>)) {
		if (a.abstain_reason === "paused") {
			// `system1 toggle off`: the gateway's uniform "no opinion" is not an answer to pass on
			return { ...base, stopReason: "error", errorMessage: "System 1 is paused (`system1 toggle on` resumes)" };
		}
		if (a.type === "noul" && typeof a.p_true === "number") answers[qid] = { type: "bool", probability: a.p_true };
		else if (a.type === "choice" && typeof a.choice === "string") {
			answers[qid] = { type: "choice", choice: a.choice, probabilities: a.probabilities ?? {}, confidence: a.confidence ?? 0 };
		} else if (a.type === "score" && typeof a.score === "number") answers[qid] = { type: "score", score: a.score, confidence: a.confidence ?? 0 };
		else {
			return { ...base, stopReason: "error", errorMessage: `System 1 gave no answer to ${qid} (${a.abstain_reason ?? a.type})` };
		}
	}
	const usage = (result.usage ?? {}) as { input_tokens?: number | null; output_tokens?: number | null };
	const out: ClassifierResult = { ...base, answers, stopReason: "stop" };
	if (typeof usage.input_tokens === "number" && typeof usage.output_tokens === "number") {
		const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }; // the gateway reports no price
		out.usage = { input: usage.input_tokens, output: usage.output_tokens, cacheRead: 0, cacheWrite: 0, totalTokens: usage.input_tokens + usage.output_tokens, cost: zero };
	}
	return out;
}

/** `pi.registerProvider(PROVIDER, …)`'s configuration: one classifier model whose
 * implementation is `classify`. `apiKey` is a placeholder that makes the model available
 * (Pi lists classifiers whose provider has credentials); the gateway keeps its own keys. */
export function providerConfig(
	classify: (model: unknown, context: ClassifierContext, options?: { signal?: AbortSignal }) => Promise<ClassifierResult>,
) {
	return {
		name: "System 1",
		baseUrl: "http://127.0.0.1", // unused: `classify` reaches the gateway itself (daemon or CLI)
		apiKey: "system1-local",
		models: [
			{
				type: "classifier" as const,
				id: MODEL,
				name: "System 1 waterfall (the gateway, in the order of system1.json)",
				api: API,
				input: ["text" as const],
				cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
				contextWindow: 32_000,
			},
		],
		classifiers: { [API]: { classify } },
	};
}
