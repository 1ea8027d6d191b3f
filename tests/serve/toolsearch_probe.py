"""Tool search from a client's side (test_serve_toolsearch.sh): hub serve --stdio with
serve.tools "search" offers find_tools, call_tool and list_apps; call_tool goes
through the hub's mediation as a direct call does (a permission question for an
irreversible tool, the data question between apps), and hostile arguments are refused
with an answer, never a crash.

    toolsearch_probe.py HUB ARGS..."""
import json
import sys

from mcp_stdio import StdioClient

c = StdioClient(sys.argv[1:])


def ok(cond, what, why=""):
    print(("ok - " if cond else "not ok - ") + what + ("" if cond else ": " + str(why)[:600]))


def call(name, args, timeout=30):
    return c.request("tools/call", {"name": name, "arguments": args}, timeout)


def text(r):
    try:
        return r["result"]["content"][0]["text"]
    except (KeyError, IndexError, TypeError):
        return json.dumps(r)


c.initialize("toolsearch-probe")
r = c.request("tools/list", {})
names = [t["name"] for t in r["result"]["tools"]]
ok(names == ["find_tools", "call_tool", "list_apps"],
   "tools/list offers find_tools, call_tool and list_apps only", names)

r = call("list_apps", {})
apps = {a["name"]: a["tools"] for a in json.loads(text(r))["apps"]}
ok(apps.get("alpha") == 12 and "delta" in apps, "list_apps names each app and its tool count", apps)

r = call("find_tools", {"query": "echo the message back"})
found = json.loads(text(r))["tools"]
ok(found and found[0]["name"].endswith("__echo") and "inputSchema" in found[0],
   "find_tools ranks the echo tools first, each with its input schema", [t["name"] for t in found])
r = call("find_tools", {"query": "echo write read log sleep whoami"})
ok(len(json.loads(text(r))["tools"]) == 5, "... five by default", text(r)[:300])
r = call("find_tools", {"query": "echo", "limit": 2})
ok(len(json.loads(text(r))["tools"]) == 2, "... limit 2 gives two")

r = call("call_tool", {"name": "beta__echo", "arguments": {"text": "through call_tool"}})
ok("through call_tool" in text(r) and not r["result"].get("isError"),
   "call_tool beta__echo answers as the tool itself", r)

# The data question: this session holds beta's output now; alpha may not see it unasked
# (no client to ask, no approval: the default answer is no).
r = call("call_tool", {"name": "alpha__echo", "arguments": {"text": "x"}})
ok(r["result"].get("isError") and "permission" in text(r),
   "call_tool alpha__echo after beta's output: the data question, refused as a direct call is",
   r)
r = call("alpha__echo", {"text": "x"})
ok(r["result"].get("isError") and "permission" in text(r),
   "... (the same call made directly is refused the same way)", r)

for bad, what in [({"name": "call_tool", "arguments": {}}, "call_tool of call_tool"),
                  ({"name": 7}, "a name that is no string"),
                  ({"name": "beta__echo", "arguments": "x"}, "arguments that are no object")]:
    r = call("call_tool", bad)
    ok(r.get("error", {}).get("code") == -32602, "call_tool refuses %s (invalid params)" % what, r)
r = call("call_tool", {"name": "nosuch__tool", "arguments": {}})
ok(r.get("error", {}).get("code") == -32602 and "unknown tool" in r["error"]["message"],
   "call_tool of a tool no app has: unknown tool", r)
r = call("find_tools", {"query": "x" * 5000})
ok(r["result"].get("isError") and "1 to 1024 bytes" in text(r),
   "find_tools refuses a query of 5000 bytes with an answer", r)
r = call("find_tools", {"query": "echo", "limit": 10 ** 9})
ok(r["result"].get("isError"), "... and a limit of a billion", r)
r = call("find_tools", {"query": ["echo"]})
ok(r["result"].get("isError"), "... and a query that is no string", r)
r = call("find_tools", {"query": "\u202e\x01 " * 300 + "zzzz"})
ok("result" in r and json.loads(text(r))["tools"] == [],
   "... a query of control and bidi characters finds nothing, and the hub still answers", r)
r = call("find_tools", {"query": "echo"})
ok(r and "result" in r, "the session still serves after all that")
c.close()
