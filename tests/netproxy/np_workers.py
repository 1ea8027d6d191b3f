"""netproxy --workers 2 (see test_np_workers.sh)."""
import signal

from nptest import *

LOAD = os.path.join(BIN, "tests/netproxy/np_load")
N = 3000


def start_echo():
    echo, source = free_port(), free_port()
    spawn([LOAD, "serve", "127.0.0.1:%d" % echo, "127.0.0.1:%d" % source])
    wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", echo)) == 0)
    return echo


def burst(port, target, n, conc):
    out = subprocess.run([LOAD, "burst", "--via", "127.0.0.1:%d" % port, "--target", target,
                          "--addr", "127.0.0.1:1", "-n", str(n), "-c", str(conc)],
                         capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout) if out.returncode == 0 and out.stdout else {"err": out.stderr}


def tasks(pid):
    return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))


def task_cpu(pid, tid):
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def task_status(pid, tid, key):
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split()[1]
    return None


def check_stream(px, n_tunnels, tag):
    """Every line parses; decisions and closes pair up by id, decision first."""
    lines = open(px.audit, "rb").read().split(b"\n")
    check(lines[-1] == b"", "%s: the audit stream ends with a whole line" % tag)
    bad, decisions, closes, order_ok = 0, {}, {}, True
    for i, line in enumerate(lines[:-1]):
        try:
            r = flatten(json.loads(line))
        except ValueError:
            bad += 1
            continue
        a, rid = r.get("event.action"), r.get("event.id")
        if a == "connect":
            if rid in decisions:
                order_ok = False
            decisions[rid] = (i, r)
        elif a == "close":
            if rid in closes or rid not in decisions or decisions[rid][0] > i:
                order_ok = False
            closes[rid] = (i, r)
    check(bad == 0, "%s: every one of %d lines parses as JSON" % (tag, len(lines) - 1),
          "%d torn or interleaved" % bad)
    allowed = [k for k, (_, r) in decisions.items() if r.get("event.outcome") == "success"]
    is_(len(allowed), n_tunnels, "%s: one allowed decision per tunnel" % tag)
    is_(len(closes), n_tunnels, "%s: one close record per tunnel" % tag)
    check(order_ok and set(closes) == set(allowed),
          "%s: every close pairs with its decision by id, written after it" % tag)
    ids = [k for k in decisions]
    check(len(set(ids)) == len(ids) and all(len(k) == 32 for k in ids),
          "%s: ids are unique 32-hex" % tag)


echo = start_echo()
common = ["--ports", str(echo), "--resolve", "w.example:%d:127.0.0.1" % echo,
          "--upstream-allow-cidr", "127.0.0.1/32", "--dns-server", "127.0.0.1:9",
          "--max-tunnels", "4096", "--max-tunnels-per-spoke", "4096", "--max-pending", "4096",
          "--max-pending-per-spoke", "4096"]

# --- standalone: a SO_REUSEPORT socket per worker ---------------------------------------
px = Proxy(["--allow", "w.example", "--workers", "2"] + common, tag="standalone")
check("2 workers" in px.stderr(), "standalone: the proxy says it runs 2 workers")
ts = tasks(px.pid)
is_(len(ts), 2, "standalone: two threads")
check(all(task_status(px.pid, t, "Seccomp") == "2" and task_status(px.pid, t, "NoNewPrivs") == "1"
          for t in ts), "standalone: the seccomp filter and no_new_privs are on every thread")
before = {t: task_cpu(px.pid, t) for t in ts}
r = burst(px.port, "w.example:%d" % echo, N, 50)
is_(r.get("ok"), N, "standalone: %d tunnels through 2 workers, all echoed" % N)
busy = [t for t in ts if task_cpu(px.pid, t) > before[t]]
is_(len(busy), 2, "standalone: both workers served connections")
px.wait_records(2 * N, timeout=10)
check_stream(px, N, "standalone")

# SIGHUP (logrotate) with two writer threads: the new file gets whole lines and pairs.
os.rename(px.audit, px.audit + ".1")
px.signal(signal.SIGHUP)
check(wait_until(lambda: "reopened" in px.stderr()), "standalone: SIGHUP reopens the audit log")
r = burst(px.port, "w.example:%d" % echo, 500, 50)
is_(r.get("ok"), 500, "standalone: 500 more tunnels after the reopen")
px.wait_records(1000, timeout=10)
check_stream(px, 500, "standalone after SIGHUP")
is_(len(open(px.audit + ".1").read().splitlines()), 2 * N,
    "standalone: the rotated file kept its %d records, none added" % (2 * N))

# A drain waits for a tunnel, whichever worker holds it; then exits 0.
held = [open_tunnel(px.port, "w.example:%d" % echo)[0] for _ in range(8)]
px.signal(signal.SIGTERM)
time.sleep(0.3)
check(px.alive(), "standalone: SIGTERM with open tunnels: still running (draining)")
for s in held:
    s.sendall(b"ping")
check(all(recv_all(s, timeout=2, limit=4) == b"ping" for s in held),
      "standalone: the held tunnels still relay while draining")
for s in held:
    s.close()
is_(px.proc.wait(timeout=10), 0, "standalone: exits 0 once the last tunnel closes")
check_stream(px, 500 + len(held), "standalone after the drain")

# --- hub mode: one passed socket, watched by both workers -------------------------------
hub, proxy_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
hx = Proxy(["--control", str(proxy_end.fileno()), "--workers", "2"] + common, tag="hub",
           listen=False, pass_fds=(proxy_end.fileno(),))
proxy_end.close()
hub.settimeout(5)
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(512)
port = lsock.getsockname()[1]
msg = {"op": "add", "spoke": "alpha", "allow": ["w.example"], "ports": [echo],
       "listen": "127.0.0.1:%d" % port}
socket.send_fds(hub, [json.dumps(msg).encode()], [lsock.fileno()])
reply = json.loads(hub.recv(70000))
lsock.close()
check(reply.get("ok") is True, "hub: the spoke's socket is added", reply)
ts = tasks(hx.pid)
before = {t: task_cpu(hx.pid, t) for t in ts}
r = burst(port, "w.example:%d" % echo, N, 50)
is_(r.get("ok"), N, "hub: %d tunnels through the passed socket, all echoed" % N)
busy = [t for t in ts if task_cpu(hx.pid, t) > before[t]]
is_(len(busy), 2, "hub: both workers served connections")


def ping():
    hub.send(json.dumps({"op": "ping"}).encode())
    return json.loads(hub.recv(70000))


# The clients have closed; the workers see the closes a moment later.
reply = wait_until(lambda: (lambda r: r if r.get("tunnels") == 0 else None)(ping())) or ping()
check(reply.get("spokes") == 1 and reply.get("tunnels") == 0,
      "hub: ping counts the spoke, and no tunnel once the clients are gone", reply)
hx.wait_records(2 * N + 1, timeout=10)
check_stream(hx, N, "hub")
hub.close()
is_(hx.proc.wait(timeout=10), 0, "hub: exits 0 when the hub closes the channel")
done()
