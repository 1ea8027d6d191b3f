"""Hostile and broken CONNECT requests: every class of malformed input the issue names,
limits, IP literals in every spelling, policy refusals, a real TLS ClientHello, clients
that vanish, and a slowloris crowd while others are served. Each case checks the status,
the X-Proxy-Error code, a one-line body, its audit record (matched by the client's
port) and that the proxy is still alive."""
import ssl
import threading

from nptest import *

srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": {}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
px = Proxy(["--allow", "allowed.example", "--ports", "443,%d" % echo,
            "--resolve", "echo.allowed.example:%d:127.0.0.1" % echo,
            "--upstream-allow-cidr", "127.0.0.1/32", "--dns-server", "127.0.0.1:%d" % dns,
            "--header-timeout", "3s", "--max-pending-per-spoke", "200"])


def client_hello():
    ctx = ssl.create_default_context()
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="allowed.example")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


R = lambda line, *hdrs: (line + "\r\n" + "".join(h + "\r\n" for h in hdrs) + "\r\n").encode(
    "latin-1")
OKH = "Host: allowed.example"
big_line = "CONNECT " + "a" * 9000 + ".allowed.example:443 HTTP/1.1"
flood = ["X-Flood-%d: y" % i for i in range(101)]
fat = ["X-Fat-%d: %s" % (i, "z" * 1000) for i in range(40)]
long_host = "a" * 4000 + ".allowed.example"

