// The smallest Node MCP server: newline-delimited JSON-RPC on stdin and stdout, one
// tool (echo), no SDK and no module beyond node's own. scripts/bench/mcpservers starts
// it as a spoke to measure what the sandbox adds to node's own start-up (against
// `node -e 0`), apart from what a server's code costs to load.
"use strict";
const tool = {
    name: "echo",
    description: "Echoes the message back.",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
};
const answer = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
function handle(req) {
    if (req.id === undefined) return;
    switch (req.method) {
    case "initialize":
        return answer(req.id, { protocolVersion: req.params.protocolVersion, capabilities: { tools: {} },
                                serverInfo: { name: "node-minimal", version: "1.0" } });
    case "tools/list":
        return answer(req.id, { tools: [tool] });
    case "tools/call":
        return answer(req.id, { content: [{ type: "text", text: String(req.params.arguments.message) }] });
    default:
        return process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "no such method" } }) + "\n");
    }
}
let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
    buf += chunk;
    for (let nl; (nl = buf.indexOf("\n")) >= 0; buf = buf.slice(nl + 1)) {
        try { handle(JSON.parse(buf.slice(0, nl))); } catch { /* not JSON: ignored */ }
    }
});
