"""A hostile spoke against netproxy's injecting path (test_secrets_attack.sh), issue 34:
HTTP/2 `host` beside `:authority`, a stand-in in a chunk extension, an API that echoes
the injected value back, a PING flood that never reads, and a client that keeps
sending while netproxy's own handshake with the upstream waits. A test hub on the
control channel; the stand-in APIs of upstream.mjs record what reaches them."""
import base64
import os
import socket
import ssl
import struct
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "netproxy"))
from nptest import *  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
pki = make_ca(["api.service.example", "files.service.example", "slow.service.example"])
hubca = os.path.join(TMP, "hubca")
os.makedirs(hubca, exist_ok=True)
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-days", "2", "-keyout", hubca + "/ca.key", "-out", hubca + "/ca.pem",
                "-subj", "/CN=itest hub CA", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
HUBCA = os.path.join(hubca, "ca.pem")
RECORDS = os.path.join(TMP, "upstream.jsonl")
open(RECORDS, "w").close()
up = spawn(["node", os.path.join(HERE, "upstream.mjs"), pki["cert"], pki["key"], RECORDS],
           stdout=subprocess.PIPE, stderr=open(os.path.join(TMP, "upstream.err"), "w"))
ports = json.loads(up.stdout.readline())
P, HP = ports["https"], ports["http"]
# An upstream that accepts and never answers: netproxy's own handshake with it waits.
hole = socket.socket()
hole.bind(("127.0.0.1", 0))
hole.listen(8)
BH = hole.getsockname()[1]

# Stand-ins as the hub makes them: as long as the value, separators where they are.
API_S, API_V = "ghp_STANDINstandin0123456789abcdef", "ghp_REALrealreal0123456789abcdefgh"
FILES_S, FILES_V = "fk_STANDIN0123456789012345", "fk_REALVALUE01234567890123"
PW_S, PW_V = "pw/STAN+dinxx=9876543210zz", "pw/REAL+value=0123456789ab"
args = ["--upstream-allow-cidr", "127.0.0.1/32", "--upstream-ca", pki["ca"],
        "--ports", "%d,%d,%d" % (P, HP, BH)]
for n in ["api.service.example", "files.service.example"]:
    args += ["--resolve", "%s:%d:127.0.0.1" % (n, P)]
args += ["--resolve", "slow.service.example:%d:127.0.0.1" % BH]
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


def spoke(name, secrets):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    port = ls.getsockname()[1]
    r = ctl({"op": "add", "spoke": name, "allow": ["service.example"], "ports": [P, HP, BH],
             "secrets": secrets}, ls.fileno())
    ls.close()
    return port, r


PORT, r = spoke("hostile", [
    binding("api", API_S, API_V, ["api.service.example"], header="Authorization"),
    # docs/secrets.md's first example: no --header, put into whichever header holds it
    binding("files", FILES_S, FILES_V, ["files.service.example"]),
    binding("pw", PW_S, PW_V, ["files.service.example"]),
    binding("slow", "sk_STANDIN0123456789", "sk_REALVAL0123456789", ["slow.service.example"])])
is_(r, {"ok": True}, "a hostile spoke with four secrets")
PORT2, r = spoke("other", [binding("api", API_S, "ghp_OTHERother0123456789abcdefghij",
                                   ["api.service.example"], header="Authorization")])
is_(r, {"ok": True}, "another spoke")
is_(ctl({"op": "tls", "ca_cert": open(HUBCA).read(), "ca_key": open(hubca + "/ca.key").read()}),
    {"ok": True}, "the hub's CA")


def tls_client(host, alpn=("http/1.1",), port=None, target_port=None):
    s, st, _, _ = open_tunnel(port or PORT, "%s:%d" % (host, target_port or P))
    if st != 200:
        s.close()
        return None
    ctx = ssl.create_default_context(cafile=HUBCA)
    ctx.set_alpn_protocols(list(alpn))
    try:
        return ctx.wrap_socket(s, server_hostname=host)
    except (ssl.SSLError, OSError):
        s.close()
        return None


def upstream_saw(path):
    with open(RECORDS) as f:
        rs = [json.loads(x) for x in f.read().splitlines()]
    return next((r for r in reversed(rs) if r["path"] == path), None)


