// A stand-in remote MCP server for tests/remote: Streamable HTTP over HTTPS, built on the
// MCP SDK the suite already pins (tests/mcpservers/node_modules), one MCP session per
// Mcp-Session-Id. /mcp answers with SSE streams (the SDK's default), /json with JSON
// bodies. Every request needs `Authorization: Bearer TOKEN` (else 401 with an RFC 9728
// WWW-Authenticate naming the protected resource metadata) and is recorded as a JSON line
// (method, path, authorization, session, JSON-RPC method). The tools are made for each
// new session: when the file CHANGED exists, echo's description differs (a server that
// changed its tools). Usage:
//   node remote.mjs CERT KEY RECORD_FILE HOST PORT TOKEN CHANGED
// prints {"port": PORT} once listening.
import fs from 'node:fs';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.join(here, '../mcpservers/node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Server } = await import(path.join(sdk, 'server/index.js'));
const { StreamableHTTPServerTransport } = await import(path.join(sdk, 'server/streamableHttp.js'));
const { ListToolsRequestSchema, CallToolRequestSchema, isInitializeRequest } = await import(
  path.join(sdk, 'types.js')
);

const [cert, key, recordFile, host, port, token, changedFile] = process.argv.slice(2);
const record = (r) => fs.appendFileSync(recordFile, JSON.stringify(r) + '\n');

function makeServer() {
  const changed = fs.existsSync(changedFile);
  const server = new Server({ name: 'standin-remote', version: '1.0.0' }, { capabilities: { tools: {} } });
  const tools = [
    {
      name: 'echo',
      description: changed ? 'Echoes the text back (and now something else).' : 'Echoes the text back.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      outputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      annotations: { readOnlyHint: true },
    },
    {
      name: 'slow',
      description: 'Answers after the given number of milliseconds.',
      inputSchema: { type: 'object', properties: { ms: { type: 'integer', maximum: 20000 } }, required: ['ms'] },
      annotations: { readOnlyHint: true },
    },
  ];
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const a = req.params.arguments || {};
    if (req.params.name === 'echo')
      return { content: [{ type: 'text', text: a.text }], structuredContent: { text: a.text } };
    if (req.params.name === 'slow') {
      await new Promise((r) => setTimeout(r, a.ms));
      return { content: [{ type: 'text', text: `slept ${a.ms} ms` }] };
    }
    return { content: [{ type: 'text', text: 'no such tool' }], isError: true };
  });
  return server;
}

const transports = {};

async function handle(req, res, body) {
  const sid = req.headers['mcp-session-id'];
  const rpc = body && !Array.isArray(body) ? body.method || null : null;
  record({ method: req.method, path: req.url, authorization: req.headers.authorization || null, session: sid || null, rpc });
  if (req.headers.authorization !== `Bearer ${token}`) {
    res.writeHead(401, {
      'www-authenticate': `Bearer resource_metadata="https://${req.headers.host}/.well-known/oauth-protected-resource"`,
      'content-type': 'application/json',
    });
    res.end(JSON.stringify({ error: 'invalid_token' }));
    return;
  }
  let transport = sid ? transports[sid] : undefined;
  if (!transport) {
    if (sid || req.method !== 'POST' || !isInitializeRequest(body)) {
      res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } }));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: req.url.startsWith('/json'),
      onsessioninitialized: (id) => {
        transports[id] = transport;
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) delete transports[transport.sessionId];
    };
    await makeServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

const srv = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
      res.writeHead(400).end();
      return;
    }
    handle(req, res, body).catch((e) => {
      process.stderr.write(`remote.mjs: ${e.stack}\n`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
});
srv.listen(Number(port), host, () => process.stdout.write(JSON.stringify({ port: srv.address().port }) + '\n'));
process.on('SIGTERM', () => process.exit(0));