cases = [
    # request line and header syntax: 400
    ("bare LF line endings", b"CONNECT echo.allowed.example:443 HTTP/1.1\n\n", 400, "bad-request"),
    ("bare LF in a header", b"CONNECT a.allowed.example:443 HTTP/1.1\r\nHost: a\n\r\n", 400, "bad-request"),
    ("bare CR", b"CONNECT a.allowed.example:443 HTTP/1.1\r\nHost: a\r\r\n\r\n", 400, "bad-request"),
    ("NUL in the target", b"CONNECT a\x00.allowed.example:443 HTTP/1.1\r\n\r\n", 400, "bad-request"),
    ("NUL in a header", b"CONNECT a.allowed.example:443 HTTP/1.1\r\nX: a\x00b\r\n\r\n", 400, "bad-request"),
    ("control character in a header", b"CONNECT a.allowed.example:443 HTTP/1.1\r\nX: \x1b[31m\r\n\r\n", 400, "bad-request"),
    ("DEL in a header", b"CONNECT a.allowed.example:443 HTTP/1.1\r\nX: \x7f\r\n\r\n", 400, "bad-request"),
    ("control character in the method", b"CONN\x01ECT a.allowed.example:443 HTTP/1.1\r\n\r\n", 400, "bad-request"),
    ("two spaces after the method", R("CONNECT  a.allowed.example:443 HTTP/1.1"), 400, "bad-request"),
    ("space in the authority", R("CONNECT a.allowed .example:443 HTTP/1.1"), 400, "bad-request"),
    ("trailing space after the version", R("CONNECT a.allowed.example:443 HTTP/1.1 "), 400, "bad-request"),
    ("no HTTP version", R("CONNECT a.allowed.example:443"), 400, "bad-request"),
    ("lowercase version", R("CONNECT a.allowed.example:443 http/1.1"), 400, "bad-request"),
    ("obsolete line folding", R("CONNECT a.allowed.example:443 HTTP/1.1", OKH, " folded"), 400, "bad-request"),
    ("space before the colon", R("CONNECT a.allowed.example:443 HTTP/1.1", "Host : a"), 400, "bad-request"),
    ("empty header name", R("CONNECT a.allowed.example:443 HTTP/1.1", ": a"), 400, "bad-request"),
    ("leading empty line", b"\r\n" + R("CONNECT a.allowed.example:443 HTTP/1.1"), 400, "bad-request"),
    ("tab in the target", R("CONNECT a\t.allowed.example:443 HTTP/1.1"), 400, "bad-request"),
    ("TLS ClientHello instead of CONNECT", client_hello(), 400, "bad-request"),
    ("SSH banner", b"SSH-2.0-OpenSSH_9.2\r\n", 400, "bad-request"),
    ("random binary", bytes(range(256)) * 4, 400, "bad-request"),
    # authority form: 400
    ("missing port", R("CONNECT a.allowed.example HTTP/1.1"), 400, "bad-request"),
    ("empty port", R("CONNECT a.allowed.example: HTTP/1.1"), 400, "bad-request"),
    ("port 0", R("CONNECT a.allowed.example:0 HTTP/1.1"), 400, "bad-request"),
    ("port 65536", R("CONNECT a.allowed.example:65536 HTTP/1.1"), 400, "bad-request"),
    ("port with a leading zero", R("CONNECT a.allowed.example:0443 HTTP/1.1"), 400, "bad-request"),
    ("port with letters", R("CONNECT a.allowed.example:44x HTTP/1.1"), 400, "bad-request"),
    ("two ports", R("CONNECT a.allowed.example:443:443 HTTP/1.1"), 400, "bad-request"),
    ("userinfo", R("CONNECT user:hunter2@a.allowed.example:443 HTTP/1.1"), 400, "bad-request"),
    ("percent-encoding", R("CONNECT a.allow%65d.example:443 HTTP/1.1"), 400, "bad-request"),
    ("brackets around a name", R("CONNECT [a.allowed.example]:443 HTTP/1.1"), 400, "bad-request"),
    ("IPv6 without brackets", R("CONNECT ::1:443 HTTP/1.1"), 400, "bad-request"),
    ("absolute URI", R("CONNECT http://a.allowed.example:443 HTTP/1.1"), 400, "bad-request"),
    ("empty host", R("CONNECT :443 HTTP/1.1"), 400, "bad-request"),
    ("asterisk in the host", R("CONNECT *.allowed.example:443 HTTP/1.1"), 400, "bad-request"),
    ("backslash in the host", R("CONNECT a\\b.allowed.example:443 HTTP/1.1"), 400, "bad-request"),
    ("comma in the host", R("CONNECT a.allowed.example,b.example:443 HTTP/1.1"), 400, "bad-request"),
    # canonical host: 400
    ("empty label", R("CONNECT a..allowed.example:443 HTTP/1.1"), 400, "invalid-host"),
    ("two trailing dots", R("CONNECT a.allowed.example..:443 HTTP/1.1"), 400, "invalid-host"),
    ("label over 63 bytes", R("CONNECT %s.allowed.example:443 HTTP/1.1" % ("a" * 64)), 400, "invalid-host"),
    ("name over 253 bytes", R("CONNECT %sallowed.example:443 HTTP/1.1" % ("abcdefghi." * 25)), 400, "invalid-host"),
    ("leading hyphen", R("CONNECT -a.allowed.example:443 HTTP/1.1"), 400, "invalid-host"),
    ("invalid punycode", R("CONNECT xn--zz.allowed.example:443 HTTP/1.1"), 400, "invalid-host"),
    ("invalid UTF-8 in the host", b"CONNECT a\xff\xfe.allowed.example:443 HTTP/1.1\r\n\r\n", 400, "invalid-host"),
    ("numeric last label", R("CONNECT 1.2.3.4.5:443 HTTP/1.1"), 400, "invalid-host"),
    ("4000-byte host", R("CONNECT %s:443 HTTP/1.1" % long_host), 400, "invalid-host"),
    # method and version
    ("GET", R("GET http://a.allowed.example/ HTTP/1.1", OKH), 405, "method-not-allowed"),
    ("POST", R("POST / HTTP/1.1", OKH, "Content-Length: 0"), 405, "method-not-allowed"),
    ("lowercase connect", R("connect a.allowed.example:443 HTTP/1.1"), 405, "method-not-allowed"),
    ("HTTP/2.0", R("CONNECT a.allowed.example:443 HTTP/2.0"), 505, "http-version-not-supported"),
    ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "http-version-not-supported"),
    ("HTTP/0.9", R("CONNECT a.allowed.example:443 HTTP/0.9"), 505, "http-version-not-supported"),
    # limits
    ("request line over 8 KiB", R(big_line), 414, "request-line-too-long"),
    ("a 200 KB header", R("CONNECT a.allowed.example:443 HTTP/1.1", "X-Big: " + "b" * 200000), 431, "headers-too-large"),
    ("header flood: 101 fields", R("CONNECT a.allowed.example:443 HTTP/1.1", *flood), 431, "headers-too-large"),
    ("header section over 32 KiB", R("CONNECT a.allowed.example:443 HTTP/1.1", *fat), 431, "headers-too-large"),
    # policy: 403
    ("IP literal", R("CONNECT 127.0.0.1:443 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("decimal IP literal", R("CONNECT 2130706433:443 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("hex IP literal", R("CONNECT 0x7f000001:443 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("octal IP literal", R("CONNECT 0177.0.0.1:443 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("short IP literal", R("CONNECT 127.1:443 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("IPv6 literal", R("CONNECT [::1]:443 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("IPv4-mapped IPv6 literal", R("CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("metadata address literal", R("CONNECT 169.254.169.254:80 HTTP/1.1"), 403, "ip-literal-not-allowed"),
    ("a public suffix", R("CONNECT co.uk:443 HTTP/1.1"), 403, "public-suffix"),
    ("a name outside the allowlist", R("CONNECT evil.example:443 HTTP/1.1"), 403, "domain-not-allowed"),
    ("a lookalike suffix", R("CONNECT allowed.example.evil.net:443 HTTP/1.1"), 403, "domain-not-allowed"),
    ("a lookalike prefix", R("CONNECT notallowed.example:443 HTTP/1.1"), 403, "domain-not-allowed"),
    ("a port not allowed", R("CONNECT a.allowed.example:22 HTTP/1.1"), 403, "port-not-allowed"),
    ("fullwidth dots spelling an address", "CONNECT 127\uff0e0\uff0e0\uff0e1:443 HTTP/1.1\r\n\r\n".encode(), 400, "invalid-host"),
]


def run_case(what, raw, want_status, want_reason):
    s = socket.create_connection(("127.0.0.1", px.port), timeout=5)
    sport = s.getsockname()[1]
    try:
        s.sendall(raw)
    except OSError:
        pass  # the proxy may answer and close before a huge request is sent
    status, headers, body = parse_response(recv_all(s, 5))
    s.close()
    good = status == want_status and headers.get("x-proxy-error") == want_reason
    check(good, "%s: %s %s" % (what, want_status, want_reason),
          "got %s %s" % (status, headers.get("x-proxy-error")))
    rec = px.record_for(lambda r: r.get("source.port") == sport and r.get("event.action") == "connect")
    check(rec is not None and rec.get("event.reason") == want_reason and
          rec.get("event.outcome") == "failure" and rec.get("http.response.status_code") == want_status,
          "%s: audit record with event.reason %s" % (what, want_reason),
          str(rec and rec.get("event.reason")))
    line_body = body.endswith(b"\n") and body.count(b"\n") == 1 and body.startswith(b"netproxy: ")
    check(line_body, "%s: one-line body" % what, repr(body[:100]))
    return rec


recs = {}
for what, raw, st, reason in cases:
    recs[what] = run_case(what, raw, st, reason)
    if not px.alive():
        not_ok("proxy alive after: " + what)
        break
check(px.alive(), "proxy alive after %d bad-input cases" % len(cases))

# Specific record contents: sanitised, capped, no credentials.
r = recs.get("userinfo") or {}
check("hunter2" not in json.dumps(r) and r.get("url.original", "").startswith("[redacted]@"),
      "userinfo never reaches the audit log", r.get("url.original"))
audit_text = open(px.audit, encoding="utf-8").read()
check("hunter2" not in audit_text, "the password appears nowhere in the audit file")
r = recs.get("invalid UTF-8 in the host") or {}
check("\ufffd" in r.get("url.original", ""), "invalid UTF-8 is replaced, the line stays JSON")
r = recs.get("4000-byte host") or {}
check(len(r.get("url.original", "")) < 300 and r.get("url.original", "").endswith("...[truncated]"),
      "a 4000-byte target is capped in the record")
r = recs.get("GET") or {}
is_(r.get("http.request.method"), "GET", "the refused method is recorded")
r = recs.get("a name outside the allowlist") or {}
is_(r.get("destination.registered_domain"), "evil.example", "refusal records the registrable domain")
r = recs.get("IP literal") or {}
check(r.get("destination.address") == "127.0.0.1" and "destination.domain" not in r,
      "an IP literal is recorded as an address, not a domain")
r = recs.get("decimal IP literal") or {}
is_(r.get("destination.address"), "127.0.0.1", "2130706433 is recognised as 127.0.0.1")
for line in audit_text.splitlines():
    try:
        json.loads(line)
    except ValueError:
        not_ok("every audit line is JSON", line[:80])
        break
else:
    ok("every audit line is JSON (%d lines)" % len(audit_text.splitlines()))

# A user agent with obs-text is kept, sanitised.
s = socket.create_connection(("127.0.0.1", px.port), timeout=5)
sport = s.getsockname()[1]
s.sendall(b"CONNECT evil.example:443 HTTP/1.1\r\nUser-Agent: x\xff\xc3(y\r\n\r\n")
recv_all(s)
s.close()
r = px.record_for(lambda r: r.get("source.port") == sport)
check(r and r.get("user_agent.original") == "x\ufffd\ufffd(y", "user agent bytes sanitised",
      r and r.get("user_agent.original"))

# Clients that leave: a record, no answer.
for what, raw in [("connects and closes", b""), ("half a request then closes", b"CONNECT a.allowed")]:
    s = socket.create_connection(("127.0.0.1", px.port), timeout=5)
    sport = s.getsockname()[1]
    if raw:
        s.sendall(raw)
    s.close()
    rec = px.record_for(lambda r: r.get("source.port") == sport)
    check(rec and rec.get("event.reason") == "incomplete-request",
          "client %s: recorded as incomplete-request" % what, str(rec and rec.get("event.reason")))
check(px.alive(), "proxy alive after clients vanished")

# Slowloris: 30 clients trickle a header that never ends, while 20 others are served.
stop = threading.Event()
slow_results = []


def slowloris(i):
    s = socket.create_connection(("127.0.0.1", px.port), timeout=10)
    try:
        s.sendall(b"CONNECT echo.allowed.example:%d HTTP/1.1\r\n" % echo)
        n = 0
        while not stop.is_set():
            s.sendall(b"X-%d: %d\r\n" % (i, n))
            n += 1
            time.sleep(0.1)
    except OSError:
        pass
    slow_results.append(parse_response(recv_all(s, 5))[1].get("x-proxy-error"))
    s.close()


slow = [threading.Thread(target=slowloris, args=(i,)) for i in range(30)]
for t in slow:
    t.start()
time.sleep(0.3)
served, worst = 0, 0.0
for i in range(20):
    t0 = time.time()
    s, st, hd, rest = open_tunnel(px.port, "echo.allowed.example:%d" % echo, timeout=5)
    s.sendall(b"hi")
    data = rest
    while len(data) < 2:
        data += s.recv(10)
    s.close()
    worst = max(worst, time.time() - t0)
    served += st == 200 and data == b"hi"
is_(served, 20, "20 clients served while 30 slowloris clients hold connections")
diag("slowest of them: %.1f ms" % (worst * 1000))
for t in slow:
    t.join(10)
stop.set()
is_(slow_results.count("header-timeout"), 30,
    "every slowloris client is cut off at --header-timeout (408) although it kept sending")
check(px.alive(), "proxy alive after the slowloris crowd")
is_(px.stop(), 0, "clean exit")
done()
