"""netproxy's injection at the wire (test_secrets_netproxy.sh): a test hub on the control
channel gives a spoke two secrets and the hub's CA; clients speak raw TLS (Python's
ssl), curl over HTTP/1.1 and HTTP/2, and plain HTTP, to the stand-in APIs of
upstream.mjs, which record what arrives."""
import os
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "netproxy"))
from nptest import *  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
pki = make_ca(["api.service.example", "files.service.example", "other.service.example"])
# The hub's CA, as the hub makes it: EC P-256, CA:TRUE.
hubca = os.path.join(TMP, "hubca")
os.makedirs(hubca, exist_ok=True)
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-days", "2", "-keyout", hubca + "/ca.key", "-out", hubca + "/ca.pem",
                "-subj", "/CN=itest hub CA", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
RECORDS = os.path.join(TMP, "upstream.jsonl")
open(RECORDS, "w").close()
up = spawn(["node", os.path.join(HERE, "upstream.mjs"), pki["cert"], pki["key"], RECORDS],
           stdout=subprocess.PIPE, stderr=open(os.path.join(TMP, "upstream.err"), "w"))
ports = json.loads(up.stdout.readline())
P, HP = ports["https"], ports["http"]

API_S, API_V = "ghp_STANDINstandin0123456789abcdef", "ghp_REALrealreal0123456789abcdefgh"
FILES_S, FILES_V = "fk_STANDIN0123456789012345", "fk_REALVALUE01234567890123"
names = ["api.service.example", "files.service.example", "other.service.example",
         "plain.service.example"]
args = ["--upstream-allow-cidr", "127.0.0.1/32", "--upstream-ca", pki["ca"],
        "--ports", "%d,%d" % (P, HP)]
for n in names:
    args += ["--resolve", "%s:%d:127.0.0.1" % (n, P), "--resolve", "%s:%d:127.0.0.1" % (n, HP)]
hub, proxy_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
px = Proxy(["--control", str(proxy_end.fileno())] + args, listen=False,
           pass_fds=(proxy_end.fileno(),))
proxy_end.close()
hub.settimeout(10)


def ctl(msg, fd=None):
    data = json.dumps(msg).encode()
    if fd is None:
        hub.send(data)
    else:
        socket.send_fds(hub, [data], [fd])
    return json.loads(hub.recv(70000))


def binding(name, standin, value, hosts, **kw):
    b = {"name": name, "standin": standin, "value": value, "hosts": hosts}
    b.update(kw)
    return b


lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(64)
PORT = lsock.getsockname()[1]
secrets = [binding("api", API_S, API_V, ["api.service.example"], header="Authorization"),
           binding("files", FILES_S, FILES_V, ["files.service.example"])]
r = ctl({"op": "add", "spoke": "s1", "allow": ["service.example"], "ports": [P, HP],
         "secrets": secrets}, lsock.fileno())
is_(r, {"ok": True}, "a spoke is added with two secrets before the CA (it is sent later)")

# Before the hub's CA arrives, a secret's host cannot be answered for: refused, not passed.
def tls_client(host, sni=None, ca=None, alpn=("http/1.1",), port=None):
    s, st, _, rest = open_tunnel(port or PORT, "%s:%d" % (host, P))
    if st != 200:
        s.close()
        return None, st
    ctx = ssl.create_default_context(cafile=ca or os.path.join(hubca, "ca.pem"))
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    try:
        t = ctx.wrap_socket(s, server_hostname=host if sni is None else (sni or None))
    except (ssl.SSLError, OSError) as e:
        s.close()
        return None, str(e)
    return t, 200


t, why = tls_client("api.service.example")
check(t is None, "without the hub's CA netproxy does not answer for a secret's host", why)
check(px.record_for(lambda r: r.get("event.action") == "tls" and "no CA" in r.get("message", "")),
      "... and says why in the audit")
