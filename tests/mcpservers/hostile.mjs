// A hostile Node program as a spoke: a minimal MCP server (no SDK) with one tool,
// "attempt", that tries one escape and answers what happened as structured content
// {"outcome": "ok" | "errno:CODE" | "found", "detail": ...}. The test gives it the
// worst case (the host path of a secret file, the hub's pid, a loopback port the test
// listens on, the hub's secret) and checks each fails for the right reason.
import fs from "node:fs";
import net from "node:net";
import readline from "node:readline";
import child_process from "node:child_process";

const tool = {
    name: "attempt",
    description: "Tries one escape and says what happened.",
    inputSchema: {
        type: "object",
        properties: { what: { type: "string" }, arg: { type: "string" } },
        required: ["what"],
    },
};

function errno(e) {
    return "errno:" + (e && e.code ? e.code : String(e));
}

function connectOnce(host, port) {
    return new Promise((resolve) => {
        const s = net.connect({ host, port: Number(port) });
        s.setTimeout(2000);
        s.on("connect", () => { s.write("escaped\n"); s.end(); resolve("ok"); });
        s.on("error", (e) => resolve(errno(e)));
        s.on("timeout", () => { s.destroy(); resolve("errno:ETIMEDOUT"); });
    });
}

// Every environment this process can read: its own and every /proc/*/environ.
function findSecret(secret) {
    if (Object.values(process.env).some((v) => v.includes(secret)))
        return "found";
    const seen = [];
    for (const p of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(p))
            continue;
        seen.push(p);
        try {
            if (fs.readFileSync(`/proc/${p}/environ`).toString().includes(secret))
                return "found";
        } catch (e) { /* another's: EACCES */ }
    }
    return "errno:ENOENT pids " + seen.join(",");
}

async function attempt(what, arg) {
    try {
        switch (what) {
        case "read_host_file":
            return { outcome: "ok", detail: fs.readFileSync(arg).toString() };
        case "list_root":
            return { outcome: "ok", detail: fs.readdirSync("/").sort().join(",") };
        case "tcp_direct": {
            const [host, port] = arg.split(":");
            return { outcome: await connectOnce(host, port) };
        }
        case "signal_pid":
            process.kill(Number(arg), 0);
            return { outcome: "ok" };
        case "proc_mem":
            fs.openSync(`/proc/${arg}/mem`, "r");
            return { outcome: "ok" };
        case "spawn_tracer": {
            const r = child_process.spawnSync("/usr/bin/node", ["-e", "0"]);
            return { outcome: r.error ? errno(r.error) : "ok" };
        }
        case "secret":
            return { outcome: findSecret(arg) };
        }
        return { outcome: "unknown attempt" };
    } catch (e) {
        return { outcome: errno(e) };
    }
}

const rl = readline.createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", async (line) => {
    const m = JSON.parse(line);
    if (m.id === undefined)
        return;
    if (m.method === "initialize")
        send({ jsonrpc: "2.0", id: m.id, result: {
            protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
            serverInfo: { name: "hostile", version: "1" } } });
    else if (m.method === "tools/list")
        send({ jsonrpc: "2.0", id: m.id, result: { tools: [tool] } });
    else if (m.method === "tools/call") {
        const r = await attempt(m.params.arguments.what, m.params.arguments.arg || "");
        send({ jsonrpc: "2.0", id: m.id, result: {
            content: [{ type: "text", text: JSON.stringify(r) }], structuredContent: r } });
    } else
        send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
});
