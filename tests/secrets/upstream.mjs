// A stand-in API for the secrets tests: HTTPS (HTTP/1.1 and HTTP/2 by ALPN) and plain
// HTTP, answering every request with JSON {"ok": true, "path": ...} and recording each
// one (protocol, method, path, authority, headers, body, and whether its TLS resumed a
// session) as a JSON line, so that a test can see exactly what reached the API. A
// canned answer per path can be given (GitHub's and Notion's shapes, for their real MCP servers). Usage:
//   node upstream.mjs CERT KEY RECORD_FILE [HOST HTTPS_PORT HTTP_PORT [ANSWERS.json]]
// prints {"https": PORT, "http": PORT} once listening (ports 0: the kernel's choice).
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';

const [cert, key, recordFile, host = '127.0.0.1', httpsPort = '0', httpPort = '0', answersFile] =
  process.argv.slice(2);
const answers = answersFile ? JSON.parse(fs.readFileSync(answersFile, 'utf8')) : {};
const record = (r) => fs.appendFileSync(recordFile, JSON.stringify(r) + '\n');

function handler(req, res) {
  const chunks = [];
  // Under HTTP/2 the session's socket stands for the TLS connection (taken now: a
  // stream reset later has no session).
  const sock = req.stream ? req.stream.session?.socket : req.socket;
  const resumed = typeof sock?.isSessionReused === 'function' ? sock.isSessionReused() : null;
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) if (!k.startsWith(':')) headers[k] = v;
    record({
      proto: req.httpVersion,
      method: req.method,
      path: req.url,
      authority: req.headers[':authority'] || req.headers.host,
      headers,
      body: Buffer.concat(chunks).toString('latin1'),
      resumed,
    });
    const echo = req.headers['x-echo'];
    const canned = answers[req.url.split('?')[0]];
    const body = JSON.stringify(canned !== undefined ? canned : { ok: true, path: req.url, echo: echo || null });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}

const tls = http2.createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), allowHTTP1: true }, handler);
const plain = http.createServer(handler);
tls.listen(Number(httpsPort), host, () => {
  plain.listen(Number(httpPort), host, () => {
    process.stdout.write(JSON.stringify({ https: tls.address().port, http: plain.address().port }) + '\n');
  });
});
process.on('SIGTERM', () => process.exit(0));
