// Unit tests of the classifier model's conversions (pi_extension/classifier.ts), run by Node's
// own test runner like core.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as classifier from "../../src/system1_gateway/pi_extension/classifier.ts";

const answered = {
	status: "answered", provider: "jev", model: "jev-mock", attempts: [], usage: { input_tokens: null, output_tokens: null },
	answers: {
		b: { type: "noul", p_true: 0.8, probabilities: { true: 0.8, false: 0.2 }, confidence: 0.8 },
		c: { type: "choice", choice: "x", probabilities: { x: 0.7, y: 0.3 }, confidence: 0.7, abstained: false },
		s: { type: "score", score: 1.4, level: 1, probabilities: { 0: 0.1, 1: 0.4, 2: 0.5 }, confidence: 0.5 },
	},
};

test("Pi's questions pass to the gateway unchanged, with no abstention bar", () => {
	const questions = { b: { type: "bool" as const, instructions: "?", criteria: { true: "y", false: "n" } } };
	assert.deepEqual(classifier.judgeRequest({ state: { m: "hi" }, questions }), { state: { m: "hi" }, questions, min_confidence: 0 });
});

test("gateway answers become Pi's classifier answers", () => {
	const r = classifier.classifierResult(answered);
	assert.equal(r.stopReason, "stop");
	assert.deepEqual(r.answers, {
		b: { type: "bool", probability: 0.8 },
		c: { type: "choice", choice: "x", probabilities: { x: 0.7, y: 0.3 }, confidence: 0.7 },
		s: { type: "score", score: 1.4, confidence: 0.5 },
	});
	assert.equal(r.usage, undefined); // unknown token counts are not reported as zero
	const counted = classifier.classifierResult({ ...answered, usage: { input_tokens: 10, output_tokens: 2 } });
	assert.equal(counted.usage?.totalTokens, 12);
});

test("no answer is an error result naming why, never a throw", () => {
	assert.match(classifier.classifierResult(null, "gone").errorMessage ?? "", /gone/);
	const failed = classifier.classifierResult({ status: "error", error: { code: "all_failed", message: "none" }, answers: {}, attempts: [] });
	assert.equal(failed.stopReason, "error");
	assert.match(failed.errorMessage ?? "", /all_failed/);
	const refused = classifier.classifierResult({ ...answered, answers: { b: { type: "refusal", abstained: true, abstain_reason: "refused" } } });
	assert.equal(refused.stopReason, "error");
	assert.match(refused.errorMessage ?? "", /no answer to b \(refused\)/);
	const paused = classifier.classifierResult({ ...answered, answers: { b: { type: "noul", p_true: 0.5, abstained: true, abstain_reason: "paused" } } });
	assert.equal(paused.stopReason, "error");
	assert.match(paused.errorMessage ?? "", /paused/);
});
