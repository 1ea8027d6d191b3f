// The official MCP TypeScript SDK client against `hub serve`: prints TAP lines.
//   node client.mjs stdio HUB CONF          drives `HUB serve --stdio --config CONF`
//   node client.mjs http URL TOKEN          drives `hub serve --http` at URL with TOKEN
// What it checks is the same over both transports: tools listed, calls answered, the
// hub's permission question answered as an elicitation (once, no, and "always" not
// offered for an irreversible tool), a spoke's own question and sampling request
// reaching the client, a cancelled call, and a client without elicitation refused
// with the reason.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [mode, a1, a2] = process.argv.slice(2);
let failures = 0;
const ok = (cond, what, why = "") => {
  if (cond) console.log(`ok - ${mode}: ${what}`);
  else {
    failures++;
    console.log(`not ok - ${mode}: ${what}${why ? ": " + why : ""}`);
  }
};

function transport() {
  if (mode === "stdio")
    return new StdioClientTransport({
      command: a1,
      // Calls go to several apps in one session: the data question is test_serve_hostile's.
      args: ["serve", "--stdio", "--config", a2, "--allow-data-flows"],
      stderr: "inherit",
    });
  return new StreamableHTTPClientTransport(new URL(a1), {
    requestInit: { headers: { Authorization: `Bearer ${a2}` } },
  });
}

const text = (r) => (r.content || []).map((c) => c.text || "").join(" ");

