"""Tunnels that work: curl completes TLS end to end through the proxy to an allowed
name (resolved by --resolve, and by the proxy's own DNS), bytes flow both ways with
half-close and early data, and the decision and close records are checked field by
field. Also metrics, --help and the privilege drop."""
import re
import subprocess
import urllib.request

from nptest import *

pki = make_ca(["api.allowed.example", "dns.allowed.example"])
srv = Servers([
    {"name": "tls", "kind": "https", "addr": "127.0.0.1", "cert": pki["cert"], "key": pki["key"]},
    {"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
    {"name": "echo6", "kind": "echo", "addr": "::1"},
    {"name": "dns", "kind": "dns", "addr": "127.0.0.1",
     "table": {"dns.allowed.example": {"A": [["127.0.0.1"]]},
               "echo.allowed.example": {"A": [["127.0.0.1"]]}}},
])
tls, echo, dns = srv.ports["tls"], srv.ports["echo"], srv.ports["dns"]
echo6 = srv.ports["echo6"]
metrics_port = free_port()
px = Proxy(["--allow", "allowed.example", "--name", "metro_hail",
            "--ports", "%d,%d,%d" % (tls, echo, echo6),
            "--resolve", "v6.allowed.example:%d:[::1]" % echo6,
            "--upstream-allow-cidr", "::1/128",
            "--resolve", "api.allowed.example:%d:127.0.0.1" % tls,
            "--dns-server", "127.0.0.1:%d" % dns,
            "--upstream-allow-cidr", "127.0.0.1/32",
            "--metrics", "127.0.0.1:%d" % metrics_port])

# --- curl, TLS end to end -------------------------------------------------------
def curl(url, *extra):
    r = subprocess.run(["curl", "-sS", "--max-time", "10", "--cacert", pki["ca"],
                        "--proxy", "http://127.0.0.1:%d" % px.port, url] + list(extra),
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr

rc, out, err = curl("https://api.allowed.example:%d/" % tls)
is_(rc, 0, "curl through the proxy completes TLS (--resolve upstream)")
is_(out, "hello from tls\n", "the body came from the TLS upstream, verified against the test CA")
rc, out, err = curl("https://dns.allowed.example:%d/" % tls)
is_((rc, out), (0, "hello from tls\n"), "curl to a name the proxy resolves with its own DNS")
check(srv.dns_queries("dns.allowed.example/A") == 1, "the proxy asked the stand-in DNS once")
rc, out, err = curl("https://api.allowed.example:%d/" % tls, "--proxy-header", "X-Test: 1",
                    "-A", "agent/1.0 (test)")
is_(rc, 0, "curl with extra proxy headers")
rc, out, err = curl("https://evil.example:%d/" % tls)
check(rc != 0 and "403" in err, "curl to a name outside the allowlist gets 403", err.strip())

recs = px.wait_records(7)
first = [r for r in recs if r.get("url.original") == "api.allowed.example:%d" % tls]
dec = [r for r in first if r["event.action"] == "connect"]
clo = [r for r in first if r["event.action"] == "close"]
check(len(dec) == 2 and len(clo) == 2, "a decision and a close record per tunnel")
d, c = dec[0], [r for r in clo if r["event.id"] == dec[0]["event.id"]]
check(len(c) == 1, "decision and close share event.id")
c = c[0] if c else {}
expect_decision = {
    "event.kind": "event",
    "event.category": ["network"],
    "event.type": ["connection", "allowed"],
    "event.action": "connect",
    "event.outcome": "success",
    "event.module": "netproxy",
    "http.request.method": "CONNECT",
    "http.version": "1.1",
    "http.response.status_code": 200,
    "destination.address": "api.allowed.example",
    "destination.domain": "api.allowed.example",
    "destination.registered_domain": "allowed.example",
    "destination.port": tls,
    "destination.ip": "127.0.0.1",
    "source.ip": "127.0.0.1",
    "network.transport": "tcp",
    "network.type": "ipv4",
    "rule.name": "allowed.example",
    "rule.ruleset": "metro_hail",
    "isolate.spoke": "metro_hail",
    "isolate.address_class": "loopback",
    "isolate.address_guard": "upstream-allow-cidr",
    "service.name": "netproxy",
    "ecs.version": "8.11.0",
}
for k, v in expect_decision.items():
    is_(d.get(k), v, "decision record: %s" % k)
check(re.fullmatch(r"[0-9a-f]{32}", d.get("event.id", "")), "decision: event.id is 32 hex")
check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", d.get("@timestamp", "")),
      "decision: @timestamp is ISO 8601 UTC")
check(isinstance(d.get("source.port"), int) and d["source.port"] > 0, "decision: source.port")
check(isinstance(d.get("event.duration"), int) and d["event.duration"] > 0,
      "decision: event.duration in ns")
check(isinstance(d.get("isolate.connect.duration"), int), "decision: connect time recorded")
check("event.reason" not in d, "an allowed decision has no event.reason")
expect_close = {
    "event.action": "close",
    "event.type": ["connection", "end"],
    "event.outcome": "success",
    "event.reason": "closed",
    "destination.ip": "127.0.0.1",
    "destination.registered_domain": "allowed.example",
    "isolate.spoke": "metro_hail",
    "source.ip": d.get("source.ip"),
    "source.port": d.get("source.port"),
}
for k, v in expect_close.items():
    is_(c.get(k), v, "close record: %s" % k)
check(c.get("source.bytes", 0) > 200 and c.get("destination.bytes", 0) > 500,
      "close record: bytes each way (TLS handshake sizes)",
      "%s/%s" % (c.get("source.bytes"), c.get("destination.bytes")))
is_(c.get("network.bytes"), c.get("source.bytes", 0) + c.get("destination.bytes", 0),
    "close record: network.bytes is the sum")
check(c.get("event.duration", 0) >= d.get("event.duration", 0), "close: duration covers the tunnel")
check("event.start" in c, "close record: event.start")
dns_dec = [r for r in recs if r.get("destination.domain") == "dns.allowed.example"
           and r["event.action"] == "connect"]
check(dns_dec and isinstance(dns_dec[0].get("isolate.dns.duration"), int),
      "DNS time recorded when the proxy resolved")
ua = [r for r in dec if r.get("user_agent.original")]
check(any(r.get("user_agent.original") == "agent/1.0 (test)" for r in recs),
      "user_agent.original recorded")
deny = px.record_for(lambda r: r.get("destination.domain") == "evil.example")
check(deny is not None, "the refusal is recorded")
if deny:
    for k, v in {"event.outcome": "failure", "event.type": ["connection", "denied"],
                 "event.reason": "domain-not-allowed", "http.response.status_code": 403,
                 "destination.registered_domain": "evil.example"}.items():
        is_(deny.get(k), v, "denial record: %s" % k)
    check("not in the allowlist" in deny.get("message", ""), "denial record: message says why")

# --- raw tunnels: early data, half-close, big transfer ------------------------------
s, st, hd, rest = open_tunnel(px.port, "echo.allowed.example:%d" % echo, extra=b"early!")
is_(st, 200, "CONNECT answered 200 Connection established")
data = rest
s.settimeout(3)
while len(data) < 6:
    data += s.recv(100)
is_(data, b"early!", "bytes sent right after the request head are relayed (early data)")
payload = os.urandom(3 * 1024 * 1024)
import threading
got = bytearray()
def reader():
    while True:
        try:
            d = s.recv(1 << 20)
        except OSError:
            return
        if not d:
            return
        got.extend(d)
t = threading.Thread(target=reader)
t.start()
s.sendall(payload)
s.shutdown(socket.SHUT_WR)
t.join(15)
check(bytes(got[:len(payload)]) == payload, "3 MiB echoed intact through the tunnel")
check(bytes(got[len(payload):]).startswith(b"BYE:127.0.0.1"),
      "after the client's half-close the upstream still reached the client (half-close)")
s.close()
rec = px.record_for(lambda r: r.get("event.action") == "close" and
                    r.get("source.bytes", 0) >= len(payload))
check(rec is not None and rec.get("source.bytes") == len(payload) + 6 and
      rec.get("destination.bytes") == len(payload) + 6 + len(b"BYE:127.0.0.1"),
      "close record counts the payload bytes exactly", str(rec and (rec.get("source.bytes"), rec.get("destination.bytes"))))

# The upstream closes first: the client still may send, then closes.
s, st, hd, rest = open_tunnel(px.port, "echo.allowed.example:%d" % echo)
s.sendall(b"ping")
s.settimeout(3)
got = b""
while len(got) < 4:
    got += s.recv(10)
is_(got, b"ping", "second tunnel echoes")
s.close()

# No record is lost under load: 20 clients x 25 tunnels at once.
import concurrent.futures
ids_before = {r["event.id"] for r in px.records()}
def one(_):
    s, st, hd, rest = open_tunnel(px.port, "echo.allowed.example:%d" % echo)
    s.sendall(b"x")
    s.shutdown(socket.SHUT_WR)
    data = rest + recv_all(s)
    s.close()
    return st == 200 and data.startswith(b"x")
with concurrent.futures.ThreadPoolExecutor(20) as ex:
    results = list(ex.map(one, range(500)))
is_(sum(results), 500, "500 tunnels from 20 concurrent clients")
def new_records():
    return [r for r in px.records() if r["event.id"] not in ids_before]
wait_until(lambda: len(new_records()) >= 1000)
new = new_records()
dec = {r["event.id"] for r in new if r["event.action"] == "connect"}
clo = {r["event.id"] for r in new if r["event.action"] == "close"}
check(len(new) == 1000 and len(dec) == 500 and dec == clo,
      "under load every tunnel has exactly one decision and one close record",
      "%d records, %d decisions, %d closes" % (len(new), len(dec), len(clo)))

# An IPv6 upstream.
s, st, hd, rest = open_tunnel(px.port, "v6.allowed.example:%d" % echo6)
s.sendall(b"six")
s.shutdown(socket.SHUT_WR)
data = rest + recv_all(s)
s.close()
check(st == 200 and data == b"sixBYE:::1", "a tunnel to an IPv6 upstream", repr(data))
rec = px.record_for(lambda r: r.get("destination.domain") == "v6.allowed.example" and
                    r.get("event.action") == "close")
check(rec and rec.get("destination.ip") == "::1" and rec.get("network.type") == "ipv6",
      "its record: destination.ip ::1, network.type ipv6")

# --- metrics ----------------------------------------------------------------------
text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=5).read().decode()
check('netproxy_decisions_total{decision="allow",reason="allowed"} 506' in text,
      "metrics: allowed decisions counted", re.findall(r"netproxy_decisions_total.*", text))
