#!/usr/bin/python3
"""Hostile HTTP clients for hub serve --http (test_serve_http_attacks.sh), each printing
one JSON object of what it saw:

  early PORT LENGTH [TOKEN]    the headers of a POST with a body of LENGTH bytes, and no
                               body: the status the server answers with, and when
  bodies PORT N LENGTH         N connections at once each send a LENGTH-byte body without
                               a token, as fast as the server reads: statuses seen
  slow PORT INTERVAL MAX_S     a request's head one byte every INTERVAL seconds: when the
                               server ended the connection (null: still open at MAX_S)
  idle PORT N HOLD_S PID TOKEN N connections that send nothing, held HOLD_S seconds; how
                               many the server closed, the CPU seconds PID used meanwhile;
                               then an initialize with TOKEN on a new connection, while
                               they are still open: its status and latency
"""
import json
import select
import socket
import sys
import time

INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"attack","version":"1"}}}')


def head(port, length, token=None, extra=b""):
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n" if token else b""
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n%s%sContent-Length: %d\r\n\r\n"
            % (port, auth, extra, length))


def status_of(data):
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def read_reply(s, limit_s):
    """The status of the first reply on s within limit_s, or None."""
    s.settimeout(limit_s)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, OSError):
        pass
    return status_of(data)


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in ticks of 10 ms


def early(port, length, token=None):
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.monotonic()
    s.sendall(head(port, length, token))
    st = read_reply(s, 10)
    return {"status": st, "seconds": round(time.monotonic() - t0, 3)}


def bodies(port, n, length):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(head(port, length))
        s.setblocking(False)
        socks.append({"s": s, "sent": 0, "reply": b"", "done": False})
    chunk = b" " * 65536
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(c["done"] for c in socks):
        live = [c for c in socks if not c["done"]]
        r, w, _ = select.select([c["s"] for c in live],
                                [c["s"] for c in live if c["sent"] < length], [], 1)
        for c in live:
            if c["s"] in w:
                try:
                    c["sent"] += c["s"].send(chunk[:min(len(chunk), length - c["sent"])])
                except OSError:
                    c["done"] = True
            if c["s"] in r:
                try:
                    data = c["s"].recv(65536)
                except OSError:
                    data = b""
                c["reply"] += data
                if not data or b"\r\n" in c["reply"]:
                    c["done"] = True
    statuses = {}
    for c in socks:
        st = str(status_of(c["reply"]))
        statuses[st] = statuses.get(st, 0) + 1
        c["s"].close()
    return {"statuses": statuses, "body_bytes_sent": sum(c["sent"] for c in socks)}


def slow(port, interval, max_s):
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.monotonic()
    data = head(port, 2)
    s.setblocking(False)
    for b in data:
        if time.monotonic() - t0 > max_s:
            break
        try:
            s.send(bytes([b]))
        except OSError:
            return {"closed_after": round(time.monotonic() - t0, 2)}
        r, _, _ = select.select([s], [], [], interval)
        if r:
            try:
                if not s.recv(4096):
                    return {"closed_after": round(time.monotonic() - t0, 2)}
            except OSError:
                return {"closed_after": round(time.monotonic() - t0, 2)}
    return {"closed_after": None}


def idle(port, n, hold_s, pid, token):
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    c0 = cpu_s(pid)
    time.sleep(hold_s)
    cpu = cpu_s(pid) - c0
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    t0 = time.monotonic()
    st = None
    while st is None and time.monotonic() - t0 < 10:
        try:
            v = socket.create_connection(("127.0.0.1", port), timeout=10)
            v.sendall(head(port, len(INIT), token) + INIT)
            st = read_reply(v, 10 - (time.monotonic() - t0))
            v.close()
        except OSError:
            time.sleep(0.1)
    valid_s = round(time.monotonic() - t0, 3)
    for s in socks:
        s.close()
    return {"opened": len(socks), "closed_by_server": closed, "cpu_s": round(cpu, 2),
            "valid_status": st, "valid_s": valid_s}


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "early":
        out = early(int(args[0]), int(args[1]), args[2] if len(args) > 2 else None)
    elif cmd == "bodies":
        out = bodies(int(args[0]), int(args[1]), int(args[2]))
    elif cmd == "slow":
        out = slow(int(args[0]), float(args[1]), float(args[2]))
    elif cmd == "idle":
        out = idle(int(args[0]), int(args[1]), float(args[2]), int(args[3]), args[4])
    else:
        sys.exit("unknown command " + cmd)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
