"""Protocol-level cases of the repl-server tests, run by test_*.sh with /usr/bin/python3.

`cases.py GROUP PORT [ARGS...]` prints TAP lines ("ok - ..." / "not ok - ...") that
tests/run counts. Every hostile case is checked for the reason it failed (the errno or
the exception, which names the layer: seccomp's EPERM, the mount namespace's ENOENT,
the read-only bind's EROFS, the rlimit's MemoryError), and where it is safe the same
attempt is made outside the sandbox as a control that shows the attempt itself works.
"""

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

FAILURES = 0


def ok(cond, desc, detail=""):
    global FAILURES
    if cond:
        print("ok - %s" % desc)
    else:
        FAILURES += 1
        print("not ok - %s%s" % (desc, (": " + str(detail)[:600].replace("\n", "\\n")) if detail else ""))
    sys.stdout.flush()
    return cond


class Conn:
    def __init__(self, port, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send_raw(self, data):
        self.sock.sendall(data)

    def send_payload(self, payload):
        self.send_raw(struct.pack(">I", len(payload)) + payload)

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def recv(self):
        head = self.recv_exact(4)
        if head is None:
            return None
        (n,) = struct.unpack(">I", head)
        body = self.recv_exact(n)
        return None if body is None else json.loads(body.decode("utf-8"))

    def closed(self):
        """True when the server closed the connection (EOF, or a reset)."""
        try:
            self.sock.settimeout(5)
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def run(self, code, session=None, close=False):
        req = {"code": code}
        if session:
            req["session_id"] = session
        if close:
            req["close"] = True
        self.send_payload(json.dumps(req).encode())
        return self.recv()

    def close(self):
        self.sock.close()


def run(port, code, session=None, close=False):
    c = Conn(port)
    try:
        return c.run(code, session, close)
    finally:
        c.close()


def shape_ok(r):
    return (
        isinstance(r, dict)
        and set(r) == {"status", "output", "error", "session_id"}
        and r["status"] in ("ok", "error")
        and all(isinstance(r[k], str) for k in ("output", "error", "session_id"))
    )


# ---- groups ----


def basic(port):
    c = Conn(port)
    r = c.run("x = 40\ndef f(y):\n    return x + y\nimport math\nprint('hello')")
    ok(shape_ok(r), "a response has exactly status, output, error and session_id", r)
    ok(r["status"] == "ok" and r["output"] == "hello\n" and r["error"] == "", "a first run prints", r)
    sid = r["session_id"]
    ok(len(sid) == 32 and all(ch in "0123456789abcdef" for ch in sid),
       "a new session's id is 32 hex characters (128 bits)", sid)
    r = c.run("f(2), math.floor(2.5)", sid)
    ok(r["status"] == "ok" and r["output"] == "(42, 2)\n" and r["session_id"] == sid,
       "a variable, a function and an import survive between runs (the final expression is printed)", r)
    r2 = run(port, "x", sid)
    ok(r2["status"] == "ok" and r2["output"] == "40\n",
       "the session is reached from another connection by its id", r2)
    r = c.run("print('before')\ndef g():\n    return 1 / 0\ng()", sid)
    ok(r["status"] == "error" and r["output"] == "before\n", "an exception is an error, output kept", r)
    ok("Traceback (most recent call last)" in r["error"] and "ZeroDivisionError: division by zero" in r["error"]
       and 'line 3, in g' in r["error"] and "return 1 / 0" in r["error"],
       "the error is the traceback, with the code's own lines", r["error"])
    ok("runner" not in r["error"] and "pyexec" not in r["error"],
       "the traceback shows none of the runner's frames", r["error"])
    r = c.run("def h(:\n  pass", sid)
    ok(r["status"] == "error" and "SyntaxError" in r["error"] and "Traceback" not in r["error"],
       "a syntax error is an error with the message only", r)
    r = c.run("x + 2", sid)
    ok(r["output"] == "42\n", "errors leave the session's state alone", r)
    r = c.run("import sys\nsys.stderr.write('to stderr\\n')\nos_write = __import__('os').write\n"
              "os_write(1, b'fd one\\n')\nos_write(2, b'fd two\\n')\nNone", sid)
    ok(r["status"] == "ok" and "to stderr\n" in r["output"] and "fd one\n" in r["output"]
       and "fd two\n" in r["output"], "stderr and direct writes to fds 1 and 2 are captured", r)
    r = c.run("print('x' * 1000000)", sid)
    ok(r["status"] == "ok" and 30000 <= len(r["output"]) <= 40000,
       "output is bounded (%d characters of 1000001)" % len(r["output"]), len(r["output"]))
    r = c.run("input()", sid)
    ok(r["status"] == "error" and "EOFError" in r["error"], "input() ends at once (no terminal)", r)
    r = c.run("raise SystemExit(3)", sid)
    ok(r["status"] == "error" and "SystemExit" in r["error"], "sys.exit is an error, not the end", r)
    r = c.run("x", sid)
    ok(r["status"] == "ok" and r["output"] == "40\n", "... and the session lives on", r)
    r = c.run("print('bye')", sid, close=True)
    ok(r["status"] == "ok" and r["output"] == "bye\n", "close: true still runs the code", r)
    r = c.run("x", sid)
    ok(r["status"] == "error" and "unknown session" in r["error"], "... then the session has ended", r)
    r = c.run("1", "0123456789abcdef0123456789abcdef")
    ok(r["status"] == "error" and "unknown session" in r["error"] and r["output"] == "",
       "an unknown session id is an error", r)
    r = c.run("1", "not-an-id")
    ok(r["status"] == "error" and "unknown session" in r["error"], "a malformed session id is unknown", r)
    ok(c.run("1+1")["output"] == "2\n", "the connection still serves after the errors")
    c.close()


def isolation(port, n=8):
    """n clients at once: each session sets its own values and files, then looks for the
    others'."""
    n = int(n)
    results = {}
    barrier = threading.Barrier(n)

    def client(i):
        try:
            c = Conn(port, timeout=60)
            r = c.run("secret = %d\nopen('/tmp/mine-%d', 'w').write('t')\nopen('/data/mine-%d', 'w').write('d')\n"
                      "import os\nsorted(os.listdir('/tmp')), sorted(os.listdir('/data'))" % (i, i, i))
            sid = r["session_id"]
            barrier.wait(timeout=60)
            others = [j for j in range(n) if j != i]
            r2 = c.run("import os\n[secret, [os.path.exists('/tmp/mine-%%d' %% j) or os.path.exists('/data/mine-%%d' %% j)"
                       " for j in %r], sorted(f for f in os.listdir('/tmp') if not f.startswith('isolate-')),"
                       " sorted(os.listdir('/data'))]" % others, sid)
            r3 = c.run("", sid, close=True)
            results[i] = (r, r2, r3)
            c.close()
        except Exception as e:  # reported below
            results[i] = e

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - t0
    sids = set()
    good = 0
    for i in range(n):
        res = results.get(i)
        if not isinstance(res, tuple):
            ok(False, "client %d" % i, res)
            continue
        r, r2, r3 = res
        sids.add(r["session_id"])
        # /tmp also holds the mount point of the spoke's program directory (this test
        # keeps its copy under its own temporary directory, /tmp/isolate-*).
        want = repr([i, [False] * (n - 1), ["mine-%d" % i], ["mine-%d" % i]]) + "\n"
        if r2["status"] == "ok" and r2["output"] == want and r3["status"] == "ok":
            good += 1
        else:
            ok(False, "client %d sees only its own session" % i, (r2, want))
    ok(good == n, "%d concurrent clients each see only their own variables, /tmp and /data (%.1f s)" % (n, took))
    ok(len(sids) == n, "... in %d distinct sessions" % n, sids)


def hostile(port, root):
    c = Conn(port)
    sid = c.run("import os, socket, subprocess, ctypes, errno")["session_id"]

    def attempt(code):
        r = c.run(code, sid)
        return r["output"].strip() if r["status"] == "ok" else "ERROR " + r["error"]

    # A listener on the host's loopback, which the session tries to reach.
    lis = socket.socket()
    lis.bind(("127.0.0.1", 0))
    lis.listen(8)
    lport = lis.getsockname()[1]
    lis.settimeout(0.5)
    probe = ("try:\n    s = socket.create_connection(('127.0.0.1', %d), timeout=2)\n    print('connected')\n"
             "except OSError as e:\n    print(type(e).__name__, e.errno)" % lport)
    out = attempt(probe)
    ok(out == "PermissionError 1", "a connection to a host loopback listener fails with EPERM (seccomp: no AF_INET socket)", out)
    out = attempt("print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))")
    ok(out == "['lo']", "... and the session's network namespace has loopback only", out)
    try:
        lis.accept()
        ok(False, "the listener saw no connection from the session")
    except socket.timeout:
        ok(True, "the listener saw no connection from the session")
    ctl = socket.create_connection(("127.0.0.1", lport), timeout=2)
    ok(lis.accept() is not None, "control: the listener accepts a connection from the host")
    ctl.close()
    lis.close()

    out = attempt("try:\n    print(open('/etc/shadow').read()[:10])\nexcept OSError as e:\n    print(type(e).__name__, e.errno)")
    ok(out == "FileNotFoundError 2", "reading /etc/shadow: ENOENT (the mount namespace has no /etc/shadow)", out)
    ok(os.path.exists("/etc/shadow"), "control: /etc/shadow exists on the host")
    readme = os.path.join(root, "README.md")
    out = attempt("try:\n    print(open(%r).read()[:10])\nexcept OSError as e:\n    print(type(e).__name__, e.errno)" % readme)
    ok(out == "FileNotFoundError 2", "reading the project's checkout: ENOENT (not mounted)", out)
    out = attempt("try:\n    print(os.listdir(%r))\nexcept OSError as e:\n    print(type(e).__name__, e.errno)" % root)
    ok(out == "FileNotFoundError 2", "listing the checkout: ENOENT", out)
    ok(os.path.exists(readme), "control: the checkout is there on the host")
    out = attempt("print(sorted(os.listdir('/')), sorted(os.listdir('/usr/bin')))")
    ok(out.endswith("['python3.11']"), "/usr/bin in the session holds the interpreter only (no shell)", out)
    out = attempt("try:\n    import site; print(site.getsitepackages())\nexcept Exception as e: print(e)\n"
                  "import sys; print([p for p in sys.path if 'packages' in p], os.path.exists('/usr/lib/python3/dist-packages'))")
    ok(out.endswith("[] False"), "no site-packages on sys.path, and the host's are not mounted", out)

    for path in ("/usr/evil", "/usr/lib/python3.11/evil.py", "/usr/lib/x86_64-linux-gnu/evil.so", "/etc/evil", "/evil"):
        out = attempt("try:\n    open(%r, 'a').write('x')\n    print('written')\nexcept OSError as e:\n"
                      "    print(type(e).__name__, e.errno)" % path)
        ok(out == "OSError 30", "creating %s: EROFS (read-only bind / read-only root)" % path, out)
    out = attempt("try:\n    open('/usr/lib/python3.11/os.py', 'a').write('x')\nexcept OSError as e:\n"
                  "    print(type(e).__name__, e.errno, bool(os.statvfs('/usr/lib/python3.11').f_flag & os.ST_RDONLY),"
                  " os.stat('/usr/lib/python3.11/os.py').st_uid)")
    ok(out == "PermissionError 13 True 65534",
       "appending to the stdlib's os.py: EACCES (owned by an unmapped uid) on a read-only mount", out)
    ok(not os.path.exists("/usr/evil") and not os.path.exists("/usr/lib/python3.11/evil.py"),
       "... and nothing appeared on the host")

    out = attempt("try:\n    subprocess.run(['/usr/bin/python3.11', '-c', 'print(1)'])\n    print('ran')\n"
                  "except OSError as e:\n    print(type(e).__name__, e.errno)")
    ok(out == "PermissionError 1", "subprocess.run: EPERM (seccomp: no fork/vfork)", out)
    out = attempt("rc = os.system('echo pwned > /tmp/system-ran')\nprint(rc != 0, os.path.exists('/tmp/system-ran'))")
    ok(out == "True False", "os.system fails and runs nothing", out)
    out = attempt("try:\n    os.posix_spawn('/usr/bin/python3.11', ['p', '-c', '1'], {})\n    print('spawned')\n"
                  "except OSError as e:\n    print(type(e).__name__, e.errno)")
    ok(out == "PermissionError 1", "os.posix_spawn: EPERM", out)
    out = attempt("import multiprocessing\ntry:\n    p = multiprocessing.Process(target=print)\n    p.start()\n"
                  "    print('started')\nexcept OSError as e:\n    print(type(e).__name__, e.errno)")
    ok(out == "PermissionError 1", "multiprocessing: EPERM", out)
    ctl = subprocess.run(["/usr/bin/python3", "-c", "import subprocess; print(subprocess.run(['true']).returncode)"],
                         capture_output=True, text=True)
    ok(ctl.stdout.strip() == "0", "control: subprocess works on the host", ctl)

    out = attempt("libc = ctypes.CDLL(None, use_errno=True)\n"
                  "print(libc.ptrace(0, 0, 0, 0), ctypes.get_errno(), libc.ptrace(16, 1, 0, 0), ctypes.get_errno())")
    ok(out == "-1 1 -1 1", "ctypes ptrace (TRACEME, ATTACH to pid 1): EPERM (seccomp)", out)
    ctl = subprocess.run(["/usr/bin/python3", "-c", "import ctypes; print(ctypes.CDLL(None).ptrace(0, 0, 0, 0))"],
                         capture_output=True, text=True)
    ok(ctl.stdout.strip() == "0", "control: ptrace(TRACEME) works on the host", ctl)
    out = attempt("libc = ctypes.CDLL(None, use_errno=True)\nprint(libc.unshare(0x10000000), ctypes.get_errno())")
    ok(out == "-1 1", "ctypes unshare(CLONE_NEWUSER): EPERM", out)

    out = attempt("try:\n    while True:\n        os.fork()\nexcept OSError as e:\n    print(type(e).__name__, e.errno)")
    ok(out == "PermissionError 1", "a fork bomb stops at the first fork: EPERM (seccomp)", out)
    out = attempt("import threading, time\nev = threading.Event()\nts = []\ntry:\n    for i in range(1000):\n"
                  "        t = threading.Thread(target=ev.wait); t.start(); ts.append(t)\nexcept RuntimeError as e:\n"
                  "    print(len(ts) < 20, e)\nev.set()\n[t.join() for t in ts]\nNone")
    ok(out == "True can't start new thread", "a thread bomb stops at RLIMIT_NPROC", out)

    out = attempt("try:\n    x = bytearray(2 * 1024 ** 3)\nexcept MemoryError:\n    print('MemoryError')")
    ok(out == "MemoryError", "a 2 GiB allocation: MemoryError (RLIMIT_AS)", out)
    # Mappings, not bytearrays: zero-filling half a gigabyte can take longer than this
    # server's one-second time limit on a loaded machine.
    out = attempt("import mmap\nhog = []\ntry:\n    while True:\n        hog.append(mmap.mmap(-1, 32 * 2**20))\n"
                  "except OSError as e:\n    print(type(e).__name__, e.errno, len(hog) * 32 < 512)\n"
                  "for m in hog:\n    m.close()\ndel hog")
    ok(out == "OSError 12 True", "a memory bomb: ENOMEM below the manifest's 512 MiB (RLIMIT_AS)", out)
    out = attempt("import resource\nprint(resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20)")
    ok(out == "512", "the session's address-space limit is the manifest's (512 MiB)", out)
    # A byte past the limit's end, not 20 MiB written: under load writing 16 MiB took
    # longer than this server's one-second time limit.
    out = attempt("try:\n    f = open('/tmp/big', 'wb')\n    f.seek(20 * 2**20)\n    f.write(b'x')\n"
                  "    f.close()\n    print('written')\nexcept OSError as e:\n    print(type(e).__name__, e.errno)")
    ok(out == "OSError 27", "a file over RLIMIT_FSIZE (16 MiB): EFBIG", out)
    out = attempt("x = 6 * 7\nx")
    ok(out == "42", "the session still works after every attempt", out)
    c.run("", sid, close=True)
    c.close()


def timeouts(port, limit_s):
    limit_s = float(limit_s)
    c = Conn(port, timeout=60)
    sid = c.run("state = 'kept'")["session_id"]
    other = Conn(port, timeout=60)
    osid = other.run("n = 0")["session_id"]
    stop = threading.Event()
    lat = []

    def neighbour():
        while not stop.is_set():
            t = time.monotonic()
            r = other.run("n += 1\nn", osid)
            lat.append((time.monotonic() - t, r["status"]))
            time.sleep(0.02)

    th = threading.Thread(target=neighbour)
    th.start()
    t0 = time.monotonic()
    r = c.run("while True:\n    pass", sid)
    took = time.monotonic() - t0
    ok(r["status"] == "error" and "KeyboardInterrupt" in r["error"] and "time limit" in r["error"],
       "while True: pass is interrupted (KeyboardInterrupt at the time limit)", r)
    ok(limit_s * 0.9 <= took < limit_s + 1.5, "... answered within the time limit (%.2f s for %.1f s)" % (took, limit_s))
    r = c.run("state", sid)
    ok(r["status"] == "ok" and r["output"] == "'kept'\n", "... and the session keeps its state", r)

    t0 = time.monotonic()
    r = c.run("import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass", sid)
    took = time.monotonic() - t0
    ok(r["status"] == "error" and "ignored the interrupt" in r["error"] and "killed" in r["error"],
       "a run that ignores the interrupt gets an error ...", r)
    ok(took < limit_s + 2.0 + 2.0, "... once the hub killed its sandbox (%.2f s)" % took)
    r = c.run("state", sid)
    ok(r["status"] == "error" and "unknown session" in r["error"], "... and its session has ended", r)
    t0 = time.monotonic()
    r = c.run("sum(range(10 ** 13))")
    took = time.monotonic() - t0
    ok(r["status"] == "error" and "killed" in r["error"],
       "a loop inside C code (no signal check) is killed the same way (%.2f s)" % took, r)
    stop.set()
    th.join()
    worst = max(t for t, _ in lat) if lat else 99
    ok(len(lat) >= 10 and all(s == "ok" for _, s in lat) and worst < 1.0,
       "another session answered %d runs meanwhile, the slowest in %.0f ms" % (len(lat), worst * 1000), lat[:5])
    ok(other.run("n > 5", osid)["output"] == "True\n", "... and kept its own state")
    other.run("", osid, close=True)
    c.close()
    other.close()


def malformed(port, max_frame):
    max_frame = int(max_frame)

    def fresh():
        return Conn(port, timeout=10)

    def expect_error(c, desc, needle, then_open=True):
        r = c.recv()
        good = r is not None and shape_ok(r) and r["status"] == "error" and needle in r["error"]
        ok(good, desc, r)
        if then_open:
            r2 = c.run("1+1")
            ok(r2 is not None and r2["output"] == "2\n", "... and the connection still serves", r2)
            if r2 and r2.get("session_id"):
                c.run("", r2["session_id"], close=True)

    c = fresh()
    c.send_raw(struct.pack(">I", max_frame + 1))
    expect_error(c, "a length over the maximum: an error", "exceeds the maximum", then_open=False)
    ok(c.closed(), "... then the connection is closed")
    c = fresh()
    c.send_raw(b"\xff\xff\xff\xff" + b"x" * 1000)
    expect_error(c, "a 4 GiB length: an error", "exceeds the maximum", then_open=False)
    ok(c.closed(), "... then the connection is closed")
    c = fresh()
    c.send_raw(struct.pack(">I", max_frame * 4) + b"y" * (max_frame * 4))
    expect_error(c, "an oversized frame sent whole (%d bytes): the error arrives intact" % (max_frame * 4),
                 "exceeds the maximum", then_open=False)
    ok(c.closed(), "... then the connection is closed (no reset)")
    c = fresh()
    c.send_raw(os.urandom(8192))
    r = c.recv()
    ok(r is None or (shape_ok(r) and r["status"] == "error"), "random bytes: an error or a close", r)

    cases = [
        (b"\xff\xfe\xfd", "invalid UTF-8", "not valid UTF-8"),
        (b'{"code": "\xc0\xaf"}', "an overlong UTF-8 form", "not valid UTF-8"),
        (b'{"code": "\xed\xa0\x80"}', "an encoded surrogate", "not valid UTF-8"),
        (b"", "an empty frame", "not JSON"),
        (b'{"code": "1"', "truncated JSON", "not JSON"),
        (b'{"code": "1"} {}', "two JSON values", "not JSON"),
        (b'{"code": "1", "code": "2"}', "a duplicate key", "not JSON"),
        (b'{"code": "a\\u0000b"}', "a NUL character", "not JSON"),
        (b"[" * 30000 + b"]" * 30000, "30000 nested arrays", "not JSON"),
        (b"[1, 2]", "a JSON array", "must be a JSON object"),
        (b'"print(1)"', "a JSON string", "must be a JSON object"),
        (b"null", "JSON null", "must be a JSON object"),
        (b"{}", "no code", '"code" is missing'),
        (b'{"session_id": "x"}', "a session id without code", '"code" is missing'),
        (b'{"code": 1}', "code a number", '"code" must be a string'),
        (b'{"code": null}', "code null", '"code" must be a string'),
        (b'{"code": ["print(1)"]}', "code an array", '"code" must be a string'),
        (b'{"code": {"a": 1}}', "code an object", '"code" must be a string'),
        (b'{"code": "1", "session_id": 7}', "session_id a number", '"session_id" must be a string'),
        (b'{"code": "1", "session_id": ["a"]}', "session_id an array", '"session_id" must be a string'),
        (b'{"code": "1", "close": "yes"}', "close a string", '"close" must be a boolean'),
    ]
    c = fresh()
    for payload, desc, needle in cases:
        c.send_payload(payload)
        expect_error(c, "%s: an error" % desc, needle)
    c.close()

    # A client that only sends garbage is answered, then cut off.
    c = fresh()
    c.send_raw((struct.pack(">I", 2) + b"{]") * 40)
    rs = []
    while True:
        r = c.recv()
        if r is None:
            break
        rs.append(r)
    ok(len(rs) == 16 and all(r["status"] == "error" for r in rs) and "in a row: closing" in rs[-1]["error"],
       "16 malformed requests in a row: each answered, then the connection is closed", (len(rs), rs[-1:]))
    c.close()

    # Several bad frames in one write, then a good one: each answered, in order.
    c = fresh()
    c.send_raw(b"".join(struct.pack(">I", len(p)) + p for p in (b"{}", b"[", b'{"code":"6*7"}')))
    rs = [c.recv() for _ in range(3)]
    ok([r["status"] for r in rs] == ["error", "error", "ok"] and rs[2]["output"] == "42\n",
       "pipelined frames are answered in order", rs)
    c.run("", rs[2]["session_id"], close=True)
    c.close()

    # Connections that end mid-frame.
    for data, desc in ((b"\x00\x00", "half a header"), (b"\x00\x00\x00\x64" + b"{" * 10, "a short body")):
        c = fresh()
        c.send_raw(data)
        c.sock.shutdown(socket.SHUT_WR)
        ok(c.closed(), "a connection that ends with %s is closed cleanly" % desc)
        c.close()
    # A client that goes away while its code runs.
    c = fresh()
    c.send_payload(b'{"code": "import time; time.sleep(0.3)"}')
    c.close()
    time.sleep(0.5)


def workloads(port, *paths):
    """The standard library as people use it runs under the python preset: each workload
    in a fresh session ends without an error."""
    for path in paths:
        code = open(path).read()
        r = run(port, code, close=True)
        ok(r["status"] == "ok" and r["output"].endswith("workload done\n"),
           "workload %s runs under the python preset" % os.path.basename(path),
           r["error"] or r["output"][-300:])


def alive(port):
    t0 = time.monotonic()
    r = run(port, "import sys\nsys.version_info[:2]", close=True)
    ok(r is not None and r["status"] == "ok" and r["output"] == "(3, 11)\n",
       "the server is alive and answering (%.0f ms)" % ((time.monotonic() - t0) * 1000), r)


def full(port, max_sessions):
    max_sessions = int(max_sessions)
    c = Conn(port, timeout=60)
    sids = []
    for i in range(max_sessions):
        r = c.run("i = %d" % i)
        if r["status"] == "ok":
            sids.append(r["session_id"])
    ok(len(sids) == max_sessions, "%d sessions start" % max_sessions, len(sids))
    r = c.run("1")
    ok(r["status"] == "error" and "too many sessions" in r["error"] and str(max_sessions) in r["error"],
       "one more is refused with a clear error", r)
    r = c.run("i", sids[0])
    ok(r["status"] == "ok" and r["output"] == "0\n", "the existing sessions still answer", r)
    c.run("", sids[0], close=True)
    r = c.run("'new'")
    ok(r["status"] == "ok" and r["output"] == "'new'\n", "after one ends, a new session starts", r)
    print(" ".join(sids[1:] + [r["session_id"]]))
    c.close()


def expired(port, sid):
    r = run(port, "x", sid)
    ok(r["status"] == "error" and "unknown session" in r["error"], "an idle session has expired", r)


def new_session(port):
    r = run(port, "print('fresh')")
    ok(r["status"] == "ok" and r["output"] == "fresh\n", "a new session runs code", r)
    print(r["session_id"])


def main():
    group, port = sys.argv[1], int(sys.argv[2])
    fn = {
        "basic": basic,
        "isolation": isolation,
        "hostile": hostile,
        "timeouts": timeouts,
        "malformed": malformed,
        "alive": alive,
        "workloads": workloads,
        "full": full,
        "expired": expired,
        "new": new_session,
    }[group]
    fn(port, *sys.argv[3:])
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
