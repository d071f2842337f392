// The v2 TypeScript SDK client (@modelcontextprotocol/client 2.x, the line that speaks the
// 2026-07-28 protocol) as a real client of either face. Used by tests/test_mcp_ts_client_v2.py.
//
//   node ts_client_v2.mjs <tools dir> stdio <server command> [args...]
//   node ts_client_v2.mjs <tools dir> http <url>        (bearer key, if any, in SYSTEM1_TEST_BEARER)
//
// Connects once per negotiation mode — "legacy" (the client's default: the 2025 initialize
// handshake), "auto" (server/discover probe, falling back to initialize) and a pin to
// 2026-07-28 — and in each: records the negotiated protocol version and era, lists the tools,
// compiles every published schema with a strict Ajv (JSON Schema 2020-12), calls
// system1_decide and system1_judge (the SDK validates structuredContent against the output
// schema through the same strict Ajv; the script validates it again itself), makes an
// argument error and an unknown-tool call. Over HTTP it also connects without the key, once per
// mode, and records the error. Prints one JSON object {mode: report, ...} on stdout.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [toolsDir, face, ...rest] = process.argv.slice(2);
const modules = path.join(path.resolve(toolsDir), "tsclient2", "node_modules");
const require = createRequire(path.join(modules, "noop.js"));
const { Client, ProtocolError, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");
const { StdioClientTransport } = require("@modelcontextprotocol/client/stdio");
const { AjvJsonSchemaValidator } = require("@modelcontextprotocol/client/validators/ajv");
const Ajv2020 = require("ajv/dist/2020").default;
const clientVersion = JSON.parse(readFileSync(path.join(modules, "@modelcontextprotocol", "client", "package.json"))).version;

const strictAjv = () => new Ajv2020({ strict: true, allErrors: true });
setTimeout(() => { console.error("ts_client_v2: timed out"); process.exit(3); }, 120_000).unref();

function compile(schema) {
  try { return { validate: strictAjv().compile(schema), error: null }; }
  catch (e) { return { validate: null, error: e.message }; }
}

// The SDK's Ajv validator around a strict Ajv, counting what the SDK itself validated.
class CountingValidator {
  constructor() { this.inner = new AjvJsonSchemaValidator(strictAjv()); this.results = []; }
  getValidator(schema) {
    const validate = this.inner.getValidator(schema);
    return (input) => { const r = validate(input); this.results.push(r.valid); return r; };
  }
}

async function protocolError(promise) {
  try { await promise; return null; }
  catch (e) {
    return { isProtocolError: e instanceof ProtocolError, code: e.code ?? null, message: e.message, data: e.data ?? null };
  }
}

function transport(withKey = true) {
  if (face === "stdio") {
    const [command, ...args] = rest;
    return new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  }
  const token = withKey ? process.env.SYSTEM1_TEST_BEARER : undefined;
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  return new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit });
}

const DECIDE = { question: "Is `rm -rf build/` destructive?" };
const JUDGE = { state: "kubectl delete namespace staging", questions: {
  d: { type: "noul", instructions: "Is it destructive?" },
  t: { type: "choice", instructions: "Which tool?", criteria: ["run_shell", "read_file"] } } };
const MODES = { legacy: { mode: "legacy" }, auto: { mode: "auto" }, pinned: { mode: { pin: "2026-07-28" } } };

async function session(negotiation) {
  const validator = new CountingValidator();
  const client = new Client({ name: "system1-ts-v2-test", version: "1.0.0" },
                            { jsonSchemaValidator: validator, versionNegotiation: negotiation });
  const out = {};
  try {
    await client.connect(transport());
    out.protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
    out.era = client.getProtocolEra() ?? null;
    out.supportedVersions = client.getDiscoverResult()?.supportedVersions ?? null;
    out.server = client.getServerVersion() ?? null;
    out.toolsCapability = client.getServerCapabilities()?.tools !== undefined;
    const { tools } = await client.listTools();
    out.tools = tools.map((t) => t.name);
    out.schemas = {};
    const schemas = {};
    for (const t of tools) {
      const input = compile(t.inputSchema), output = compile(t.outputSchema);
      schemas[t.name] = { input: input.validate, output: output.validate };
      out.schemas[t.name] = { input: input.error ?? "ok", output: output.error ?? "ok" };
    }
    out.decideArgumentsValid = schemas.system1_decide.input(DECIDE);
    out.judgeArgumentsValid = schemas.system1_judge.input(JUDGE);
    const before = validator.results.length;
    const decide = await client.callTool({ name: "system1_decide", arguments: DECIDE });
    const judge = await client.callTool({ name: "system1_judge", arguments: JUDGE });
    out.sdkValidated = validator.results.slice(before); // one result per call with an outputSchema
    out.decide = { isError: decide.isError ?? false, structuredContent: decide.structuredContent,
                   outputValid: schemas.system1_decide.output(decide.structuredContent) };
    out.judge = { isError: judge.isError ?? false, structuredContent: judge.structuredContent,
                  outputValid: schemas.system1_judge.output(judge.structuredContent) };
    const bad = await client.callTool({ name: "system1_decide", arguments: { question: "q", options: ["a"] } });
    out.badArguments = { isError: bad.isError ?? false, text: bad.content?.[0]?.text ?? null,
                         outputValid: schemas.system1_decide.output(bad.structuredContent) };
    out.unknownTool = await protocolError(client.callTool({ name: "system1_nope", arguments: {} }));
    out.stillServing = (await client.listTools()).tools.length;
  } catch (e) {
    out.failure = `${e?.constructor?.name}: ${e?.message}`;
  } finally {
    await client.close().catch(() => {});
  }
  return out;
}

// Over HTTP without the key: how the client reports the 401, per negotiation mode.
async function withoutKey(negotiation) {
  const client = new Client({ name: "system1-ts-v2-test", version: "1.0.0" }, { versionNegotiation: negotiation });
  try { await client.connect(transport(false)); return { connected: true }; }
  catch (e) { return { error: e?.constructor?.name, code: e.code ?? null, status: e.data?.status ?? null }; }
  finally { await client.close().catch(() => {}); }
}

const report = { client: clientVersion };
for (const [name, negotiation] of Object.entries(MODES)) report[name] = await session(negotiation);
if (face === "http") {
  report.withoutKey = {};
  for (const [name, negotiation] of Object.entries(MODES)) report.withoutKey[name] = await withoutKey(negotiation);
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(Object.keys(MODES).some((name) => report[name].failure) ? 1 : 0);
