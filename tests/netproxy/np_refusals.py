"""Refusal paths from the attacker's side (see test_np_refusals.sh)."""
import struct
import threading

from nptest import *

N_QUEUED = 24


def queue_refused(port, n, target=b"evil.example:443"):
    """n connections that each send a CONNECT the policy refuses, while the proxy is
    stopped: the kernel completes them and queues them on the listener."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(b"CONNECT " + target + b" HTTP/1.1\r\n\r\n")
        out.append(s)
    return out


def refused_records(px, spoke=None):
    return [r for r in px.records()
            if r.get("event.action") == "connect" and r.get("event.reason") == "domain-not-allowed"
            and (spoke is None or r.get("isolate.spoke") == spoke)]


# --- issue 41: stop with connections still in the kernel's accept queue ----------------
px = Proxy(["--allow", "allowed.example"], tag="stopq")
px.signal(signal.SIGSTOP)
clients = queue_refused(px.port, N_QUEUED)
px.signal(signal.SIGTERM)
px.signal(signal.SIGCONT)
for s in clients:
    s.settimeout(3)
    try:
        s.recv(1000)
    except OSError:
        pass
    s.close()
try:
    rc = px.proc.wait(timeout=10)
except subprocess.TimeoutExpired:
    rc = None
is_(rc, 0, "stop with a full accept queue: the proxy still exits 0")
got = refused_records(px)
is_(len(got), N_QUEUED,
    "stop: each of %d connections queued before it has its refusal on record" % N_QUEUED)

# --- issue 41: spoke-remove with connections still queued ---------------------------
hub, proxy_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
px = Proxy(["--control", str(proxy_end.fileno())], tag="removeq", listen=False,
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


def spoke_listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    return s


la = spoke_listener()
pa = la.getsockname()[1]
is_(ctl({"op": "add", "spoke": "alpha", "allow": ["allowed.example"]}, la.fileno()), {"ok": True},
    "hub mode: spoke alpha added")
la.close()
px.signal(signal.SIGSTOP)
clients = queue_refused(pa, N_QUEUED)
hub.send(json.dumps({"op": "remove", "spoke": "alpha"}).encode())
px.signal(signal.SIGCONT)
is_(json.loads(hub.recv(70000)), {"ok": True}, "spoke-remove answered")
for s in clients:
    s.close()
got = wait_until(lambda: len(refused_records(px, "alpha")) >= N_QUEUED and refused_records(px, "alpha"),
                 timeout=5) or refused_records(px, "alpha")
is_(len(got), N_QUEUED,
    "spoke-remove: each of %d connections queued before it has its refusal on record" % N_QUEUED)
try:
    socket.create_connection(("127.0.0.1", pa), timeout=2).close()
    not_ok("after spoke-remove the spoke's port is closed")
except ConnectionRefusedError:
    ok("after spoke-remove the spoke's port is closed")
hub.close()
px.proc.wait(timeout=10)


class Hub:
    """netproxy in hub mode with a test hub on its control channel."""

    def __init__(self, args, tag):
        self.sock, end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.px = Proxy(["--control", str(end.fileno())] + args, tag=tag, listen=False,
                        pass_fds=(end.fileno(),))
        end.close()
        self.sock.settimeout(10)

    def ctl(self, msg, fd=None):
        data = json.dumps(msg).encode()
        if fd is None:
            self.sock.send(data)
        else:
            socket.send_fds(self.sock, [data], [fd])
        return json.loads(self.sock.recv(70000))

    def add(self, name, **kw):
        ls = spoke_listener()
        msg = {"op": "add", "spoke": name, "allow": ["allowed.example"]}
        msg.update(kw)
        r = self.ctl(msg, ls.fileno())
        port = ls.getsockname()[1]
        ls.close()
        return r, port

    def close(self):
        self.sock.close()
        self.px.proc.wait(timeout=10)


def refused_connect(port, target=b"evil.example:443"):
    """One CONNECT the policy refuses; True once the proxy has dealt with it (answered,
    reset or closed)."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
    except ConnectionResetError:
        return True  # accepted and reset before connect() had returned
    except OSError:
        return False
    try:
        s.sendall(b"CONNECT " + target + b" HTTP/1.1\r\n\r\n")
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()
    return True


# --- finding 8: one spoke floods refused connections; budgets hold, others intact ------
REC_BURST, REC_RATE, CONN_BURST, CONN_RATE = 40, 10, 300, 100
FLOOD_S = 3.0
h = Hub([], tag="flood")
r, pa = h.add("alpha", refusal_burst=REC_BURST, refusal_rate=REC_RATE, conn_burst=CONN_BURST,
              conn_rate=CONN_RATE)
is_(r, {"ok": True}, "flood: spoke alpha added with a small budget")
r, pb = h.add("beta")
is_(r, {"ok": True}, "flood: spoke beta added with the default budget")
attempts = [0] * 4
stop_at = time.time() + FLOOD_S


def flood(i):
    while time.time() < stop_at:
        if refused_connect(pa):
            attempts[i] += 1


t0 = time.time()
threads = [threading.Thread(target=flood, args=(i,)) for i in range(len(attempts))]
for t in threads:
    t.start()
beta_n = 0
while time.time() < stop_at:
    if refused_connect(pb, b"other.example:443"):
        beta_n += 1
    time.sleep(0.05)
for t in threads:
    t.join()
elapsed = time.time() - t0
total = sum(attempts)
diag("alpha made %d refused connections in %.1f s; beta %d" % (total, elapsed, beta_n))
check(total > REC_BURST + REC_RATE * elapsed + CONN_BURST,
      "the flood went past both budgets (%d connections)" % total)
