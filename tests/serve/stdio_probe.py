"""Drives `hub serve --stdio` frame by frame, as a hostile or sloppy client would, and
prints TAP lines (tests/serve/test_serve_stdio.sh). argv: the hub command."""
import json
import subprocess
import sys

failures = 0


def ok(cond, what, why=""):
    global failures
    if cond:
        print("ok - stdio: " + what)
    else:
        failures += 1
        print("not ok - stdio: %s%s" % (what, ": " + why if why else ""))


p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)


def send(obj):
    line = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
    if isinstance(line, str):
        line = line.encode()
    p.stdin.write(line + b"\n")
    p.stdin.flush()


def recv():
    line = p.stdout.readline()
    return json.loads(line) if line else None


def req(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    send(m)
    return recv()


r = req(1, "tools/list")
ok(r and r.get("error", {}).get("code") == -32600, "a request before initialize is refused", str(r))
send("{not json")
r = recv()
ok(r and r.get("error", {}).get("code") == -32700 and r.get("id") is None,
   "a frame that is not JSON: parse error with id null", str(r))
send("[" + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}) + "]")
r = recv()
ok(r and r.get("error", {}).get("code") == -32600, "a batch is refused", str(r))
r = req(3, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                          "clientInfo": {"name": "probe", "version": "0"}})
ok(r and r["result"]["protocolVersion"] == "2025-11-25",
   "an unknown protocol version: the server offers its newest", str(r))
r = req(4, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
ok(r and r.get("error", {}).get("code") == -32600, "a second initialize is refused", str(r))
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
r = req(5, "nope/nothing")
ok(r and r.get("error", {}).get("code") == -32601, "an unknown method: -32601", str(r))
r = req(6, "tools/call", {"name": "alpha__nothing"})
ok(r and r.get("error", {}).get("code") == -32602, "an unknown tool: -32602", str(r))
r = req(7, "tools/call", {"name": "alpha__echo", "arguments": [1]})
ok(r and r.get("error", {}).get("code") == -32602, "arguments not an object: -32602", str(r))
r = req(8, "tools/call", {"name": "nothing__echo"})
ok(r and r.get("error", {}).get("code") == -32602, "an app that is not installed: -32602", str(r))
send({"jsonrpc": "2.0", "id": 99, "result": {"action": "accept"}})
send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}})
r = req(9, "ping")
ok(r == {"jsonrpc": "2.0", "id": 9, "result": {}},
   "an answer to nothing and a cancellation of nothing are ignored", str(r))
r = req(10, "logging/setLevel", {"level": "loud"})
ok(r and r.get("error", {}).get("code") == -32602, "a log level that is not one: -32602", str(r))
r = req("s-11", "tools/call", {"name": "alpha__echo", "arguments": {"text": "still here"}})
ok(r and r["id"] == "s-11" and r["result"]["structuredContent"]["text"] == "still here",
   "a string id, and the session serves on after all that", str(r))
# A frame longer than the limit (4 MiB) cannot be resynchronised: the session ends.
try:
    p.stdin.write(b"{" + b" " * (5 * 1024 * 1024))
    p.stdin.flush()
except BrokenPipeError:
    pass
r = p.stdout.readline()
msg = json.loads(r) if r else {}
ok(msg.get("error", {}).get("code") == -32600, "an oversized frame is answered", r[:200])
try:
    p.stdin.close()
except BrokenPipeError:
    pass
ok(p.wait(timeout=20) == 0, "... and the hub ends cleanly")
sys.exit(1 if failures else 0)
