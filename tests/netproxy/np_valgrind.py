"""A short valgrind run of the proxy (release build): tunnels, refusals of each kind,
a DNS timeout, SIGHUP and a drain, then no errors and no leaks."""
from nptest import *

srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1",
                "table": {"slow.allowed.example": "drop",
                          "d.allowed.example": {"A": [["127.0.0.1"]]}}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
log = os.path.join(TMP, "valgrind.log")
px = Proxy(["--allow", "allowed.example", "--ports", "443,%d" % echo,
            "--dns-server", "127.0.0.1:%d" % dns, "--upstream-allow-cidr", "127.0.0.1/32",
            "--resolve", "e.allowed.example:%d:127.0.0.1" % echo, "--dns-timeout", "1s",
            "--metrics", "127.0.0.1:%d" % (mport := free_port()),
            # valgrind cannot run a program that loads a seccomp filter
            "--no-seccomp", "--drain-timeout", "300ms"],
           wrapper=["valgrind", "--error-exitcode=99", "--leak-check=full",
                    "--errors-for-leak-kinds=definite,indirect",
                    "--show-leak-kinds=definite,indirect", "--log-file=" + log])
T = "e.allowed.example:%d" % echo
for target in [T, "d.allowed.example:%d" % echo]:
    s, st, hd, rest = open_tunnel(px.port, target, extra=b"early", timeout=10)
    s.sendall(b"more")
    s.shutdown(socket.SHUT_WR)
    data = rest + recv_all(s, 10)
    s.close()
    check(st == 200 and data.startswith(b"earlymore"), "tunnel to %s under valgrind" % target)
for raw, want in [(b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n", 403),
                  (b"CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", 403),
                  (b"CONNECT a.allowed.example:443 HTTP/1.1\n\n", 400),
                  (b"\x16\x03\x01\x02\x00\x01", 400),
                  (b"GET / HTTP/1.1\r\n\r\n", 405),
                  (b"CONNECT slow.allowed.example:443 HTTP/1.1\r\n\r\n", 504),
                  (b"CONNECT a.allowed.example:443 HTTP/1.1\r\nX: " + b"a" * 50000 + b"\r\n\r\n", 431)]:
    st, hd, body = exchange(px.port, raw, timeout=10)
    is_(st, want, "refusal %d under valgrind" % want)
import urllib.request
check(b"netproxy_decisions_total" in urllib.request.urlopen(
    "http://127.0.0.1:%d/metrics" % mport, timeout=10).read(), "metrics under valgrind")
s, st, hd, rest = open_tunnel(px.port, T, timeout=10)  # left open: the drain ends it
# A lookup still pending at exit: cancelled while the resolver is torn down.
pending = socket.create_connection(("127.0.0.1", px.port))
pending.sendall(b"CONNECT slow.allowed.example:443 HTTP/1.1\r\n\r\n")
time.sleep(0.2)
px.signal(signal.SIGHUP)
check(wait_until(lambda: "reopened" in px.stderr(), 10), "SIGHUP reopen under valgrind")
rc = px.stop(timeout=60)
s.close()
st, hd, body = parse_response(recv_all(pending, 5))
is_(hd.get("x-proxy-error"), "shutting-down", "a request still resolving at exit is refused 503")
report = open(log).read()
is_(rc, 0, "valgrind: exit 0 (no errors, no definite or indirect leaks)")
check("ERROR SUMMARY: 0 errors" in report, "valgrind: ERROR SUMMARY: 0 errors",
      "\n".join(l for l in report.splitlines() if "ERROR SUMMARY" in l or "definitely" in l))

# --workers 2: the same teardown with a second thread (its loop, resolver, pipes, a
# tunnel left open on it at exit), and no leak from the threads.
log2 = os.path.join(TMP, "valgrind-workers.log")
wx = Proxy(["--allow", "allowed.example", "--ports", "443,%d" % echo, "--workers", "2",
            "--dns-server", "127.0.0.1:%d" % dns, "--upstream-allow-cidr", "127.0.0.1/32",
            "--resolve", "e.allowed.example:%d:127.0.0.1" % echo, "--no-seccomp",
            "--drain-timeout", "300ms"], tag="workers",
           wrapper=["valgrind", "--error-exitcode=99", "--leak-check=full",
                    "--errors-for-leak-kinds=definite,indirect",
                    "--show-leak-kinds=definite,indirect", "--log-file=" + log2])
held = [open_tunnel(wx.port, T, timeout=10) for _ in range(8)]
is_([t[1] for t in held], [200] * 8, "workers: 8 tunnels under valgrind, spread over 2 loops")
held = [t[0] for t in held]
st, hd, body = exchange(wx.port, b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n", timeout=10)
is_(st, 403, "workers: a refusal under valgrind")
rc = wx.stop(timeout=60)
for s in held:
    s.close()
report = open(log2).read()
is_(rc, 0, "valgrind, 2 workers: exit 0 with tunnels open (no errors, no leaks)")
check("ERROR SUMMARY: 0 errors" in report, "valgrind, 2 workers: ERROR SUMMARY: 0 errors",
      "\n".join(l for l in report.splitlines() if "ERROR SUMMARY" in l or "definitely" in l))
done()