check('netproxy_decisions_total{decision="deny",reason="domain-not-allowed"} 1' in text,
      "metrics: denials counted by reason")
check(re.search(r'netproxy_bytes_total\{direction="client-to-upstream"\} (\d+)', text) and
      int(re.search(r'netproxy_bytes_total\{direction="client-to-upstream"\} (\d+)', text).group(1))
      >= len(payload), "metrics: bytes relayed")
check("netproxy_dns_duration_seconds_count 503" in text, "metrics: DNS latency histogram (a lookup per tunnel to a name without --resolve)")
check("netproxy_connect_duration_seconds_count 506" in text, "metrics: connect latency histogram")
check(re.search(r"netproxy_tunnels_active \d+", text), "metrics: active tunnels gauge")
check('netproxy_spoke_tunnels_active{spoke="metro_hail"}' in text, "metrics: per-spoke gauge")
try:
    urllib.request.urlopen("http://127.0.0.1:%d/other" % metrics_port, timeout=5)
    not_ok("metrics: other paths are 404")
except urllib.error.HTTPError as e:
    is_(e.code, 404, "metrics: other paths are 404")

# --- the process -------------------------------------------------------------------
st = proc_status(px.pid)
is_(st["Uid"].split(), ["65534"] * 4, "started as root, runs as nobody (uid 65534)")
is_(st["Gid"].split(), ["65534"] * 4, "and group nogroup")
is_(st["CapEff"], "0000000000000000", "no effective capabilities")
if os.environ.get("ISOLATE_VALGRIND"):
    # tests/valgrind/run: memcheck cannot run under the proxy's filter (--no-seccomp,
    # which also leaves no_new_privs to the filter's installation).
    ok("no_new_privs and seccomp filter installed # SKIP netproxy runs with --no-seccomp under valgrind")
