// Two `hub serve --http` instances that share one Redis (hub.json memory.redis), as
// behind a load balancer: an "always" and a "never" given through instance 1 hold at
// instance 2, for a client there that cannot be asked (no elicitation: --answers deny
// would refuse). Prints TAP lines.
//   node shared_grants.mjs URL1 URL2
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url1, url2] = process.argv.slice(2);
let failures = 0;
const ok = (cond, what, why = "") => {
  if (cond) console.log(`ok - ${what}`);
  else {
    failures++;
    console.log(`not ok - ${what}${why ? ": " + why : ""}`);
  }
};
const text = (r) => (r.content || []).map((c) => c.text || "").join(" ");

async function connect(url, elicitation, answers) {
  const client = new Client({ name: "grants-test", version: "1.0" },
    { capabilities: elicitation ? { elicitation: {} } : {} });
  if (elicitation)
    client.setRequestHandler(ElicitRequestSchema, async () =>
      ({ action: "accept", content: { decision: answers.shift() || "no" } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const answers = [];
const a = await connect(url1, true, answers);
answers.push("always");
let r = await a.callTool({ name: "alpha__echo", arguments: { text: "one" } });
ok(!r.isError && r.structuredContent?.text === "one", "instance 1: alpha.echo runs after the user answers always", text(r));
answers.push("never");
r = await a.callTool({ name: "beta__echo", arguments: { text: "two" } });
ok(r.isError, "instance 1: beta.echo refused after the user answers never", text(r));

const b = await connect(url2, false, []);
r = await b.callTool({ name: "alpha__echo", arguments: { text: "three" } });
ok(!r.isError && r.structuredContent?.text === "three",
  "instance 2: the always given through instance 1 holds (no question, --answers deny)", text(r));
r = await b.callTool({ name: "beta__echo", arguments: { text: "four" } });
ok(r.isError && /never/.test(text(r)), "instance 2: the never given through instance 1 holds", text(r));
r = await b.callTool({ name: "gamma__echo", arguments: { text: "five" } }).catch((e) => ({ isError: true, content: [{ text: String(e) }] }));
ok(r.isError && /cannot be asked/.test(text(r)),
  "instance 2: a tool with no grant is refused as --answers says (the control)", text(r));
await a.close();
await b.close();
process.exit(failures ? 1 : 0);