def h2req(host, headers, body=None, port=None):
    argv = ["node", os.path.join(HERE, "h2req.mjs"), str(port or PORT), "%s:%d" % (host, P), HUBCA,
            json.dumps(headers)]
    if body is not None:
        argv.append(body)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {"error": out.stdout + out.stderr}


def rss_kb():
    return int(proc_status(px.pid)["VmRSS"].split()[0])


def dechunk(body):
    """The data and the trailer lines of a chunked body."""
    data, rest = b"", body
    while True:
        line, _, rest = rest.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            return data, rest
        data += rest[:size]
        rest = rest[size + 2:]


# ---- finding 1: HTTP/2 `host` beside `:authority` ----
def h2head(path, **extra):
    h = {":method": "GET", ":path": path, ":scheme": "https", ":authority": "api.service.example",
         "authorization": "Bearer " + API_S}
    h.update(extra)
    return h


r = h2req("api.service.example", h2head("/h2-control"))
is_(r.get("status"), 200, "HTTP/2 through the opened TLS (control: the client speaks h2)")
is_(upstream_saw("/h2-control")["headers"]["authorization"], "Bearer " + API_V,
    "... and the upstream got the value")
r = h2req("api.service.example", h2head("/h2-host", host="files.service.example"))
is_((r.get("status"), (r.get("headers") or {}).get("x-proxy-error")), (421, "host-mismatch"),
    "HTTP/2: a `host` naming another host beside the tunnel's `:authority` is refused 421")
is_(upstream_saw("/h2-host"), None, "... and nothing of it reached the API (no value for a fronted host)")
check(px.record_for(lambda r: r.get("event.reason") == "host-mismatch" and
                    "files.service.example" in r.get("message", "")),
      "... audited host-mismatch, naming the host the request tried")
r = h2req("api.service.example", h2head("/h2-host2", host="api.service.example",
                                        **{":authority": "files.service.example"}))
is_(r.get("status"), 421, "... and the other way round (`:authority` another host, `host` the tunnel's)")
r = h2req("api.service.example", h2head("/h2-host-same", host="api.service.example:%d" % P))
is_(r.get("status"), 200, "a `host` naming the tunnel's host (with its port) is not refused")

# ---- finding 6: a chunk extension ----
t = tls_client("files.service.example")
t.sendall(("POST /chunk-ext HTTP/1.1\r\nHost: files.service.example\r\nTransfer-Encoding: chunked\r\n\r\n"
           "5;k=%s\r\nhello\r\n0\r\n\r\n" % API_S).encode())
st, hd, _ = parse_response(recv_all(t, 5))
t.close()
is_((st, hd.get("x-proxy-error")), (403, "credential-to-wrong-host"),
    "a stand-in of another host's secret in a chunk extension is refused 403")
is_(upstream_saw("/chunk-ext"), None, "... the API saw nothing of the request")
check(px.record_for(lambda r: r.get("event.reason") == "credential-to-wrong-host" and
                    r.get("isolate.secret.name") == "api" and "chunk extension" in r.get("message", "")),
      "... audited credential-to-wrong-host, naming the secret")
t = tls_client("files.service.example")
t.sendall(b"POST /chunk-split HTTP/1.1\r\nHost: files.service.example\r\nTransfer-Encoding: chunked\r\n\r\n"
          + b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (10, API_S[:10].encode(), len(API_S) - 10, API_S[10:].encode()))
st, hd, _ = parse_response(recv_all(t, 5))
t.close()
is_(st, 403, "a stand-in split over two chunks' data is still found (the extension is scanned apart)")

# ---- finding 3: an API that echoes what it was sent ----
def reflect_h1(path, echo, extra=""):
    t = tls_client("files.service.example")
    t.sendall(("GET %s HTTP/1.1\r\nHost: files.service.example\r\nX-Echo: %s\r\n%s"
               "Connection: close\r\n\r\n" % (path, echo, extra)).encode())
    raw = recv_all(t, 5)
    t.close()
    return raw


