// A second real client: the official TypeScript SDK (@modelcontextprotocol/sdk), with a
// strict Ajv (JSON Schema 2020-12, strict mode) as its output-schema validator, as strict
// TypeScript clients configure it. Used by tests/test_mcp_ts_client.py.
//
//   node ts_client.mjs <tools dir> <server command> [args...]
//
// Connects over stdio, lists tools, compiles every published schema with strict Ajv, calls
// system1_decide and system1_judge (arguments checked against the input schemas, results by
// the SDK against the output schemas), makes an argument error and an unknown-tool call, and
// prints one JSON object on stdout.
import { createRequire } from "node:module";
import path from "node:path";

const [toolsDir, command, ...args] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(toolsDir), "tsclient", "node_modules", "noop.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { McpError } = require("@modelcontextprotocol/sdk/types.js");
const { AjvJsonSchemaValidator } = require("@modelcontextprotocol/sdk/validation/ajv");
const Ajv2020 = require("ajv/dist/2020").default;

const strictAjv = () => new Ajv2020({ strict: true, allErrors: true });
setTimeout(() => { console.error("ts_client: timed out"); process.exit(3); }, 60_000).unref();

function compile(schema) {
  try { return { validate: strictAjv().compile(schema), error: null }; }
  catch (e) { return { validate: null, error: e.message }; }
}

async function protocolError(promise) {
  try { await promise; return null; }
  catch (e) { return { isMcpError: e instanceof McpError, code: e.code, message: e.message, data: e.data ?? null }; }
}

const DECIDE = { question: "Is `rm -rf build/` destructive?" };
const JUDGE = { state: "kubectl delete namespace staging", questions: {
  d: { type: "noul", instructions: "Is it destructive?" },
  t: { type: "choice", instructions: "Which tool?", criteria: ["run_shell", "read_file"] } } };

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "system1-ts-test", version: "1.0.0" },
                          { jsonSchemaValidator: new AjvJsonSchemaValidator(strictAjv()) });
const out = {};
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  const { tools } = await client.listTools(); // the SDK compiles every outputSchema here
  out.tools = tools.map((t) => t.name);
  out.schemas = {};
  const inputs = {};
  for (const t of tools) {
    const input = compile(t.inputSchema), output = compile(t.outputSchema);
    inputs[t.name] = input.validate;
    out.schemas[t.name] = { input: input.error ?? "ok", output: output.error ?? "ok" };
  }
  const caps = await client.callTool({ name: "system1_capabilities", arguments: {} });
  out.capabilitySchemas = Object.fromEntries(Object.entries(caps.structuredContent.schemas)
    .map(([name, schema]) => [name, compile(schema).error ?? "ok"]));
  // Negative control: the same strict Ajv refuses pydantic's vendor keyword.
  out.control = compile({ type: "object", oneOf: [{ type: "object" }], discriminator: { propertyName: "type" } }).error;

  out.decideArgumentsValid = inputs.system1_decide(DECIDE);
  out.judgeArgumentsValid = inputs.system1_judge(JUDGE);
  out.badArgumentsValid = inputs.system1_decide({ question: "q", options: ["a"] });
  const decide = await client.callTool({ name: "system1_decide", arguments: DECIDE });
  out.decide = { isError: decide.isError ?? false, structuredContent: decide.structuredContent };
  const judge = await client.callTool({ name: "system1_judge", arguments: JUDGE });
  out.judge = { isError: judge.isError ?? false, structuredContent: judge.structuredContent };
  const bad = await client.callTool({ name: "system1_decide", arguments: { question: "q", options: ["a"] } });
  out.badArguments = { isError: bad.isError ?? false, text: bad.content?.[0]?.text ?? null };
  out.unknownTool = await protocolError(client.callTool({ name: "system1_nope", arguments: {} }));
  out.stillServing = (await client.listTools()).tools.length;
} catch (e) {
  out.failure = `${e?.constructor?.name}: ${e?.message}`;
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(out.failure ? 1 : 0);