async function withElicitation() {
  const questions = [];
  const answers = []; // queued replies, first in first out
  const client = new Client(
    { name: "serve-test", version: "1.0" },
    { capabilities: { elicitation: {}, sampling: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    questions.push(req.params);
    return answers.shift() || { action: "decline" };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
    role: "assistant",
    content: { type: "text", text: "hi from the client's model" },
    model: "test-model",
    stopReason: "endTurn",
  }));
  await client.connect(transport());
  ok(client.getServerVersion()?.name === "isolategpt-hub", "initialize: serverInfo is the hub's");

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  ok(names.includes("alpha__echo") && names.includes("beta__relay"), "tools/list names APP__TOOL",
    names.slice(0, 5).join(","));
  const echoTool = tools.find((t) => t.name === "alpha__echo");
  ok(echoTool && echoTool.outputSchema && echoTool.inputSchema.required?.[0] === "text",
    "a tool keeps its manifest's schemas");

  let r = await client.callTool({ name: "alpha__echo", arguments: { text: "hello" } });
  ok(r.structuredContent?.text === "hello" && !r.isError, "tools/call runs in the spoke",
    JSON.stringify(r));

  r = await client.callTool({ name: "alpha__echo", arguments: { text: 5 } });
  ok(r.isError && /hub-validation/.test(text(r)), "arguments breaking the schema: refused by the hub",
    JSON.stringify(r));

  // A call between apps: the hub asks twice, through the client: may alpha call
  // beta.echo with these arguments, and may beta's result go back to alpha.
  answers.push({ action: "accept", content: { decision: "once" } },
    { action: "accept", content: { decision: "once" } });
  r = await client.callTool({
    name: "alpha__relay", arguments: { tool: "beta.echo", arguments: { text: "secret-42" } },
  });
  const q = questions.at(-2), qr = questions.at(-1);
  ok(q && /alpha wants to call beta\.echo/.test(q.message) && /secret-42/.test(q.message),
    "the permission question names both apps and quotes what will be sent", q && q.message);
  ok(qr && /result of beta\.echo is going back to the app alpha/.test(qr.message) &&
    /secret-42/.test(qr.message), "the relay question quotes the result", qr && qr.message);
  ok(q && JSON.stringify(q.requestedSchema.properties.decision.enum) ===
    '["once","session","always","no","never"]', "the choices: once/session/always/no/never");
  ok(r.structuredContent?.ok === true && r.structuredContent.result?.structuredContent?.text === "secret-42",
    "answered once: the call between apps ran", JSON.stringify(r.structuredContent));

  const asked = questions.length;
  answers.push({ action: "accept", content: { decision: "no" } });
  r = await client.callTool({
    name: "alpha__relay", arguments: { tool: "beta.echo", arguments: { text: "x" } },
  });
  ok(questions.length === asked + 1 && r.structuredContent?.ok === false &&
    r.structuredContent.code === -32001, "answered no: refused (-32001)", JSON.stringify(r.structuredContent));

  // An irreversible tool: "always" is not offered.
  answers.push({ action: "accept", content: { decision: "session" } },
    { action: "accept", content: { decision: "session" } });
  r = await client.callTool({
    name: "alpha__relay", arguments: { tool: "delta.echo", arguments: { text: "y" } },
  });
  const qi = questions.at(-2);
  ok(qi && !qi.requestedSchema.properties.decision.enum.includes("always") &&
    /cannot be undone/.test(qi.message), "irreversible tool: no \"always\" among the choices",
    qi && JSON.stringify(qi.requestedSchema));
  ok(r.structuredContent?.ok === true, "answered session: ran", JSON.stringify(r.structuredContent));
  const before = questions.length;
  r = await client.callTool({
    name: "alpha__relay", arguments: { tool: "delta.echo", arguments: { text: "z" } },
  });
  ok(questions.length === before && r.structuredContent?.ok === true,
    "session answer: not asked again in this session");

  // A spoke's own question, labelled with its app, and its sampling request.
  answers.push({ action: "accept", content: { color: "blue" } });
  r = await client.callTool({ name: "beta__ask", arguments: {} });
  ok(/^\[beta\] Which color\?/.test(questions.at(-1)?.message || "") &&
    r.structuredContent?.answer?.content?.color === "blue",
    "a spoke's elicitation reaches the client labelled with its app", JSON.stringify(r.structuredContent));
  r = await client.callTool({ name: "beta__sample", arguments: {} });
  ok(r.structuredContent?.ok === true && /client's model/.test(JSON.stringify(r.structuredContent)),
    "a spoke's sampling request is answered by the client's model", JSON.stringify(r.structuredContent));

  // A spoke's progress reaches the client under the client's own token, its log
  // messages at the level the client set.
  const progress = [];
  r = await client.callTool({ name: "conformance__test_tool_with_progress", arguments: {} },
    undefined, { onprogress: (p) => progress.push(p) });
  // The SDK runs notification handlers a microtask late and drops the call's progress
  // handler when the answer arrives: the last update, read together with the answer,
  // can miss it. The first two are always seen.
  ok(!r.isError && progress.length >= 2 && progress[0].progress === 0 && progress[1].progress === 50 &&
    progress[1].total === 100, "a spoke's progress reaches the client", JSON.stringify(progress));
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await client.setLoggingLevel("info");
  r = await client.callTool({ name: "conformance__test_tool_with_logging", arguments: {} });
  ok(logs.length === 3 && logs[0].data === "Tool execution started" && logs[0].logger.startsWith("conformance"),
    "a spoke's log messages reach the client, named by app", JSON.stringify(logs));
  await client.setLoggingLevel("warning");
  r = await client.callTool({ name: "conformance__test_tool_with_logging", arguments: {} });
  ok(logs.length === 3, "... and not below the level the client set");

  // Cancel a long call: the SDK sends notifications/cancelled; the session goes on.
  const ac = new AbortController();
  const t0 = Date.now();
  const slow = client.callTool({ name: "gamma__sleep", arguments: { ms: 3000 } }, undefined,
    { signal: ac.signal });
  setTimeout(() => ac.abort("test cancels"), 300);
  let aborted = false;
  try { await slow; } catch (e) { aborted = true; }
  ok(aborted && Date.now() - t0 < 2000, "a call cancelled by the client ends at once for it");
  r = await client.callTool({ name: "alpha__echo", arguments: { text: "after" } });
  ok(r.structuredContent?.text === "after", "the session serves on after a cancellation");

  ok((await client.ping()) !== undefined, "ping");
  if (mode === "http") await client.transport.terminateSession();
  await client.close();
}

async function withoutElicitation() {
  const client = new Client({ name: "plain-client", version: "2.0" }, { capabilities: {} });
  await client.connect(transport());
  const r = await client.callTool({
    name: "alpha__relay", arguments: { tool: "beta.echo", arguments: { text: "x" } },
  });
  ok(r.structuredContent?.ok === false && r.structuredContent.code === -32001,
    "no elicitation and --answers deny: the call between apps is refused", JSON.stringify(r.structuredContent));
  ok(/cannot be asked \(it declared no elicitation\); --answers decided no/.test(r.structuredContent?.message),
    "the refusal says why", r.structuredContent?.message);
  if (mode === "http") await client.transport.terminateSession();
  await client.close();
}

try {
  await withElicitation();
  await withoutElicitation();
} catch (e) {
  ok(false, "the scenario ran to its end", e && (e.stack || e.message || String(e)));
}
process.exit(failures ? 1 : 0);
