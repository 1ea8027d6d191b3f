"""subscriptions/listen (MCP 2026-07-28) against hub serve (tests/serve/test_serve_listen.sh):
over stdio, two subscriptions on one stream, each acknowledged with what the hub honours
and told only what it asked for, under its own id; a cancelled one hears nothing more;
the hub's end answers the open one. Over HTTP, the request's own event stream, and its
closing ends the subscription in the hub. Prints "KEY VALUE" lines.

argv: HUB CONF SERVE_DIR SPOKES URL METRICS_URL"""
import json
import os
import select
import signal
import socket
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient  # noqa: E402

hub, conf, _, spokes, url, metrics = sys.argv[1:7]
V = "2026-07-28"
SUB = "io.modelcontextprotocol/subscriptionId"
META = {"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listen-probe", "version": "1"}}


def out(key, value):
    print(key, json.dumps(value, sort_keys=True), flush=True)


def app(name, present=True):
    """Adds (a copy of beta under another name) or removes an app, as an installer would."""
    path = os.path.join(spokes, name + ".json")
    if not present:
        os.unlink(path)
        return
    with open(os.path.join(spokes, "beta.json")) as f:
        m = json.load(f)
    m["name"] = name
    with open(os.path.join(spokes, f".{name}.json.tmp"), "w") as f:
        json.dump(m, f)
    os.rename(os.path.join(spokes, f".{name}.json.tmp"), path)


def listen(c, i, notifications):
    c.send({"jsonrpc": "2.0", "id": i, "method": "subscriptions/listen",
            "params": {"_meta": META, "notifications": notifications}})


def collect(c, until, timeout=10):
    """Messages until one satisfies until (or timeout); all of them."""
    got, end = [], time.monotonic() + timeout
    while True:
        while c.notes:
            got.append(c.notes.pop(0))
        got += [m for _, m in c.answers.values()]
        c.answers.clear()
        if any(until(m) for m in got) or not c._read(max(end - time.monotonic(), 0)):
            return got


def summary(msgs):
    """(method or 'answer', subscription id) of each, in order."""
    return [[m.get("method", "answer"), (m.get("params") or m.get("result") or {}).get("_meta", {}).get(SUB)]
            for m in msgs]


# ---- stdio: a modern client, no initialize ----
c = StdioClient([hub, "serve", "--stdio", "--standalone", "--config", conf])
listen(c, "L1", {"toolsListChanged": True, "resourcesListChanged": True,
                 "promptsListChanged": False, "resourceSubscriptions": ["file:///x"]})
acks = collect(c, lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
ack = next((m for m in acks if m.get("method") == "notifications/subscriptions/acknowledged"), {})
out("ack", ack.get("params"))
listen(c, 2, {"promptsListChanged": True})
collect(c, lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
out("bad-filter", c.request("subscriptions/listen", {"_meta": META, "notifications": "all"})["error"]["code"])
out("bad-flag", c.request("subscriptions/listen",
                          {"_meta": META, "notifications": {"toolsListChanged": "yes"}})["error"]["code"])
listen(c, "L1", {"toolsListChanged": True})
dup = collect(c, lambda m: m.get("id") == "L1")
out("duplicate", [m["error"]["code"] for m in dup if m.get("id") == "L1" and "error" in m])

app("epsilon")
want = {("notifications/tools/list_changed", "L1"), ("notifications/resources/list_changed", "L1"),
        ("notifications/prompts/list_changed", 2)}
seen = []
end = time.monotonic() + 10
while not want <= {tuple(s) for s in seen} and time.monotonic() < end:
    seen += summary(collect(c, lambda m: True, max(end - time.monotonic(), 0)))
collect(c, lambda m: False, 1)  # and anything else that would come
seen += summary(collect(c, lambda m: False, 0))
out("added", sorted(seen, key=json.dumps))

c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L1"}})
app("epsilon", present=False)
seen = summary(collect(c, lambda m: m.get("method") == "notifications/prompts/list_changed"))
seen += summary(collect(c, lambda m: False, 1))
out("after-cancel", seen)

c.p.send_signal(signal.SIGTERM)
end_msgs = collect(c, lambda m: m.get("id") == 2)
out("hub-end", [[m.get("id"), m.get("result", {}).get("resultType"),
                 m.get("result", {}).get("_meta", {}).get(SUB)] for m in end_msgs if "id" in m])
out("stdio-rc", c.p.wait(timeout=20))


# ---- HTTP: the listen request's own event stream ----
def open_sessions():
    with urllib.request.urlopen(metrics, timeout=20) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("isolate_serve_sessions_open "):
                return int(line.split()[1])


u = urllib.parse.urlparse(url)
body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                   "params": {"_meta": META, "notifications": {"toolsListChanged": True}}})
sock = socket.create_connection((u.hostname, u.port), timeout=20)
sock.sendall((f"POST {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
              "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
              f"MCP-Protocol-Version: {V}\r\nMcp-Method: subscriptions/listen\r\n"
              f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
buf = b""


def events(until, timeout=10):
    """The stream's messages (its raw bytes: each event is one chunk of its own, its data
    line whole) until one satisfies until."""
    global buf
    end = time.monotonic() + timeout
    while True:
        msgs = [json.loads(line[5:]) for line in buf.decode().splitlines() if line.startswith("data:")]
        if any(until(m) for m in msgs):
            buf = b""
            return msgs
        left = end - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            return msgs
        chunk = sock.recv(65536)
        if not chunk:
            return msgs
        buf += chunk


end = time.monotonic() + 20
while b"\r\n\r\n" not in buf and time.monotonic() < end and select.select([sock], [], [], 1)[0]:
    buf += sock.recv(65536) or b"\r\n\r\n"
status = buf.split(b"\r\n", 1)[0].decode()
ctype = next((line.split(":", 1)[1].strip() for line in buf.decode(errors="replace").split("\r\n")
              if line.lower().startswith("content-type:")), None)
out("h-status", [status, ctype])
out("h-ack", summary(events(lambda m: "subscriptions/acknowledged" in m.get("method", ""))))
out("h-open", open_sessions())
app("eta")
out("h-added", summary(events(lambda m: m.get("method") == "notifications/tools/list_changed")))
sock.close()
end = time.monotonic() + 10
while open_sessions() and time.monotonic() < end:
    time.sleep(0.05)
out("h-closed", open_sessions())
app("eta", present=False)