basic = "Basic " + base64.b64encode(("user:" + FILES_S).encode()).decode()
raw = reflect_h1("/reflect", FILES_S, "Origin: %s\r\nAuthorization: %s\r\n" % (FILES_S, basic))
saw = upstream_saw("/reflect")
is_((saw or {}).get("headers", {}).get("x-echo"), FILES_V,
    "the API was sent the value in the header the spoke chose (a secret set without --header)")
st, hd, body = parse_response(raw)
data, trailers = dechunk(body) if hd.get("transfer-encoding") == "chunked" else (body, b"")
check(FILES_V.encode() not in raw and FILES_V.encode() not in data,
      "HTTP/1.1: the echoed value reaches the spoke nowhere (headers, chunked body split across reads)",
      raw[:600])
j = json.loads(data) if st == 200 else {}
is_((hd.get("x-echo"), hd.get("access-control-allow-origin"), j.get("echo")), (FILES_S, FILES_S, FILES_S),
    "... its stand-in is there instead: X-Echo, Access-Control-Allow-Origin, the body")
check(("x-echo-trailer: " + FILES_S).encode() in trailers, "... and in the trailer", trailers)
dec = base64.b64decode(j.get("auth", "Basic ")[6:] + "==") if j else b""
check(FILES_V.encode() not in dec and dec[:-1] == ("user:" + FILES_S).encode()[:-1],
      "... Basic-encoded: decodes to the stand-in (the last base64 character mixes the value's last "
      "bits with padding)", dec)
raw = reflect_h1("/reflect-cl", PW_S)
st, hd, body = parse_response(raw)
pct_v = urllib.parse.quote(PW_V, safe="-._~").encode()
check(st == 200 and PW_V.encode() not in raw and pct_v not in raw,
      "a Content-Length answer: no value, plain or percent-encoded", raw[:600])
j = json.loads(body) if st == 200 else {}
is_((j.get("echo"), j.get("pct"), int(hd.get("content-length", -1)) == len(body)),
    (PW_S, urllib.parse.quote(PW_S, safe="-._~"), True),
    "... the stand-in, percent-encoded where the value was, the length unchanged")
r = h2req("files.service.example", {":method": "GET", ":path": "/reflect", ":scheme": "https",
                                    ":authority": "files.service.example", "x-echo": FILES_S,
                                    "origin": FILES_S})
check(r.get("status") == 200 and FILES_V not in json.dumps(r),
      "HTTP/2: the echoed value reaches the spoke nowhere (HEADERS, DATA split across frames, trailers)", r)
is_(((r.get("headers") or {}).get("x-echo"), (r.get("headers") or {}).get("access-control-allow-origin"),
     (r.get("trailers") or {}).get("x-echo-trailer"),
     json.loads(r["body"]).get("echo") if r.get("status") == 200 else None),
    (FILES_S, FILES_S, FILES_S, FILES_S), "... the stand-in in each place")
check(px.record_for(lambda r: r.get("event.action") == "credential-reflected" and
                    r.get("isolate.secret.name") == "files"),
      "a reflected value is on record as credential-reflected with the secret's name")

# ---- finding 7: the client keeps sending while our handshake with the upstream waits ----
s, st, _, _ = open_tunnel(PORT, "slow.service.example:%d" % BH)
raw_sock = s.dup()
ctx = ssl.create_default_context(cafile=HUBCA)
t = ctx.wrap_socket(s, server_hostname="slow.service.example", do_handshake_on_connect=False)
t.setblocking(False)
try:
    t.do_handshake()
except ssl.SSLWantReadError:
    pass
base = rss_kb()
raw_sock.setblocking(False)
junk, sent, stuck, t0 = b"\x17\x03\x03" + b"\0" * 65533, 0, None, time.time()
while sent < (64 << 20) and time.time() - t0 < 30:
    try:
        sent += raw_sock.send(junk)
        stuck = None
    except BlockingIOError:
        stuck = stuck or time.time()
        if time.time() - stuck > 2:
            break
        time.sleep(0.01)
    except OSError:
        break
grew = rss_kb() - base
diag("during the upstream's handshake the client got %d KiB in; netproxy grew %d KiB" % (sent >> 10, grew))
check(grew < 16 * 1024, "bytes sent while netproxy's handshake with the upstream waits stay in the "
      "socket, not in netproxy (it grew %d KiB for %d KiB offered)" % (grew, sent >> 10))