r = ctl({"op": "tls", "ca_cert": open(hubca + "/ca.pem").read(), "ca_key": open(hubca + "/ca.key").read()})
is_(r, {"ok": True}, "the hub's CA is taken")
r = ctl({"op": "tls", "ca_cert": open(pki["ca"]).read(), "ca_key": open(pki["ca"].replace("ca.pem", "ca.key")).read()})
check(r.get("ok") is False and "already" in r.get("error", ""), "another CA later is refused", r)


def last():
    with open(RECORDS) as f:
        lines = f.read().splitlines()
    return json.loads(lines[-1]) if lines else None


def n_records():
    with open(RECORDS) as f:
        return len(f.read().splitlines())


def http1(t, raw):
    t.sendall(raw)
    return parse_response(recv_all(t, 5))


# ---- HTTP/1.1 over the opened TLS ----
t, _ = tls_client("api.service.example")
check(t is not None and t.getpeercert()["issuer"][0][0][1] == "itest hub CA",
      "the client sees a certificate of the hub's CA for the secret's host")
req = ("GET /one HTTP/1.1\r\nHost: api.service.example:%d\r\nAuthorization: Bearer %s\r\n\r\n"
       "GET /two?close=1 HTTP/1.1\r\nHost: api.service.example\r\nAuthorization: token %s\r\n"
       "Connection: close\r\n\r\n" % (P, API_S, API_S)).encode()
t.sendall(req)
data = recv_all(t, 5)
t.close()
check(data.count(b"HTTP/1.1 200") == 2, "two pipelined requests both answered")
is_(last()["headers"]["authorization"], "token " + API_V, "the second got the value too")
check(px.record_for(lambda r: r.get("event.action") == "credential-inject" and
                    r.get("url.path") == "/two" and r.get("isolate.secret.name") == "api"),
      "each injection is on record with the secret's name and the path")

# ---- netproxy's TLS sessions with the upstream (tlssess.h) ----
# The API closes each of these connections after its answer (close=1), so that the next
# tunnel makes a handshake (resumed or full) rather than reuse the connection (the pool,
# tested below).
def get_once(host, path, standin=API_S, port=None, close="?close=1"):
    t, _ = tls_client(host, port=port)
    if t is None:
        return None
    st, _, _ = http1(t, ("GET %s%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
                         "Connection: close\r\n\r\n" % (path, close, host, standin)).encode())
    t.close()
    return st


def upstream_saw(path):
    with open(RECORDS) as f:
        rs = [json.loads(x) for x in f.read().splitlines()]
    return next((r for r in reversed(rs) if r["path"].split("?")[0] == path), None)


# The tunnels above to api.service.example left sessions; files.service.example has had
# no tunnel yet (the same upstream, the same ticket keys: it would accept api's).
is_(get_once("files.service.example", "/res-files", FILES_S), 200, "a first tunnel to another host")
is_(upstream_saw("/res-files")["resumed"], False,
    "... makes a full, verified handshake: another host's session is never offered")
is_(get_once("api.service.example", "/res-api"), 200, "another tunnel to the same host")
r = upstream_saw("/res-api")
is_((r["resumed"], r["headers"]["authorization"]), (True, "Bearer " + API_V),
    "... resumes the session netproxy kept, and the value is put in as on a new one")
# A rotation between two tunnels: the resumed one carries the new value (nothing of
# the value is in a session; it is put in per request).
ROT1 = "ghp_RESUMEDrotation0123456789abcdef"
is_(ctl({"op": "secret", "spoke": "s1", "secret": binding("api", API_S, ROT1, ["api.service.example"],
                                                       header="Authorization")}), {"ok": True},
    "a new value while sessions are kept")
is_(get_once("api.service.example", "/res-rot"), 200, "the next tunnel")
r = upstream_saw("/res-rot")
is_((r["resumed"], r["headers"]["authorization"]), (True, "Bearer " + ROT1),
    "... resumes a kept session and carries the new value")
