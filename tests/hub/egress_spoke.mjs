// egress_spoke.mjs: a Node MCP server (no SDK: newline-delimited JSON-RPC on stdin and
// stdout) that uses the network the way servers from npm do, with no proxy settings:
// Node's built-in fetch (undici), dns.lookup (getaddrinfo), net and tls sockets, and
// child_process for host programs. test_hub_egress.sh runs it as a spoke.
import child_process from "node:child_process";
import dns from "node:dns";
import net from "node:net";
import readline from "node:readline";
import tls from "node:tls";

const obj = (properties, required = []) => ({ type: "object", properties, required });
const TOOLS = [
    { name: "fetch", description: "GET a URL with fetch().", inputSchema: obj({ url: { type: "string" } }, ["url"]) },
    { name: "lookup", description: "Resolve a name.", inputSchema: obj({ name: { type: "string" } }, ["name"]) },
    {
        name: "connect", description: "Open a TCP (or TLS) connection, send, read until closed.",
        inputSchema: obj({ host: { type: "string" }, port: { type: "integer" }, send: { type: "string" },
                           servername: { type: "string" } }, ["host", "port"]),
    },
    { name: "run", description: "Run a program.", inputSchema: obj({ argv: { type: "array", items: { type: "string" } } }, ["argv"]) },
    { name: "wasm", description: "Instantiate WebAssembly memories.", inputSchema: obj({ count: { type: "integer" } }, ["count"]) },
];

const errText = (e) => String((e && (e.cause?.code || e.code || e.cause?.message || e.message)) || e);

async function call(name, a) {
    switch (name) {
    case "fetch":
        try {
            const r = await fetch(a.url, { signal: AbortSignal.timeout(8000) });
            return { status: r.status, body: await r.text() };
        } catch (e) {
            return { error: errText(e) };
        }
    case "lookup":
        try {
            return { addresses: (await dns.promises.lookup(a.name, { all: true })).map((x) => x.address) };
        } catch (e) {
            return { error: errText(e) };
        }
    case "connect":
        return await new Promise((resolve) => {
            const chunks = [];
            let connected = false;
            const s = a.servername !== undefined
                ? tls.connect({ host: a.host, port: a.port, servername: a.servername, rejectUnauthorized: false })
                : net.connect({ host: a.host, port: a.port });
            s.setTimeout(5000, () => s.destroy(new Error("timeout")));
            s.on(a.servername !== undefined ? "secureConnect" : "connect", () => {
                connected = true;
                if (a.send !== undefined) s.end(a.send);
            });
            s.on("data", (d) => chunks.push(d));
            s.on("error", (e) => resolve({ connected, error: errText(e), data: Buffer.concat(chunks).toString() }));
            s.on("close", () => resolve({ connected, data: Buffer.concat(chunks).toString() }));
        });
    case "run":
        return await new Promise((resolve) => {
            child_process.execFile(a.argv[0], a.argv.slice(1), { timeout: 10000 }, (e, stdout, stderr) =>
                resolve({ error: e ? errText(e) : "", status: e ? e.code ?? null : 0, stdout, stderr }));
        });
    case "wasm": {
        const kept = [];
        try {
            for (let i = 0; i < a.count; i++)
                kept.push(new WebAssembly.Memory({ initial: 1, maximum: 65536 }));
            return { instances: kept.length };
        } catch (e) {
            return { instances: kept.length, error: String(e) };
        }
    }
    }
    return { error: "no such tool" };
}

const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
readline.createInterface({ input: process.stdin }).on("line", async (line) => {
    let m;
    try { m = JSON.parse(line); } catch { return; }
    if (m.method === "initialize")
        send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
                                                   serverInfo: { name: "egress-spoke", version: "1.0.0" } } });
    else if (m.method === "tools/list")
        send({ jsonrpc: "2.0", id: m.id, result: { tools: TOOLS } });
    else if (m.method === "tools/call") {
        const r = await call(m.params.name, m.params.arguments || {});
        send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: JSON.stringify(r) }] } });
    } else if (m.id !== undefined)
        send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } });
});
