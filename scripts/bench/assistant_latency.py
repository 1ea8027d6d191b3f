#!/usr/bin/env python3
"""The assistant's own overhead per request, with an instant model.

Drives `hub` from a pipe (one request per line, plain output) and is itself the
OpenAI-compatible server, so that both ends are timed on one clock:
  enter_to_request  the request line written -> the planner's HTTP request received
  enter_to_token    the request line written -> the first byte of the answer on stdout
The server answers each request at once with a plain-text answer (a direct answer: no
app runs), so what is left is the hub's own work: history read and write in Redis,
the audit records, building the planner request, parsing, printing. Requests are
THINK_MS (default 50) apart, as a user's are: the hub's work after an answer (storing
it) is not counted against the next request.

Usage: assistant_latency.py HUB CONFIG N [HUB ARGS...]; prints one JSON object.
"""
import json
import os
import select
import socket
import subprocess
import sys
import time


def percentile(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)


class Server:
    """A one-connection-at-a-time HTTP server that answers every request instantly."""

    def __init__(self):
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.conn = None
        self.buf = b""

    def fileno_set(self):
        return [self.conn if self.conn else self.ls]

    def read_request(self, deadline):
        """Blocks until one whole request arrived; returns its arrival time (ns)."""
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end >= 0:
                head = self.buf[:head_end].decode("latin-1").lower()
                n = 0
                for line in head.split("\r\n"):
                    if line.startswith("content-length:"):
                        n = int(line.split(":", 1)[1])
                if len(self.buf) >= head_end + 4 + n:
                    self.buf = self.buf[head_end + 4 + n:]
                    return self.t_last
            if self.conn is None:
                r, _, _ = select.select([self.ls], [], [], max(0, deadline - time.time()))
                if not r:
                    raise TimeoutError("no connection from the hub")
                self.conn, _ = self.ls.accept()
                self.conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                continue
            r, _, _ = select.select([self.conn], [], [], max(0, deadline - time.time()))
            if not r:
                raise TimeoutError("no request from the hub")
            data = self.conn.recv(65536)
            self.t_last = time.monotonic_ns()
            if not data:
                self.conn.close()
                self.conn = None
                self.buf = b""
                continue
            self.buf += data

    def answer(self, text):
        body = json.dumps({
            "id": "c", "object": "chat.completion", "model": "bench-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body)


def main():
    hub, config, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    srv = Server()
    cmd = [hub, "--config", config, "--llm", "http://127.0.0.1:%d/v1" % srv.port,
           "--answers", "allow"] + sys.argv[4:]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0)
    out = p.stdout.fileno()
    to_req, to_tok = [], []
    pending = b""
    think = float(os.environ.get("THINK_MS", "50")) / 1000.0
    for i in range(n + 5):
        time.sleep(think)
        t0 = time.monotonic_ns()
        p.stdin.write(b"request number %d\n" % i)
        t_req = srv.read_request(time.time() + 30)
        srv.answer("answer %d" % i)
        want = b"answer %d" % i
        t_tok = None
        while True:
            r, _, _ = select.select([out], [], [], 30)
            if not r:
                raise TimeoutError("no answer on stdout")
            chunk = os.read(out, 65536)
            if t_tok is None:
                t_tok = time.monotonic_ns()
            if not chunk:
                raise RuntimeError("the hub ended: %s" % p.stderr.read().decode(errors="replace"))
            pending += chunk
            if want + b"\n" in pending:
                pending = pending.split(want + b"\n", 1)[1]
                break
        if i >= 5:  # the first few warm the connection, Redis and the caches
            to_req.append((t_req - t0) / 1e6)
            to_tok.append((t_tok - t0) / 1e6)
    p.stdin.close()
    p.wait(timeout=30)

    def stats(v):
        return {"p50_ms": round(percentile(v, 50), 2), "p99_ms": round(percentile(v, 99), 2),
                "max_ms": round(max(v), 2)}
    print(json.dumps({"n": n, "enter_to_request": stats(to_req),
                      "enter_to_token": stats(to_tok)}))


if __name__ == "__main__":
    main()
