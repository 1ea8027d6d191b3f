#!/usr/bin/env node
// The MCP server test_spokes_npm.sh publishes to its stand-in registry (publish.py puts
// each version's tool description in place of @DESCRIPTION@): one tool, no SDK.
"use strict";
const tool = {
    name: "echo",
    description: "@DESCRIPTION@",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
};
const answer = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
function handle(req) {
    if (req.id === undefined) return;
    if (req.method === "initialize")
        return answer(req.id, { protocolVersion: "2025-06-18", capabilities: { tools: {} },
                                serverInfo: { name: "isolate-test-mcp", version: "1" } });
    if (req.method === "tools/list") return answer(req.id, { tools: [tool] });
    if (req.method === "tools/call")
        return answer(req.id, { content: [{ type: "text", text: String(req.params.arguments.message) }] });
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "no such method" } }) + "\n");
}
let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
    buf += chunk;
    for (let nl; (nl = buf.indexOf("\n")) >= 0; buf = buf.slice(nl + 1)) {
        try { handle(JSON.parse(buf.slice(0, nl))); } catch { /* not JSON: ignored */ }
    }
});
