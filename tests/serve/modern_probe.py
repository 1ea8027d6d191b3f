"""MCP 2026-07-28 against hub serve (tests/serve/test_serve_modern.sh): stateless requests
with per-request _meta over stdio (beside a legacy initialize on the same stream) and
over HTTP (the request metadata headers), as a dual-era client sends them. Prints
"KEY VALUE" lines."""
import base64
import json
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient  # noqa: E402

hub, conf, _, url = sys.argv[1:5]
V = "2026-07-28"


def meta(version=V, caps=None, **extra):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
         "io.modelcontextprotocol/clientInfo": {"name": "modern-probe", "version": "1"}}
    m.update(extra)
    return m


def out(key, value):
    print(key, json.dumps(value, sort_keys=True) if not isinstance(value, str) else value)


# ---- stdio ----
# Calls go to two apps: the data question is test_serve_hostile's.
c = StdioClient([hub, "serve", "--stdio", "--standalone", "--config", conf, "--allow-data-flows"])
r = c.request("server/discover", {"_meta": meta()})
out("discover", r["result"])
r = c.request("tools/list", {"_meta": meta()})["result"]
out("list", {k: r[k] for k in ("resultType", "ttlMs", "cacheScope")} |
    {"n": len(r["tools"]), "server": r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]})
r = c.request("tools/call", {"_meta": meta(), "name": "alpha__echo", "arguments": {"text": "hi"}})
out("call", {"resultType": r["result"].get("resultType"), "sc": r["result"].get("structuredContent")})
out("bad-version", c.request("tools/list", {"_meta": meta("1900-01-01")})["error"])
out("no-caps", c.request("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V}})["error"])
out("ping", c.request("ping", {"_meta": meta()})["error"]["code"])
# log messages only for a request that named a level
c.notes.clear()
c.request("tools/call", {"_meta": meta(), "name": "conformance__test_tool_with_logging", "arguments": {}})
out("log-without-level", sum(1 for m in c.notes if m.get("method") == "notifications/message"))
c.notes.clear()
c.request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "info"}),
                         "name": "conformance__test_tool_with_logging", "arguments": {}})
out("log-with-level", sum(1 for m in c.notes if m.get("method") == "notifications/message"))
# a question for a modern request: never a request to the client; to one that declared
# no elicitation it cannot be put at all
c.notes.clear()
relay = {"tool": "beta.echo", "arguments": {"text": "x"}}
r = c.request("tools/call", {"_meta": meta(), "name": "alpha__relay", "arguments": relay})
out("question", r["result"]["structuredContent"].get("message", ""))
# one that declared it gets the question as the answer (input_required), and retries
ec = meta(caps={"elicitation": {}})
r = c.request("tools/call", {"_meta": ec, "name": "alpha__relay", "arguments": relay})["result"]
q = r.get("inputRequests", {}).get("q", {})
out("mrtr-1", [r.get("resultType"), q.get("method"), "beta.echo" in q.get("params", {}).get("message", ""),
               len(r.get("requestState", ""))])
state = r.get("requestState")
bad = c.request("tools/call", {"_meta": ec, "name": "alpha__relay", "arguments": relay,
                               "requestState": "0" * 32, "inputResponses": {}})
out("mrtr-forged", bad.get("error", {}).get("code"))
bad = c.request("tools/call", {"_meta": ec, "name": "alpha__relay",
                               "arguments": {"tool": "gamma.echo", "arguments": {"text": "x"}},
                               "requestState": state, "inputResponses": {}})
out("mrtr-other-args", bad.get("error", {}).get("code"))
yes = {"q": {"action": "accept", "content": {"decision": "once"}}}
rounds = 1
r = c.request("tools/call", {"_meta": ec, "name": "alpha__relay", "arguments": relay,
                             "requestState": state, "inputResponses": yes})["result"]
while r.get("resultType") == "input_required" and rounds < 5:
    rounds += 1
    r = c.request("tools/call", {"_meta": ec, "name": "alpha__relay", "arguments": relay,
                                 "requestState": r["requestState"], "inputResponses": yes})["result"]
out("mrtr-done", [rounds, r.get("resultType"), r.get("structuredContent", {}).get("ok")])
r = c.request("tools/call", {"_meta": ec, "name": "alpha__relay", "arguments": relay,
                             "requestState": state, "inputResponses": yes})
out("mrtr-replay", r.get("error", {}).get("code"))
# A spoke's own questions for a modern request: the request's answer input_required too
# (never a request of the hub's), after the hub's filter (its label, visible text, no
# hub wording), and only for what the client declared in that request.
sq = meta(caps={"elicitation": {}, "sampling": {}})


def spoke_call(m, tool, args, state=None, answers=None):
    p = {"_meta": m, "name": "conformance__" + tool, "arguments": args}
    if state:
        p.update(requestState=state, inputResponses=answers)
    return c.request("tools/call", p, timeout=60)["result"]


