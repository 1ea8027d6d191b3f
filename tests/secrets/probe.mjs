// A spoke for the secrets tests, playing a tool that holds a key: an MCP server on
// stdio (newline-delimited JSON-RPC, no SDK) whose tools make HTTPS requests with its
// variables in them (${GITHUB_TOKEN} in a header, a URL or a body) the way a Node server does (https.request; through HTTPS_PROXY with CONNECT, which Node 20's own
// clients do not do), read files and show the environment, so that a test can try from
// inside the jail what a malicious tool would try.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import readline from 'node:readline';

const proxy = process.env.HTTPS_PROXY ? new URL(process.env.HTTPS_PROXY) : null;

// CONNECT through the proxy, then TLS with the host's name, as a client library does.
function connectAgent() {
  const agent = new https.Agent({ keepAlive: false });
  agent.createConnection = (opts, cb) => {
    const target = `${opts.host}:${opts.port}`;
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target,
                               headers: { host: target, ...(opts.proxyHeaders || {}) } });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) { socket.destroy(); cb(new Error(`proxy answered ${res.statusCode}`)); return; }
      const servername = opts.sni !== undefined ? opts.sni : opts.host;
      const t = tls.connect({ socket, servername: servername || undefined, ALPNProtocols: ['http/1.1'] });
      t.once('secureConnect', () => cb(null, t));
      t.once('error', (e) => cb(e));
    });
    req.on('error', (e) => cb(e));
    req.end();
  };
  return agent;
}

// ${NAME} in a request is the variable's value in this process, as a tool uses its key.
const expand = (v) => typeof v === 'string' ? v.replace(/\$\{([A-Z_]+)\}/g, (_, n) => process.env[n] || '')
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x)])) : v;

function request(raw) {
  const a = expand(raw);
  // "Basic64 user:pass": a Basic credential, encoded here (after the expansion).
  for (const [k, v] of Object.entries(a.headers || {}))
    if (typeof v === 'string' && v.startsWith('Basic64 ')) a.headers[k] = 'Basic ' + Buffer.from(v.slice(8)).toString('base64');
  return new Promise((resolve) => {
    const u = new URL(a.url);
    const agent = connectAgent();
    const opts = { method: a.method || 'GET', host: u.hostname, port: u.port || 443,
                   path: u.pathname + u.search, headers: a.headers || {}, agent };
    if (a.sni !== undefined) opts.sni = a.sni;
    if (a.proxyHeaders) opts.proxyHeaders = a.proxyHeaders;
    const req = https.request(opts, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, error: res.headers['x-proxy-error'] || null,
                                    body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', (e) => resolve({ status: 0, error: e.code || e.message, body: '' }));
    req.setTimeout(15000, () => req.destroy(new Error('timeout')));
    if (a.body) req.write(a.body);
    req.end();
  });
}

// Tunnels opened by `hold` and never read: a hostile tool filling netproxy's buffers.
const held = [];
function holdOne(a) {
  return new Promise((resolve) => {
    const u = new URL(a.url);
    const target = `${u.hostname}:${u.port || 443}`;
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target,
                               headers: { host: target } });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) { socket.destroy(); resolve(false); return; }
      const t = tls.connect({ socket, servername: u.hostname, ALPNProtocols: ['http/1.1'] });
      t.on('error', () => {});
      t.once('close', () => resolve(false)); // netproxy gone first
      socket.setTimeout(5000, () => { socket.destroy(); resolve(false); });
      t.once('secureConnect', () => {
        t.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.hostname}\r\n\r\n`);
        t.pause(); // never read the answer
        held.push(t);
        resolve(true);
      });
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

const tools = {
  hold: { schema: { type: 'object', properties: { url: { type: 'string' }, n: { type: 'integer' } }, required: ['url', 'n'] },
          run: async (a) => ({ opened: (await Promise.all(Array.from({ length: a.n }, () => holdOne(a)))).filter(Boolean).length }) },
  get: { schema: { type: 'object', properties: { url: { type: 'string' }, method: { type: 'string' },
                                                headers: { type: 'object' }, body: { type: 'string' },
                                                sni: { type: 'string' }, proxyHeaders: { type: 'object' } },
                   required: ['url'] },
         run: request },
  env: { schema: { type: 'object' },
         run: async () => {
           let environ;
           try { environ = fs.readFileSync('/proc/self/environ', 'latin1').replaceAll('\0', '\n'); } catch (e) { environ = 'unreadable: ' + (e.code || e.message); }
           return { env: process.env, environ };
         } },
  read: { schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
          run: async (a) => { try { return { ok: true, text: fs.readFileSync(a.path, 'latin1') }; }
                              catch (e) { return { ok: false, error: e.code || e.message }; } } },
  write: { schema: { type: 'object', properties: { name: { type: 'string' }, text: { type: 'string' } }, required: ['name', 'text'] },
           run: async (a) => { fs.writeFileSync('/data/' + a.name, expand(a.text)); return { ok: true }; } },
};

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.method === 'initialize')
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
                                                serverInfo: { name: 'secrets-probe', version: '1' } } });
  else if (m.method === 'tools/list')
    send({ jsonrpc: '2.0', id: m.id, result: { tools: Object.entries(tools).map(([name, t]) => (
      { name, description: `Probe ${name}.`, inputSchema: t.schema, annotations: { readOnlyHint: true } })) } });
  else if (m.method === 'tools/call') {
    try {
      const r = await tools[m.params.name].run(m.params.arguments || {});
      send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: JSON.stringify(r) }], structuredContent: r } });
    } catch (e) {
      send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: String(e) }], isError: true } });
    }
  } else if (m.id !== undefined)
    send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
});
