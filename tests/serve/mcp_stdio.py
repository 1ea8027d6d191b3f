"""A test client of `hub serve --stdio` (the probes of tests/serve/ import it): frames
out, frames in with timeouts, answers matched by id whatever comes between them, and
notifications kept until asked for."""
import json
import os
import select
import subprocess
import time


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
