"""Shared helpers for the netproxy tests (run by tests/netproxy/test_np_*.sh).

TAP-style assertions, the proxy under test as a child process (optionally inside a
test network namespace), the stand-in servers (npservers.py), raw CONNECT clients and
audit-record access by dotted ECS path. Everything started here is stopped at exit,
also on SIGTERM from the test runner.
"""
import atexit
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

ROOT = os.environ.get("ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "../..")))
BIN = os.environ.get("BIN", os.path.join(ROOT, "build"))
TMP = os.environ["TMP"]
NETPROXY = os.path.join(BIN, "netproxy")
HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"

failures = 0
_children = []
_proxies = []


def ok(desc):
    print("ok - " + desc, flush=True)


def not_ok(desc, why=""):
    global failures
    failures += 1
    print("not ok - %s%s" % (desc, (": " + str(why)) if why else ""), flush=True)


def check(cond, desc, why=""):
    if cond:
        ok(desc)
    else:
        not_ok(desc, why)
    return bool(cond)


def is_(got, want, desc):
    return check(got == want, desc, "got %r, want %r" % (got, want))


def diag(msg):
    print("# " + str(msg), flush=True)


SANITIZER = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error:|AddressSanitizer")


def done():
    """Ends the test; first checks that no proxy printed a sanitizer report."""
    for p in _proxies:
        if p.proc.poll() is None:
            p.stop()
        m = SANITIZER.search(p.stderr())
        check(m is None, "proxy %s: no sanitizer report" % p.tag,
              p.stderr()[m.start():m.start() + 2000] if m else "")
    sys.exit(1 if failures else 0)


def _cleanup():
    for p in reversed(_children):
        if p.poll() is None:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(130))


def spawn(argv, netns=None, **kw):
    if netns:
        argv = ["ip", "netns", "exec", netns] + argv
    p = subprocess.Popen(argv, **kw)
    _children.append(p)
    return p


def free_port(addr="127.0.0.1"):
    s = socket.socket()
    s.bind((addr, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(pred, timeout=5.0, step=0.02):
    end = time.time() + timeout
    while time.time() < end:
        r = pred()
        if r:
            return r
        time.sleep(step)
    return pred()


def flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        key = prefix + k
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


class Servers:
    """The stand-in servers process. specs: list of server dicts (see npservers.py)."""

    def __init__(self, specs, netns=None, tag="srv"):
        self.status_path = os.path.join(TMP, "%s-status.json" % tag)
        cfg = os.path.join(TMP, "%s.json" % tag)
        with open(cfg, "w") as f:
            json.dump({"status": self.status_path, "servers": specs}, f)
        self.proc = spawn([PY, os.path.join(HERE, "npservers.py"), cfg], netns=netns,
                          stdout=subprocess.PIPE, stderr=open(os.path.join(TMP, tag + ".err"), "w"))
        r, _, _ = select.select([self.proc.stdout], [], [], 10)
        line = self.proc.stdout.readline() if r else b""
        if not line:
            raise RuntimeError("stand-in servers did not start: " +
                               open(os.path.join(TMP, tag + ".err")).read())
        self.ports = json.loads(line)

    def status(self):
        with open(self.status_path) as f:
            return json.load(f)

    def accepts(self, name):
        return self.status()["accepts"].get(name, 0)

    def dns_queries(self, key):
        return self.status()["dns"].get(key, 0)


class Proxy:
    """build/netproxy with args; listens on 127.0.0.1:<free port> unless hub mode."""

    def __init__(self, args, netns=None, tag="proxy", listen=True, audit=None, pass_fds=(),
                 wrapper=None, ready=True):
        self.tag = tag
        self.port = free_port() if listen else None
        self.audit = audit if audit is not None else os.path.join(TMP, tag + ".audit.jsonl")
        self.stderr_path = os.path.join(TMP, tag + ".stderr")
        argv = [NETPROXY]
        if listen:
            argv += ["--listen", "127.0.0.1:%d" % self.port]
        if self.audit:
            argv += ["--audit", self.audit]
        argv += list(args)
        if wrapper:
            argv = wrapper + argv
        self.errf = open(self.stderr_path, "w")
        _proxies.append(self)
        self.proc = spawn(argv, netns=netns, stderr=self.errf, stdout=subprocess.DEVNULL,
                          pass_fds=pass_fds)
        if ready and not wait_until(lambda: "ready:" in self.stderr() or self.proc.poll() is not None,
                                    timeout=30):
            raise RuntimeError("proxy did not start: " + self.stderr())
        if ready and self.proc.poll() is not None:
            raise RuntimeError("proxy exited: " + self.stderr())

    @property
    def pid(self):
        return self.proc.pid

    def netproxy_pid(self):
        """The proxy's own pid (not `ip netns exec`'s; that one execs, so they match)."""
        return self.proc.pid

    def stderr(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def records(self):
        out = []
        try:
            with open(self.audit) as f:
                for line in f:
                    out.append(flatten(json.loads(line)))
        except FileNotFoundError:
            pass
        return out

    def wait_records(self, n, timeout=5.0):
        return wait_until(lambda: len(self.records()) >= n and self.records(), timeout) or self.records()

    def record_for(self, pred, timeout=3.0):
        def find():
            for r in self.records():
                if pred(r):
                    return r
            return None
        return wait_until(find, timeout)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def parse_response(data):
    """(status, headers{lower: value}, body) of an HTTP/1.1 response head + body."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", lines[0] + b" ") if lines else None
    status = int(m.group(1)) if m else None
    headers = {}
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode(errors="replace")
    return status, headers, body


def recv_all(s, timeout=3.0, limit=1 << 20):
    """Reads until EOF (or timeout); returns the bytes."""
    s.settimeout(timeout)
    data = b""
    try:
        while len(data) < limit:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def recv_head(s, timeout=3.0):
    """Reads an HTTP response head (and whatever came with it)."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def exchange(port, raw, host="127.0.0.1", timeout=3.0, shut=False):
    """Sends raw bytes and reads the whole answer (the proxy closes after a refusal)."""
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(raw)
        if shut:
            s.shutdown(socket.SHUT_WR)
        return parse_response(recv_all(s, timeout))
    finally:
        s.close()


def open_tunnel(port, target, host="127.0.0.1", extra=b"", timeout=3.0):
    """CONNECT target through the proxy; returns (socket, status, headers, leftover)."""
    s = socket.create_connection((host, port), timeout=timeout)
    s.sendall(b"CONNECT " + target.encode() + b" HTTP/1.1\r\nHost: " + target.encode() +
              b"\r\n\r\n" + extra)
    data = recv_head(s, timeout)
    status, headers, rest = parse_response(data)
    return s, status, headers, rest


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def make_ca(names):
    """A test CA and a server certificate for names, made with openssl in TMP."""
    d = os.path.join(TMP, "pki")
    os.makedirs(d, exist_ok=True)
    run = lambda *a: subprocess.run(a, check=True, cwd=d, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=netproxy test CA")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out",
        "srv.csr", "-subj", "/CN=" + names[0])
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + n for n in names) + "\n")
    run("openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-out", "srv.pem", "-extfile", "ext.cnf")
    return {k: os.path.join(d, v) for k, v in
            {"ca": "ca.pem", "cert": "srv.pem", "key": "srv.key"}.items()}
