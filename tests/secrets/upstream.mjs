// A stand-in API for the secrets tests: HTTPS (HTTP/1.1 and HTTP/2 by ALPN) and plain
// HTTP, answering every request with JSON {"ok": true, "path": ...} and recording each
// one (protocol, method, path, authority, headers, body, and whether its TLS resumed a
// session) as a JSON line, so that a test can see exactly what reached the API. A
// canned answer per path can be given (GitHub's and Notion's shapes, for their real MCP servers);
// /reflect... hands back what it was sent (reflect() below). Usage:
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
      rport: sock?.remotePort, // the same for requests that came on one connection
    });
    if (req.url.startsWith('/reflect')) return reflect(req, res, Buffer.concat(chunks).toString('latin1'));
    // /big?n=BYTES: a large answer (for a client that does not read it)
    if (req.url.startsWith('/big')) {
      const n = Math.min(Number(new URL(req.url, 'http://x').searchParams.get('n')) || 0, 64 << 20);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': n });
      return res.end(Buffer.alloc(n, 120));
    }
    const echo = req.headers['x-echo'];
    const canned = answers[req.url.split('?')[0]];
    const body = JSON.stringify(canned !== undefined ? canned : { ok: true, path: req.url, echo: echo || null });
    const h = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    // "close=1" in the query: the connection ends after this answer (HTTP/1.1)
    if (req.url.includes('close=1') && !req.stream) h.connection = 'close';
    res.writeHead(200, h);
    res.end(body);
  });
}

// /reflect...: an API that hands back what it was sent, as real ones do (CORS reflection
// of Origin, an error quoting a header): X-Echo in a header of the same name, Origin in
// Access-Control-Allow-Origin, and a JSON body of X-Echo, its percent-encoding, the
// Authorization header and the request's body. The body is written in two parts 20 ms
// apart, split inside the echoed value, so that the value crosses reads (and HTTP/1.1
// chunks, or HTTP/2 DATA frames); "cl" in the path: with a Content-Length instead of
// chunked, otherwise the echo is in a trailer too.
function reflect(req, res, reqBody) {
  const echo = req.headers['x-echo'] || '';
  const body = JSON.stringify({ echo, pct: encodeURIComponent(echo), auth: req.headers.authorization || '', body: reqBody });
  const at = echo ? body.indexOf(echo) + (echo.length >> 1) : body.length >> 1;
  const cl = req.url.includes('cl');
  const h = { 'content-type': 'application/json', 'x-echo': echo, 'access-control-allow-origin': req.headers.origin || '*' };
  if (cl) h['content-length'] = Buffer.byteLength(body);
  else if (!req.stream) h.trailer = 'x-echo-trailer';
  res.writeHead(200, h);
  res.write(body.slice(0, at));
  setTimeout(() => {
    if (!cl) res.addTrailers({ 'x-echo-trailer': echo });
    res.end(body.slice(at));
  }, 20);
}

const tls = http2.createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), allowHTTP1: true }, handler);
const plain = http.createServer(handler);
tls.listen(Number(httpsPort), host, () => {
  plain.listen(Number(httpPort), host, () => {
    process.stdout.write(JSON.stringify({ https: tls.address().port, http: plain.address().port }) + '\n');
  });
});
process.on('SIGTERM', () => process.exit(0));