raw_sock.close()
t.close()

# ---- finding 2: a PING flood that never reads ----
def frame(ftype, flags, sid, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


t = tls_client("api.service.example", alpn=("h2",))
check(t is not None and t.selected_alpn_protocol() == "h2", "a hostile h2 connection (ALPN h2)")
t.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
pings = b"".join(frame(6, 0, 0, struct.pack(">Q", i)) for i in range(4096))
t.setblocking(False)
base = rss_kb()
peak, offered, stuck, ended, t0 = base, 0, None, None, time.time()
while offered < (150 << 20) and time.time() - t0 < 60:
    try:
        offered += t.send(pings)
        stuck = None
    except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
        stuck = stuck or time.time()
        if time.time() - stuck > 3:
            break
        time.sleep(0.01)
    except OSError as e:
        ended = str(e)
        break
    if offered % (8 << 20) < len(pings):
        peak = max(peak, rss_kb())
peak = max(peak, rss_kb())
diag("PING flood: %d MiB taken of 150 MiB offered in %.1f s (%s); netproxy %d -> %d KiB" %
     (offered >> 20, time.time() - t0, "the tunnel ended: " + ended if ended else "then held back",
      base, peak))
check(offered < (32 << 20), "a PING flood that never reads: netproxy stops taking it (%d MiB of 150 "
      "taken; all of it before back-pressure on the client's own queue)" % (offered >> 20))
if os.environ.get("BUILD", "").rstrip("/").endswith("san"):
    ok("... netproxy's memory # SKIP under ASan, whose quarantine keeps what was freed (+%d KiB)"
       % (peak - base))
else:
    check(peak - base < 48 * 1024, "... and its memory stays bounded (grew %d KiB; +280 MB before)"
          % (peak - base))
t.close()


# Refusals that are never read: requests answered 421 by netproxy itself, as fast as a
# client can send them (HPACK literals, no table, no Huffman).
def hstr(b):
    assert len(b) < 127
    return bytes([len(b)]) + b


def refused_request(sid):
    fields = [(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/refused"),
              (b":authority", b"files.service.example")]
    block = b"".join(b"\x00" + hstr(k) + hstr(v) for k, v in fields)
    return frame(1, 0x5, sid, block)  # END_STREAM | END_HEADERS


t = tls_client("api.service.example", alpn=("h2",))
t.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
t.setblocking(False)
base = rss_kb()
peak, offered, sid, stuck, ended, t0 = base, 0, 1, None, None, time.time()
while offered < (64 << 20) and time.time() - t0 < 30:
    batch = b"".join(refused_request(sid + 2 * i) for i in range(512))
    try:
        n = t.send(batch)
        offered += n
        sid += 2 * 512
        stuck = None
    except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
        stuck = stuck or time.time()
        if time.time() - stuck > 3:
            break
        time.sleep(0.01)
    except OSError as e:
        ended = str(e)
        break
    peak = max(peak, rss_kb()) if offered % (4 << 20) < len(batch) else peak
peak = max(peak, rss_kb())
diag("refusals never read: %d MiB of requests taken (%s); netproxy %d -> %d KiB" %
     (offered >> 20, "the tunnel ended: " + ended if ended else "then held back", base, peak))
check(offered < (32 << 20), "a flood of requests netproxy refuses (421), never reading the "
      "answers: netproxy stops taking them (%d MiB taken)" % (offered >> 20))
if not os.environ.get("BUILD", "").rstrip("/").endswith("san"):
    check(peak - base < 48 * 1024, "... and its memory stays bounded (grew %d KiB)" % (peak - base))
r = h2req("api.service.example", h2head("/other-spoke"), port=PORT2)
is_(r.get("status"), 200, "... another spoke's request works meanwhile")
is_(upstream_saw("/other-spoke")["headers"]["authorization"], "Bearer ghp_OTHERother0123456789abcdefghij",
    "... with its own value")
t.close()

# ---- nothing of a value on record ----
px.stop()
audit = open(px.audit).read()
check(all(v not in audit for v in (API_V, FILES_V, PW_V, "sk_REALVAL")), "no value is in netproxy's audit")
done()
