"""Drives `hub serve` while its spokes directory changes under it, and prints TAP lines
(tests/serve/test_serve_reload.sh): an app added, one whose manifest changed while its
spoke ran, one removed, and files that must change nothing (a manifest that does not
load, a hidden or non-JSON file). Over stdio, and over HTTP with a GET event stream.

argv: stdio SPOKES AUDIT HUB ARGS...  |  http SPOKES AUDIT URL TOKEN"""
import http.client
import json
import os
import select
import sys
import time
import urllib.parse

from mcp_stdio import StdioClient

failures = 0
mode, spokes, audit = sys.argv[1:4]


def ok(cond, what, why=""):
    global failures
    if not cond:
        failures += 1
    print(("ok - " if cond else "not ok - ") + f"{mode}: {what}" +
          ("" if cond or not why else f": {why}"), flush=True)


def audit_records(action):
    with open(audit) as f:
        return [r for r in map(json.loads, f) if r.get("event", {}).get("action") == action]


def starts_of(app):
    return sum(1 for r in audit_records("spoke-start")
               if r.get("isolate", {}).get("app") == app)


def write_manifest(name, base="beta", change=None):
    with open(os.path.join(spokes, base + ".json")) as f:
        m = json.load(f)
    m["name"] = name
    if change:
        change(m)
    tmp = os.path.join(spokes, f".{name}.json.tmp")
    with open(tmp, "w") as f:
        json.dump(m, f, indent=1)
    os.rename(tmp, os.path.join(spokes, name + ".json"))  # as an installer would


class Stdio(StdioClient):
    def __init__(self, argv):
        super().__init__(argv, stderr=open(os.path.join(os.path.dirname(audit), "serve.err"), "ab"))

    def notified(self, timeout):
        return super().notified("notifications/tools/list_changed", timeout)


class Http:
    def __init__(self, url, token):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.path = u.hostname, u.port, u.path
        self.h = {"Authorization": "Bearer " + token, "Content-Type": "application/json",
                  "Accept": "application/json, text/event-stream"}
        self.sid = None
        self.stream = None
        self.events = b""
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        i = self.next_id
        c = http.client.HTTPConnection(self.host, self.port, timeout=20)
        h = dict(self.h)
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        c.request("POST", self.path, json.dumps(
            {"jsonrpc": "2.0", "id": i, "method": method, "params": params}), h)
        r = c.getresponse()
        self.sid = self.sid or r.getheader("Mcp-Session-Id")
        body = r.read().decode()
        c.close()
        if r.getheader("Content-Type", "").startswith("text/event-stream"):
            datas = [l[5:].strip() for l in body.splitlines() if l.startswith("data:")]
            msgs = [json.loads(d) for d in datas if d]
            return next((m for m in msgs if m.get("id") == i), None)
        return json.loads(body) if body else None

    def open_stream(self):
        c = http.client.HTTPConnection(self.host, self.port, timeout=20)
        h = dict(self.h, Accept="text/event-stream")
        h["Mcp-Session-Id"] = self.sid
        c.request("GET", self.path, headers=h)
        self.stream = c.getresponse()
        ok(self.stream.status == 200, "the GET event stream opens", str(self.stream.status))

    def notified(self, timeout):
        end = time.monotonic() + timeout
        fd = self.stream.fp.fileno()
        while b"notifications/tools/list_changed" not in self.events:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return False
            chunk = self.stream.fp.read1(65536)
            if not chunk:
                return False
            self.events += chunk
        self.events = self.events.split(b"notifications/tools/list_changed", 1)[1]
        return True

    def close(self):
        c = http.client.HTTPConnection(self.host, self.port, timeout=20)
        c.request("DELETE", self.path, headers=dict(self.h, **{"Mcp-Session-Id": self.sid}))
        c.getresponse().read()