# Another spoke, with a secret for the same host: its first tunnel does not get s1's.
lsock2 = socket.socket()
lsock2.bind(("127.0.0.1", 0))
lsock2.listen(64)
PORT2 = lsock2.getsockname()[1]
r = ctl({"op": "add", "spoke": "s2", "allow": ["service.example"], "ports": [P, HP],
         "secrets": [binding("api", API_S, "ghp_SPOKETWOspoketwo0123456789abcd", ["api.service.example"],
                             header="Authorization")]}, lsock2.fileno())
lsock2.close()
is_(get_once("api.service.example", "/res-s2", port=PORT2), 200, "another spoke's first tunnel to that host")
r = upstream_saw("/res-s2")
is_((r["resumed"], r["headers"]["authorization"]), (False, "Bearer ghp_SPOKETWOspoketwo0123456789abcd"),
    "... makes its own full handshake (sessions are never shared between spokes) and carries its own value")
is_(get_once("api.service.example", "/res-s2b", port=PORT2), 200, "... its next one")
is_(upstream_saw("/res-s2b")["resumed"], True, "... resumes its own")

# ---- the pool of idle upstream connections (upool.h) ----
is_(get_once("api.service.example", "/pool-1", close=""), 200,
    "a tunnel whose client asks to close after its answer (Connection: close)")
a = upstream_saw("/pool-1")
check("connection" not in a["headers"], "... the close is not sent on: the upstream connection is netproxy's")
is_(get_once("api.service.example", "/pool-2", close=""), 200, "the same spoke's next tunnel to the host")
b = upstream_saw("/pool-2")
is_((b["rport"] == a["rport"], b["headers"]["authorization"]), (True, "Bearer " + ROT1),
    "... comes on the connection the first one left (no handshake), the value put in")
check(px.record_for(lambda r: r.get("event.action") == "upstream-reuse" and r.get("url.domain") ==
                    "api.service.example"), "... on record as upstream-reuse")
is_(get_once("api.service.example", "/pool-s2", port=PORT2, close=""), 200, "another spoke's tunnel to that host")
check(upstream_saw("/pool-s2")["rport"] != b["rport"], "... never gets the first spoke's connection")
t, _ = tls_client("files.service.example")
t.sendall(("GET /reflect HTTP/1.1\r\nHost: files.service.example\r\nX-Echo: %s\r\n\r\n" % FILES_S).encode())
t.recv(10)  # the head; the rest of the answer comes 20 ms later
t.close()
time.sleep(0.2)
is_(get_once("files.service.example", "/pool-after", standin=FILES_S, close=""), 200,
    "a tunnel after one whose client left in the middle of an answer")
check(upstream_saw("/pool-after")["rport"] != upstream_saw("/reflect")["rport"],
      "... makes its own connection: one with an answer unfinished is not kept")
time.sleep(2.3)
is_(get_once("api.service.example", "/pool-3", close=""), 200, "a tunnel after the kept connection sat idle 2 s")
check(upstream_saw("/pool-3")["rport"] != upstream_saw("/pool-2")["rport"],
      "... makes its own connection: an idle one is dropped after 2 s")

# ---- HTTP/2 (curl: ALPN h2 to netproxy, which chose h2 with the upstream first) ----
def curl(url, *extra):
    out = subprocess.run(["curl", "-sS", "--max-time", "10", "--proxy", "http://127.0.0.1:%d" % PORT,
                          "--cacert", os.path.join(hubca, "ca.pem"), "-o", "/dev/null",
                          "-w", "%{http_version} %{http_code}", *extra, url],
                         capture_output=True, text=True)
    return out.stdout.strip(), out.stderr.strip()


got, err = curl("https://api.service.example:%d/h2" % P, "--http2",
                "-H", "Authorization: Bearer " + API_S)
is_(got, "2 200", "HTTP/2 end to end")
is_((last()["proto"], last()["headers"].get("authorization")), ("2.0", "Bearer " + ROT1),
    "... and the upstream got the value over HTTP/2")
got, err = curl("https://files.service.example:%d/h2" % P, "--http2",
                "-H", "X-Key: " + API_S)
