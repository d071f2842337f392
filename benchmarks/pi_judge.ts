// Helper of benchmarks/pi_latency.py: `system1_judge`'s path from the extension's core to the
// gateway, N times through the warm daemon and N times through the CLI, printed as JSON.
// Run with Node 22 (type stripping): node benchmarks/pi_judge.ts N
import * as core from "../src/system1_gateway/pi_extension/core.ts";

const n = Number(process.argv[2] ?? 50);
const request = { state: { text: "The tests passed." }, questions: { passed: { type: "bool", instructions: "Did the tests pass?" } } };
const out: Record<string, { wall: number[]; gateway: number[] }> = { daemon: { wall: [], gateway: [] }, cli: { wall: [], gateway: [] } };
const daemon = new core.DaemonCheck();
await core.judge(request, ["mock"], { timeoutMs: 30_000, daemon }); // the one `system1 daemon status` check
for (const [via, check] of [["daemon", daemon], ["cli", undefined]] as const) {
	for (let i = 0; i < n; i++) {
		const t0 = performance.now();
		const call = await core.judge(request, ["mock"], { timeoutMs: 30_000, daemon: check });
		const wall = performance.now() - t0;
		if (!call.result || call.via !== via) throw new Error(`expected an answer via ${via}: ${JSON.stringify(call).slice(0, 300)}`);
		out[via].wall.push(wall);
		out[via].gateway.push(Number(call.result.latency_ms));
	}
}
console.log(JSON.stringify(out));