def text(r):
    return (r.get("content") or [{}])[0].get("text")


ask = {"message": "your name?"}
r = spoke_call(sq, "test_elicitation", ask)
q = r.get("inputRequests", {}).get("q", {})
out("spoke-elicit", [r.get("resultType"), q.get("method"), q.get("params", {}).get("message"),
                     sorted(q.get("params", {}).get("requestedSchema", {}).get("properties", {}))])
r = spoke_call(sq, "test_elicitation", ask, r.get("requestState"),
               {"q": {"action": "accept", "content": {"username": "ann", "email": "a@x"}}})
out("spoke-elicit-done", [r.get("resultType"), text(r)])
r = spoke_call(sq, "test_sampling", {"prompt": "hello"})
q = r.get("inputRequests", {}).get("q", {})
qp = q.get("params", {})
out("spoke-sample", [r.get("resultType"), q.get("method"), qp.get("includeContext"),
                     "from the app conformance" in qp.get("systemPrompt", "")])
r = spoke_call(sq, "test_sampling", {"prompt": "hello"}, r.get("requestState"),
               {"q": {"role": "assistant", "content": {"type": "text", "text": "hi there"},
                      "model": "stand-in"}})
out("spoke-sample-done", [r.get("resultType"), text(r)])
r = spoke_call(ec, "test_sampling", {"prompt": "hello"})
out("spoke-sample-undeclared", [r.get("resultType"), text(r)])
r = spoke_call(sq, "test_elicitation", {"message": "[hub] allow this call?"})
out("spoke-elicit-hub-words", [r.get("resultType"), text(r)])
out("requests-sent", sum(1 for m in c.notes if "id" in m and "method" in m))
# the same stream still takes the legacy handshake
r = c.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "legacy", "version": "1"}})
out("legacy", r["result"]["protocolVersion"])
out("legacy-ping", "result" in c.request("ping", {}))
out("stdio-rc", c.close())


# ---- HTTP ----
def post(body, headers):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers)
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, resp.headers, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, json.loads(e.read() or b"null")


def modern(i, method, params, name=None, hdr=None):
    h = {"MCP-Protocol-Version": V, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    h.update(hdr or {})
    return post({"jsonrpc": "2.0", "id": i, "method": method,
                 "params": dict(params, _meta=params.get("_meta", meta()))}, h)


st, hd, b = modern(1, "server/discover", {})
out("h-discover", [st, b["result"]["supportedVersions"], b["result"]["resultType"],
                   hd.get("Mcp-Session-Id")])
call = {"name": "alpha__echo", "arguments": {"text": "over http"}}
st, hd, b = modern(2, "tools/call", call, "alpha__echo")
out("h-call", [st, b["result"]["structuredContent"], b["result"]["resultType"]])
enc = "=?base64?" + base64.b64encode(b"alpha__echo").decode() + "?="
out("h-b64", modern(3, "tools/call", call, enc)[0])
st, hd, b = modern(4, "tools/call", call, "alpha__relay")
out("h-name-mismatch", [st, b["error"]["code"], b["id"]])
out("h-no-name", [modern(5, "tools/call", call)[0], modern(5, "tools/call", call)[2]["error"]["code"]])
st, hd, b = modern(6, "tools/call", call, "alpha__echo", {"Mcp-Method": "tools/list"})
out("h-method-mismatch", [st, b["error"]["code"]])
st, hd, b = modern(7, "tools/list", {}, None, {"MCP-Protocol-Version": "2025-11-25"})
out("h-version-mismatch", [st, b and b.get("error", {}).get("code")])
st, hd, b = modern(8, "nope/nothing", {})
out("h-unknown", [st, b["error"]["code"]])
st, hd, b = post({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                  "params": {"_meta": meta("2099-01-01")}},
                 {"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"})
out("h-unsupported", [st, b["error"]["code"], b["error"]["data"]["supported"][:2]])
st, hd, b = modern(10, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V}})
out("h-no-caps", [st, b["error"]["code"]])
# a legacy session that names 2024-11-05 in its header is served
st, hd, b = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                             "clientInfo": {"name": "old", "version": "1"}}}, {})
sid = hd.get("Mcp-Session-Id")
st, hd, b = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
                 {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2024-11-05"})
out("h-2024", [st, len(b["result"]["tools"]) > 0])
# closing a modern request's stream cancels it
h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
     "MCP-Protocol-Version": V, "Mcp-Method": "tools/call", "Mcp-Name": "alpha__sleep"}
req = urllib.request.Request(url, method="POST", headers=h, data=json.dumps(
    {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
     "params": {"name": "alpha__sleep", "arguments": {"ms": 5000}, "_meta": meta()}}).encode())
try:
    urllib.request.urlopen(req, timeout=1)
except Exception:
    pass
time.sleep(1)
out("h-closed", "done")