is_(got, "2 403", "HTTP/2: the stand-in to another secret's host is refused on its stream")
got, err = curl("https://files.service.example:%d/h2up" % P, "--http2", "--data-binary",
                "x" * 70000 + API_S)
check(not got.endswith("200"), "HTTP/2: ... also in a body past the first window (the stream is reset)", got)
check(API_S not in open(RECORDS).read(), "... the stand-in never reached the API (what came "
      "before it may have: the stream is cut where it is found)")
got, err = curl("https://api.service.example:%d/big" % P, "--http2", "--data-binary",
                "@" + pki["ca"])
is_(got, "2 200", "HTTP/2: a body to its own host flows (flow control through the proxy)")
is_(len(last()["body"]), os.path.getsize(pki["ca"]), "... whole")

# ---- from the attacker's side ----
before = n_records()
t, _ = tls_client("files.service.example")
st, hd, body = http1(t, ("POST /x HTTP/1.1\r\nHost: files.service.example\r\nContent-Length: %d\r\n\r\n%s"
                          % (len(API_S) + 4, "tok=" + API_S)).encode())
is_((st, hd.get("x-proxy-error")), (403, "credential-to-wrong-host"),
    "the stand-in in a body to another secret's host is refused")
check(px.record_for(lambda r: r.get("event.reason") == "credential-to-wrong-host" and
                    r.get("isolate.secret.name") == "api" and r.get("url.domain") == "files.service.example"),
      "... audited as credential-to-wrong-host, naming the secret and the host")
is_(n_records(), before, "... and the API saw nothing of it")
t, _ = tls_client("api.service.example")
st, hd, _ = http1(t, b"POST /s HTTP/1.1\r\nHost: api.service.example\r\nContent-Length: 3\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n")
is_(st, 400, "Content-Length with Transfer-Encoding (request smuggling) is refused")
is_(n_records(), before, "... nothing reached the API")
t, _ = tls_client("api.service.example")
st, hd, _ = http1(t, ("GET / HTTP/1.1\r\nHost: files.service.example\r\nAuthorization: Bearer %s\r\n\r\n"
                      % API_S).encode())
is_((st, hd.get("x-proxy-error")), (421, "host-mismatch"), "a Host other than the tunnel's is refused")
t, why = tls_client("api.service.example", sni="files.service.example")
check(t is None, "a ClientHello naming another host than the CONNECT is refused", why)
check(px.record_for(lambda r: r.get("event.reason") == "sni-mismatch"), "... audited as sni-mismatch")
# A host with no secret: netproxy must not open it, whatever the client names.
t, why = tls_client("other.service.example")
check(t is None and "certificate verify failed" in str(why),
      "a host no secret is for is never opened: the hub's CA does not answer for it", why)
t, why = tls_client("other.service.example", sni="api.service.example")
check(t is None and "certificate verify failed" in str(why),
      "... not even when the client names a secret's host in its hello", why)
t, _ = tls_client("other.service.example", ca=pki["ca"])
check(t is not None and t.getpeercert()["issuer"][0][0][1] == "netproxy test CA",
      "... it talks to the real upstream end to end (control: its own CA)")
if t:
    t.close()
s, st, hd, _ = open_tunnel(PORT, "plain.service.example:%d" % HP)
s.sendall(("GET / HTTP/1.1\r\nHost: plain.service.example\r\nX-Key: %s\r\n\r\n" % FILES_S).encode())
st2, hd2, _ = parse_response(recv_all(s, 5))
is_((st2, hd2.get("x-proxy-error")), (403, "credential-to-wrong-host"),
    "in clear HTTP the stand-in is found and refused")
s, st, hd, _ = open_tunnel(PORT, "api.service.example:%d" % HP)
s.sendall(("GET /clear HTTP/1.1\r\nHost: api.service.example\r\nAuthorization: Bearer %s\r\n"
           "Connection: close\r\n\r\n" % API_S).encode())
recv_all(s, 5)
is_(last()["headers"].get("authorization"), "Bearer " + API_S,
    "in clear nothing is injected, even to the secret's host")
