"""A test client of `hub serve --stdio` (the probes of tests/serve/ import it): frames
out, frames in with timeouts, answers matched by id whatever comes between them, and
notifications kept until asked for. Also what the probes read the hub's audit log with."""
import json
import os
import select
import subprocess
import time


def field(r, path):
    """A dotted field of an audit record ("event.action"), None when absent."""
    for k in path.split("."):
        if not isinstance(r, dict) or k not in r:
            return None
        r = r[k]
    return r


def reading_stdin(pid):
    """True when pid's main thread is blocked in read(0, ...) (/proc/PID/syscall): a held
    node's loader waiting for its go, whatever node's boot takes on this machine."""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            fields = f.read().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == "0" and fields[1] == "0x0"


def wait_until(cond, limit=30, step=0.05):
    """Polls cond until true or limit seconds (a generous bound: the machine may be
    busy); whether it came true."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


class StdioClient:
    def __init__(self, argv, stderr=subprocess.DEVNULL, pass_fds=()):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=stderr, pass_fds=pass_fds)
        self.buf = b""
        self.next_id = 0
        self.answers = {}  # id -> (arrival time, message)
        self.notes = []    # notifications and server requests not asked for yet

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()

    def call(self, method, params):
        """Sends a request; its id."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def _read(self, timeout):
        """One more message into answers or notes; False after timeout or at the end."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return False
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return False
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        m = json.loads(line)
        if "id" in m and "method" not in m:
            self.answers[m["id"]] = (time.monotonic(), m)
        else:
            self.notes.append(m)
        return True

    def answer(self, i, timeout=20):
        """The answer to request i (None after timeout); self.answers[i][0] is when it came."""
        end = time.monotonic() + timeout
        while i not in self.answers:
            if not self._read(max(end - time.monotonic(), 0)):
                return None
        return self.answers[i][1]

    def request(self, method, params, timeout=20):
        return self.answer(self.call(method, params), timeout)

    def initialize(self, name, capabilities=None):
        r = self.request("initialize", {"protocolVersion": "2025-11-25",
                                        "capabilities": capabilities or {},
                                        "clientInfo": {"name": name, "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def notified(self, method, timeout):
        """True when a notification of method comes (or came) within timeout; consumes it."""
        end = time.monotonic() + timeout
        while True:
            for k, m in enumerate(self.notes):
                if m.get("method") == method:
                    del self.notes[k]
                    return True
            if not self._read(max(end - time.monotonic(), 0)):
                return False

    def close(self, timeout=20):
        self.p.stdin.close()
        return self.p.wait(timeout=timeout)