is_(h.ctl({"op": "remove", "spoke": "alpha"}), {"ok": True}, "flood: alpha removed")
summaries = wait_until(lambda: [x for x in h.px.records()
                                if x.get("event.action") == "refusal-summary"], timeout=5) or []
alpha_rec = [x for x in h.px.records()
             if x.get("event.action") == "connect" and x.get("isolate.spoke") == "alpha"]
bound = REC_BURST + REC_RATE * (elapsed + 1)
check(len(alpha_rec) <= bound,
      "alpha's connection records stay within its budget (%d <= %d)" % (len(alpha_rec), bound))
check(all(x.get("event.reason") == "domain-not-allowed" for x in alpha_rec),
      "the records written are alpha's refusals")
max_summaries = int(elapsed / 10) + 2
check(1 <= len(summaries) <= max_summaries and
      all(x.get("isolate.spoke") == "alpha" for x in summaries),
      "past the budget: one summary per burst (%d)" % len(summaries))
unrec = sum(x.get("isolate.refusals.unrecorded", 0) for x in summaries)
reset = sum(x.get("isolate.refusals.reset", 0) for x in summaries)
is_(len(alpha_rec) + unrec + reset, total,
    "records + unrecorded + reset in the summaries account for every connection alpha made")
check(reset > 0 and unrec > 0, "both budgets were spent (%d unrecorded, %d reset)" % (unrec, reset))
sm = summaries[0] if summaries else {}
check(sm.get("isolate.refusals.first.destination") in ("evil.example:443",) and
      sm.get("isolate.refusals.last.destination") and sm.get("event.start") and sm.get("event.end")
      and sm.get("isolate.refusals.first.reason") == "domain-not-allowed",
      "the summary names the first and last destination, reason and times", sm)
beta_rec = [x for x in h.px.records()
            if x.get("event.action") == "connect" and x.get("isolate.spoke") == "beta"]
is_(len(beta_rec), beta_n, "beta's %d refusals meanwhile are each on record" % beta_n)
h.close()

# --- finding 8: the resolver's refusals spend the same budget ---------------------------
N_QUERIES = 300
h = Hub([], tag="dnsflood")
tcp = spoke_listener()
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
msg = {"op": "add", "spoke": "gamma", "allow": ["allowed.example"], "refusal_burst": 20,
       "refusal_rate": 5, "dns_listen": "127.0.0.1:%d" % udp.getsockname()[1]}
socket.send_fds(h.sock, [json.dumps(msg).encode()], [tcp.fileno(), udp.fileno()])
is_(json.loads(h.sock.recv(70000)), {"ok": True}, "dns flood: spoke gamma added with a resolver")
dns_port = udp.getsockname()[1]
tcp.close()
udp.close()
q = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
q.settimeout(2)
answered = 0
t0 = time.time()
for i in range(N_QUERIES):
    qname = b"".join(bytes([len(p)]) + p for p in (b"n%d" % i, b"evil", b"example")) + b"\0"
    q.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + qname + b"\0\x01\0\x01",
             ("127.0.0.1", dns_port))
    try:
        answer = q.recv(600)
        answered += (answer[3] & 0x0f) == 3  # NXDOMAIN
    except socket.timeout:
        pass
elapsed = time.time() - t0
q.close()
is_(answered, N_QUERIES, "every refused query is still answered NXDOMAIN")
is_(h.ctl({"op": "remove", "spoke": "gamma"}), {"ok": True}, "dns flood: gamma removed")
sm = wait_until(lambda: [x for x in h.px.records() if x.get("event.action") == "refusal-summary"],
                timeout=5) or []
qrec = [x for x in h.px.records() if x.get("event.action") == "dns-query"]
bound = 20 + 5 * (elapsed + 1)
check(len(qrec) <= bound,
      "%d refused queries in %.1f s: %d records, within the budget (%d)" %
      (N_QUERIES, elapsed, len(qrec), bound))
is_(len(qrec) + sum(x.get("isolate.refusals.unrecorded", 0) for x in sm), N_QUERIES,
    "records + the summary's count account for every refused query")
check(sm and sm[0].get("isolate.refusals.first.reason") == "domain-not-allowed" and
      "evil.example" in sm[0].get("isolate.refusals.first.destination", ""),
      "the summary names the first refused name", sm[0] if sm else None)
h.close()

# --- finding 10: a few spokes cannot hold the global pending limit between them --------
h = Hub(["--max-pending", "64", "--header-timeout", "30s"], tag="share")
ports = {}
for name in ("p1", "p2", "p3", "p4", "p5"):
    r, ports[name] = h.add(name, max_pending=32)
    is_(r, {"ok": True}, "share: spoke %s added (32 pending each, 64 in all)" % name)
idle = []
for name in ("p1", "p2", "p3", "p4"):
    for _ in range(32):
        idle.append(socket.create_connection(("127.0.0.1", ports[name]), timeout=3))
    time.sleep(0.3)
held = len(idle) - len([x for x in h.px.records() if x.get("event.reason") == "pending-limit"])
check(held < 64, "four spokes that open 32 idle connections each hold fewer than 64 (%d)" % held)
s = socket.create_connection(("127.0.0.1", ports["p5"]), timeout=3)
s.sendall(b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
st, hd, body = parse_response(recv_all(s))
s.close()
is_(st, 403, "a fifth spoke still gets its request decided (403, not 503 pending-limit)")
for x in idle:
    x.close()
h.close()

done()
