// For the real servers of test_secrets_servers.sh on Node 20, whose HTTP clients do not
// tunnel through HTTPS_PROXY (fetch and node-fetch ignore it; axios sends the request to
// the proxy in clear instead of CONNECT): loaded with NODE_OPTIONS=--require, it makes
// every https request without an agent of its own, and fetch, go through the proxy with
// CONNECT, as Node 22.21+'s NODE_USE_ENV_PROXY or the
// jail's transparent egress does. The servers themselves run unchanged.
'use strict';
const http = require('node:http');
const https = require('node:https');
const tls = require('node:tls');

const url = process.env.HTTPS_PROXY || process.env.https_proxy;
if (url) {
  const proxy = new URL(url);
  class ConnectAgent extends https.Agent {
    createConnection(opts, cb) {
      const target = `${opts.host}:${opts.port || 443}`;
      const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target,
                                 headers: { host: target } });
      req.once('connect', (res, socket) => {
        if (res.statusCode !== 200) {
          socket.destroy();
          cb(new Error(`proxy answered ${res.statusCode} for ${target}`));
          return;
        }
        const t = tls.connect({ ...opts, socket, servername: opts.servername || opts.host });
        t.once('secureConnect', () => cb(null, t));
        t.once('error', cb);
      });
      req.once('error', cb);
      req.end();
    }
  }
  https.globalAgent = new ConnectAgent({ keepAlive: true });
  // fetch, on the same agent: the request through https, the answer as a web Response
  // (Node's own class), enough for what these servers ask of it.
  globalThis.fetch = (input, init = {}) => new Promise((resolve, reject) => {
    const u = new URL(typeof input === 'string' ? input : input.url);
    const headers = Object.fromEntries(new Headers(init.headers || {}).entries());
    const req = https.request(u, { method: init.method || 'GET', headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        const status = res.statusCode;
        const body = status === 204 || status === 304 ? null : Buffer.concat(chunks);
        resolve(new Response(body, { status, statusText: res.statusMessage, headers: h }));
      });
      res.on('error', reject);
    });
    req.on('error', (e) => reject(new TypeError('fetch failed', { cause: e })));
    if (init.body) req.write(init.body);
    req.end();
  });
  // axios reads the variables itself and would bypass the agent: it gets none.
  delete process.env.HTTPS_PROXY;
  delete process.env.https_proxy;
}