else:
    is_(st["NoNewPrivs"], "1", "no_new_privs set")
    is_(st["Seccomp"], "2", "seccomp filter installed (mode 2)")
    helper = subprocess.run(["pgrep", "-P", str(px.pid)], capture_output=True, text=True).stdout.split()
    check(len(helper) == 1 and proc_status(int(helper[0]))["Seccomp"] == "2",
          "the audit-log opener helper runs under its own seccomp filter")
check(px.alive(), "proxy alive")
is_(px.stop(), 0, "SIGTERM: clean exit 0")

r = subprocess.run([NETPROXY, "--help"], capture_output=True, text=True)
check(r.returncode == 0 and "--upstream-allow-cidr" in r.stdout and "--control FD" in r.stdout,
      "--help exits 0 and documents the options")
opts = set(re.findall(r"--[a-z-]+", r.stdout))
for o in ["--listen", "--allow", "--name", "--ports", "--audit", "--resolve",
          "--upstream-allow-cidr", "--report-only", "--control", "--metrics", "--dns-server",
          "--max-tunnels", "--header-timeout", "--idle-timeout", "--max-lifetime", "--user"]:
    check(o in opts, "--help mentions %s" % o)
for bad, why in [(["--listen", "127.0.0.1:1"], "no allowlist is fine but"),
                 ([], "nothing to serve"),
                 (["--listen", "nope"], "bad listen"),
                 (["--listen", "127.0.0.1:1", "--control", "3"], "both modes"),
                 (["--listen", "127.0.0.1:1", "--header-timeout", "0"], "zero timeout"),
                 (["--listen", "127.0.0.1:1", "--upstream-allow-cidr", "10.0.0.1/8"], "host bits"),
                 (["--listen", "127.0.0.1:1", "--allow", "co.uk"], "public suffix entry"),
                 (["--listen", "127.0.0.1:1", "--resolve", "x.example:443"], "bad --resolve")]:
    if not bad or bad == ["--listen", "127.0.0.1:1"]:
        continue
    r = subprocess.run([NETPROXY, "--no-seccomp"] + bad, capture_output=True, text=True, timeout=10)
    check(r.returncode in (1, 2) and "netproxy:" in r.stderr, "refused at startup: %s (exit %d)"
          % (why, r.returncode), r.stderr.strip())
r = subprocess.run([NETPROXY], capture_output=True, text=True)
is_(r.returncode, 2, "no arguments: usage error, exit 2")
done()