cl = Stdio(sys.argv[4:]) if mode == "stdio" else Http(sys.argv[4], sys.argv[5])
r = cl.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "reload-probe", "version": "1"}})
ok(r and r["result"]["capabilities"]["tools"].get("listChanged") is True,
   "initialize offers tools.listChanged", str(r))
if mode == "stdio":
    cl.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
else:
    cl.open_stream()


def names():
    r = cl.request("tools/list", {})
    return {t["name"] for t in r["result"]["tools"]} if r and "result" in r else set()


def call(tool):
    return cl.request("tools/call", {"name": tool, "arguments": {"text": "hi"}})


before = names()
ok("beta__echo" in before and "epsilon__echo" not in before, "the apps at start", str(sorted(before)))
r = call("beta__echo")
ok(r and "result" in r and not r["result"].get("isError"), "beta's spoke runs", str(r))
beta_starts = starts_of("beta")

# an app added
write_manifest("epsilon")
ok(cl.notified(5), "an app added: the client is told (notifications/tools/list_changed)")
if isinstance(cl, Stdio):
    ok(StdioClient.notified(cl, "notifications/prompts/list_changed", 5) and
       StdioClient.notified(cl, "notifications/resources/list_changed", 5),
       "... and that its prompts and resources changed (prompts.listChanged, resources.listChanged)")
now = names()
ok("epsilon__echo" in now and before <= now, "... tools/list offers it, and the others still",
   str(sorted(now)))
r = call("epsilon__echo")
ok(r and "result" in r and not r["result"].get("isError"), "... and it can be called", str(r))

# a manifest changed while its spoke runs (a project key: the pin still holds)
write_manifest("beta", change=lambda m: [t.update(irreversible=True) for t in m["tools"]
                                         if t["name"] == "echo"])
ok(cl.notified(5), "a manifest changed: the client is told")
r = cl.request("tools/list", {})
echo = next((t for t in r["result"]["tools"] if t["name"] == "beta__echo"), {})
ok(echo.get("annotations", {}).get("destructiveHint") is True,
   "... tools/list shows the new manifest (echo now irreversible)", str(echo))
stops = [x for x in audit_records("spoke-kill") if x.get("isolate", {}).get("app") == "beta"]
ok(any("manifest changed" in json.dumps(x) for x in stops),
   "... its running spoke was closed, and the audit says why", json.dumps(stops)[:300])
rec = audit_records("manifests-reload")
ok(any(x.get("isolate", {}).get("apps", {}).get("changed") == ["beta"] for x in rec),
   "... the reload is on record with the app that changed", json.dumps(rec)[:300])

# an app removed
os.unlink(os.path.join(spokes, "epsilon.json"))
ok(cl.notified(5), "an app removed: the client is told")
ok("epsilon__echo" not in names(), "... tools/list no longer offers it")
r = call("epsilon__echo")
ok(r and ("error" in r or r.get("result", {}).get("isError")), "... and a call to it is refused", str(r))

# what must change nothing
with open(os.path.join(spokes, "zeta.json"), "w") as f:
    f.write("{not json")
ok(not cl.notified(1.5), "a manifest that does not load: no notification")
ok(names() == names() and "beta__echo" in names(), "... the apps stay as they were")
rec = audit_records("manifests-reload")
ok(any(x.get("event", {}).get("outcome") == "failure" and "zeta.json" in json.dumps(x) for x in rec),
   "... and the audit says which file and why", json.dumps(rec[-1:])[:300])
os.unlink(os.path.join(spokes, "zeta.json"))
with open(os.path.join(spokes, "notes.txt"), "w") as f:
    f.write("not a manifest")
ok(not cl.notified(1.5), "a file that is not a manifest, or the bad one going away: nothing to say")
r = call("beta__echo")
ok(r and "result" in r and not r["result"].get("isError"), "beta is called under its new manifest", str(r))
ok(starts_of("beta") == beta_starts + 1, "... in a spoke started afresh",
   f"{beta_starts} -> {starts_of('beta')}")
cl.close()
sys.exit(1 if failures else 0)