st, hd, _ = exchange(PORT, ("CONNECT api.service.example:%d HTTP/1.1\r\nHost: x\r\n"
                            "Proxy-Authorization: Bearer %s\r\n\r\n" % (P, API_S)).encode())
is_((st, hd.get("x-proxy-error")), (403, "credential-to-wrong-host"),
    "a stand-in in the CONNECT request itself is refused")


# ---- rotation ----
r = ctl({"op": "secret", "spoke": "s1",
         "secret": binding("api", API_S, "ghp_ROTATEDrotated0123456789abcdefg", ["api.service.example"],
                           header="Authorization")})
is_(r, {"ok": True}, "a new value for a secret is taken")
t, _ = tls_client("api.service.example")
http1(t, ("GET /rot HTTP/1.1\r\nHost: api.service.example\r\nAuthorization: Bearer %s\r\n"
          "Connection: close\r\n\r\n" % API_S).encode())
is_(last()["headers"]["authorization"], "Bearer ghp_ROTATEDrotated0123456789abcdefg",
    "the next request carries it")
check(px.record_for(lambda r: r.get("event.action") == "secret-update"), "the update is on record")

# ---- an impostor at the upstream's address, after sessions were kept ----
# It holds no ticket key, so it cannot complete a resumption: netproxy's offer falls
# back to a full handshake, which verifies, and its certificate is not trusted.
up.terminate()
up.wait(10)
imp = os.path.join(TMP, "impostor")
os.makedirs(imp, exist_ok=True)
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-days", "2", "-keyout", imp + "/k.pem", "-out", imp + "/c.pem",
                "-subj", "/CN=api.service.example", "-addext", "subjectAltName=DNS:api.service.example"],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
imp_up = spawn(["node", os.path.join(HERE, "upstream.mjs"), imp + "/c.pem", imp + "/k.pem", RECORDS,
                "127.0.0.1", str(P), "0"], stdout=subprocess.PIPE,
               stderr=open(os.path.join(TMP, "impostor.err"), "w"))
json.loads(imp_up.stdout.readline())
before = n_records()
t, why = tls_client("api.service.example")
got = None
if t is not None:
    try:
        got = http1(t, b"GET /imp HTTP/1.1\r\nHost: api.service.example\r\nConnection: close\r\n\r\n")
    except (OSError, ValueError) as e:
        got = str(e)
check(t is None or not (isinstance(got, tuple) and got[0] == 200),
      "an impostor at the address of a host whose sessions netproxy kept is not talked to", got or why)
is_(n_records(), before, "... it received no request")
check(px.record_for(lambda r: r.get("event.reason") == "upstream-tls-failure" and
                    "not trusted" in r.get("message", "") and r.get("url.domain") == "api.service.example"),
      "... refused upstream-tls-failure, its certificate not trusted, on record")
imp_up.terminate()
imp_up.wait(10)
# The real API again, restarted: its ticket keys are new, the tickets netproxy may still
# hold are worthless to it; a full handshake, and the request goes through.
up = spawn(["node", os.path.join(HERE, "upstream.mjs"), pki["cert"], pki["key"], RECORDS,
            "127.0.0.1", str(P), "0"], stdout=subprocess.PIPE,
           stderr=open(os.path.join(TMP, "upstream2.err"), "w"))
json.loads(up.stdout.readline())
is_(get_once("api.service.example", "/restarted"), 200,
    "an API restarted with new ticket keys is reached again")
is_(upstream_saw("/restarted")["resumed"], False, "... by a full handshake")

# ---- nothing of a value on record ----
px.stop()
audit = open(px.audit).read()
check(API_V not in audit and FILES_V not in audit and "ROTATED" not in audit and ROT1 not in audit
      and "SPOKETWO" not in audit,
      "no value is in netproxy's audit")
check("credential-inject" in audit, "(the audit has the records looked at)")
closes = [r for r in px.records() if r.get("event.action") == "close"]
check(any(r.get("event.reason") == "request-refused" for r in closes),
      "a tunnel ended by a refusal says so in its close record")
done()
