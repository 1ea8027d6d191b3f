"""Refusal paths from the attacker's side (see test_np_refusals.sh)."""
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

done()
