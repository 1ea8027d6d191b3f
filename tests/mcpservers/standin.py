#!/usr/bin/env python3
"""A stand-in HTTPS upstream for the API servers of the corpus (test_corpus_api.sh) and the
catalog (test_catalog.sh); it also logs the headers netproxy puts the catalog's keys in.

    standin.py ADDR CERT KEY LOG

Listens on ADDR:443 (a loopback address of the test's own, so port 443 is free for it)
and answers every API host netproxy's `resolve` sends here, with the test CA's
certificate for all of them. Each request is written to LOG as one JSON line: the SNI of
its TLS handshake, its Host header, method and path. A request whose Host is not the
name of its SNI gets 421 and no answer body the server could use: the check that a
request "arrived for the right host" is that SNI, Host and the answer all agree."""
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

addr, cert, key, log_path = sys.argv[1:5]
log_lock = threading.Lock()

# Per host: (method, path prefix) -> (status, content type, body). Each body carries a
# marker the test looks for in the tool's answer.
ANSWERS = {
    "api.exa.ai": {("POST", "/search"): (200, "application/json", {
        "requestId": "standin-1", "resolvedSearchType": "neural",
        "results": [{"id": "https://standin.example/exa", "url": "https://standin.example/exa",
                     "title": "stand-in answer from api.exa.ai", "text": "stand-in text"}]})},
    "context7.com": {("GET", "/api/v2/context"): (200, "text/plain",
                                                  "stand-in docs from context7.com")},
    "api.github.com": {("GET", "/search/repositories"): (200, "application/json", {
        "total_count": 4242, "incomplete_results": False, "items": []})},
    "api.search.brave.com": {("GET", "/res/v1/web/search"): (200, "application/json", {
        "web": {"results": [{"title": "stand-in answer from api.search.brave.com",
                             "description": "stand-in", "url": "https://standin.example/brave"}]}})},
    # @zereight/mcp-gitlab's whoami checks the answer against its user schema.
    "gitlab.com": {("GET", "/api/v4/user"): (200, "application/json", {
        "id": 4242, "username": "standin", "name": "stand-in user from gitlab.com",
        "state": "active", "avatar_url": None, "web_url": "https://gitlab.com/standin",
        "created_at": "2026-01-01T00:00:00Z", "bio": None, "location": None,
        "public_email": None, "website_url": None, "organization": None, "job_title": None,
        "email": None, "last_sign_in_at": None, "confirmed_at": None,
        "last_activity_on": None})},
    # @apify/actors-mcp-server's get-actor-run: the run is not there (the tool says so).
    "api.apify.com": {("GET", "/v2/actor-runs/"): (404, "application/json", {
        "error": {"type": "record-not-found",
                  "message": "stand-in answer from api.apify.com: no such run"}})},
    "api.tavily.com": {("POST", "/search"): (200, "application/json", {
        "query": "q", "results": [{"title": "stand-in answer from api.tavily.com",
                                   "url": "https://standin.example/tavily", "content": "x",
                                   "score": 1}]})},
}


# The headers the catalog's entries name for their keys.
KEY_HEADERS = ["Authorization", "X-Subscription-Token", "x-api-key", "X-Figma-Token",
               "Circle-Token", "Api-Key", "X-BB-API-Key", "x-goog-api-key"]


def sni_callback(sock, name, _ctx):
    sock.sni = name  # read by the handler of the same connection


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.sni_callback = sni_callback


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        # The handshake in this connection's thread, not in accept(): a client that
        # stalls its ClientHello holds up only itself.
        self.request.settimeout(10)
        self.request = ctx.wrap_socket(self.request, server_side=True)
        super().setup()

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(min(length, 1 << 20))
        sni = getattr(self.connection, "sni", None)
        host = (self.headers.get("Host") or "").lower()
        if host.endswith(":443"):
            host = host[:-4]
        with log_lock, open(log_path, "a") as f:
            f.write(json.dumps({"sni": sni, "host": host, "method": self.command,
                                "path": self.path,
                                "keys": [self.headers.get(h) or "" for h in KEY_HEADERS]}) + "\n")
        status, ctype, body = 404, "text/plain", "stand-in: no such path"
        if sni is None or host != sni:
            status, body = 421, "stand-in: Host %r is not the SNI %r" % (host, sni)
        else:
            for (method, prefix), a in ANSWERS.get(host, {}).items():
                if self.command == method and self.path.startswith(prefix):
                    status, ctype, body = a
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = answer

    def log_message(self, *_):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A port probe (the test's wait for this server) closes before its handshake.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


Server((addr, 443), Handler).serve_forever()
