// One HTTP/2 request through netproxy, with the headers exactly as given (node's http2
// sends a `host` beside `:authority` if asked to, as a hostile client would), for
// test_secrets_attack.sh. Usage:
//   node h2req.mjs PROXY_PORT HOST:PORT CA_FILE HEADERS_JSON [BODY]
// prints {"status", "headers", "trailers", "body"} or {"error"}.
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';

const [proxyPort, target, caFile, headersJson, body] = process.argv.slice(2);
const host = target.split(':')[0];
const out = (o) => { process.stdout.write(JSON.stringify(o) + '\n'); process.exit(0); };
setTimeout(() => out({ error: 'timeout' }), 10000);

const sock = net.connect(Number(proxyPort), '127.0.0.1', () => {
  sock.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
});
let head = Buffer.alloc(0);
sock.on('error', (e) => out({ error: e.message }));
sock.on('data', function onData(d) {
  head = Buffer.concat([head, d]);
  const end = head.indexOf('\r\n\r\n');
  if (end < 0) return;
  sock.removeListener('data', onData);
  if (!/^HTTP\/1\.1 200/.test(head.toString('latin1'))) return out({ error: head.toString('latin1').split('\r\n')[0] });
  const t = tls.connect({ socket: sock, servername: host, ca: fs.readFileSync(caFile), ALPNProtocols: ['h2'] });
  const session = http2.connect(`https://${target}`, { createConnection: () => t });
  session.on('error', (e) => out({ error: e.message }));
  const req = session.request(JSON.parse(headersJson), { endStream: body === undefined });
  if (body !== undefined) req.end(body);
  const res = { body: '' };
  req.on('response', (h) => { res.status = h[':status']; res.headers = h; });
  req.on('trailers', (h) => { res.trailers = h; });
  req.on('data', (c) => { res.body += c.toString('latin1'); });
  req.on('end', () => out(res));
  req.on('error', (e) => out({ error: e.message, ...res }));
});
