"""Limits and timeouts; runs inside the test namespace (test_np_limits.sh)."""
from nptest import *

srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1",
                "table": {"slow.allowed.example": "drop",
                          "gone.allowed.example": "nxdomain",
                          "echo.allowed.example": {"A": [["127.0.0.1"]]}}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
closed_port = free_port()
base = ["--allow", "allowed.example", "--ports", "443,%d,%d" % (echo, closed_port),
        "--dns-server", "127.0.0.1:%d" % dns, "--upstream-allow-cidr", "127.0.0.0/8",
        "--resolve", "e.allowed.example:%d:127.0.0.1" % echo]
T = "e.allowed.example:%d" % echo


def hold(px, n):
    socks = []
    for _ in range(n):
        s, st, hd, rest = open_tunnel(px.port, T)
        check(st == 200, "tunnel %d opens" % (len(socks) + 1))
        socks.append(s)
    return socks


def refused(px, what, status, reason, retry=None):
    s = socket.create_connection(("127.0.0.1", px.port), timeout=5)
    sport = s.getsockname()[1]
    s.sendall(b"CONNECT %s HTTP/1.1\r\n\r\n" % T.encode())
    st, hd, body = parse_response(recv_all(s))
    s.close()
    check(st == status and hd.get("x-proxy-error") == reason, "%s: %d %s" % (what, status, reason),
          "%s %s" % (st, hd.get("x-proxy-error")))
    if retry is not None:
        is_(hd.get("retry-after"), str(retry), "%s: Retry-After: %d" % (what, retry))
    rec = px.record_for(lambda r: r.get("source.port") == sport)
    check(rec and rec.get("event.reason") == reason and rec.get("http.response.status_code") == status,
          "%s: recorded" % what)


# --- per-spoke and global tunnel limits -----------------------------------------------
px = Proxy(base + ["--max-tunnels-per-spoke", "2", "--retry-after", "7", "--name", "busy"],
           tag="spoke-limit")
held = hold(px, 2)
refused(px, "third tunnel of a spoke limited to 2", 429, "spoke-tunnel-limit", 7)
held.pop().close()
check(wait_until(lambda: any(r.get("event.action") == "close" for r in px.records())),
      "a closed tunnel frees its slot")
more = hold(px, 1)
for s in held + more:
    s.close()
check(px.alive(), "alive")
px.stop()

px = Proxy(base + ["--max-tunnels", "2", "--retry-after", "3"], tag="global-limit")
held = hold(px, 2)
refused(px, "third tunnel over the global limit of 2", 503, "tunnel-limit", 3)
for s in held:
    s.close()
px.stop()

# --- pending (request head not yet complete) ----------------------------------------
px = Proxy(base + ["--max-pending-per-spoke", "2", "--header-timeout", "10s"], tag="pending")
slow = []
for _ in range(2):
    s = socket.create_connection(("127.0.0.1", px.port))
    s.sendall(b"CONNECT e.allowed")
    slow.append(s)
time.sleep(0.2)
s = socket.create_connection(("127.0.0.1", px.port), timeout=5)
st, hd, body = parse_response(recv_all(s))
s.close()
check(st == 503 and hd.get("x-proxy-error") == "pending-limit" and hd.get("retry-after") == "1",
      "a third unfinished request is answered 503 pending-limit at once", "%s %s" % (st, hd))
slow[0].sendall(b".example:%d HTTP/1.1\r\n\r\n" % echo)
st, hd, rest = parse_response(recv_head(slow[0]))
is_(st, 200, "a pending client that finishes its request is served")
s, st, hd, rest = open_tunnel(px.port, T)
is_(st, 200, "and its slot is free again")
for x in slow + [s]:
    x.close()
px.stop()

# --- timeouts -----------------------------------------------------------------------
px = Proxy(base + ["--header-timeout", "300ms", "--dns-timeout", "400ms",
                   "--connect-timeout", "300ms", "--idle-timeout", "400ms",
                   "--max-lifetime", "1200ms",
                   "--upstream-allow-cidr", "198.18.0.0/24",
                   "--resolve", "black.allowed.example:443:198.18.0.9",
                   "--resolve", "closed.allowed.example:%d:127.0.0.1" % closed_port,
                   "--resolve", "second.allowed.example:%d:127.0.0.2,127.0.0.1" % echo],
           tag="timeouts")


def timed(target, what, status, reason, partial=False, min_s=0.0):
    s = socket.create_connection(("127.0.0.1", px.port), timeout=10)
    sport = s.getsockname()[1]
    t0 = time.time()
    s.sendall(b"CONNECT %s HTTP/1.1\r\n" % target.encode() + (b"" if partial else b"\r\n"))
    st, hd, body = parse_response(recv_all(s, 10))
    took = time.time() - t0
    s.close()
    check(st == status and hd.get("x-proxy-error") == reason, "%s: %d %s" % (what, status, reason),
          "%s %s %r" % (st, hd.get("x-proxy-error"), body))
    check(0.9 * min_s <= took < 5, "%s: after the configured time (not earlier, not the default)" % what, "%.3fs" % took)
    rec = px.record_for(lambda r: r.get("source.port") == sport)
    check(rec and rec.get("event.reason") == reason, "%s: recorded" % what)
    return rec


timed("e.allowed.example:%d" % echo, "header never finished", 408, "header-timeout", True, 0.3)
rec = timed("slow.allowed.example:443", "DNS never answers", 504, "dns-timeout", min_s=0.4)
check(rec and rec.get("isolate.dns.duration", 0) >= 0.9 * 400e6, "DNS time recorded for the timeout")
timed("gone.allowed.example:443", "NXDOMAIN", 502, "dns-failure")
timed("black.allowed.example:443", "SYN never answered", 504, "connect-timeout", min_s=0.3)
timed("closed.allowed.example:%d" % closed_port, "connection refused", 502, "connect-failure")
s, st, hd, rest = open_tunnel(px.port, "second.allowed.example:%d" % echo)
is_(st, 200, "first address refuses, the second checked answer is dialled")
s.close()

# Idle: a silent tunnel is closed; a chatty one is not.
s, st, hd, rest = open_tunnel(px.port, T)
sport = s.getsockname()[1]
t0 = time.time()
data = recv_all(s, 5)
took = time.time() - t0
check(data == b"" and 0.35 <= took < 3, "a silent tunnel is closed after --idle-timeout", "%.3fs" % took)
s.close()
rec = px.record_for(lambda r: r.get("source.port") == sport and r.get("event.action") == "close")
check(rec and rec.get("event.reason") == "idle-timeout" and rec.get("event.outcome") == "failure",
      "close record: idle-timeout")

s, st, hd, rest = open_tunnel(px.port, T)
sport = s.getsockname()[1]
t0 = time.time()
alive_at = 0
s.settimeout(0.5)
try:
    while time.time() - t0 < 3:
        s.sendall(b"k")
        if s.recv(10) != b"k":
            break
        alive_at = time.time() - t0
        time.sleep(0.15)
except OSError:
    pass
s.close()
check(0.6 < alive_at < 1.3, "traffic keeps a tunnel past the idle timeout until --max-lifetime",
      "%.3fs" % alive_at)
rec = px.record_for(lambda r: r.get("source.port") == sport and r.get("event.action") == "close")
check(rec and rec.get("event.reason") == "lifetime-exceeded", "close record: lifetime-exceeded",
      str(rec and rec.get("event.reason")))
check(px.alive(), "proxy alive after every timeout")
is_(px.stop(), 0, "clean exit")
done()
