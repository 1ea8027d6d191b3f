"""The gateway shape's resources, prompts and completion (`hub serve --stdio` without
--app), from a client's side: every app's under the gateway's names, routed back to
the app they belong to, and names that point nowhere refused. Prints TAP lines
(tests/serve/test_serve_gateway.sh). argv: the hub command."""
import json
import sys

from mcp_stdio import StdioClient

failures = 0
GW = "isolategpt:conformance:"


def ok(cond, what, why=""):
    global failures
    failures += 0 if cond else 1
    print(("ok - " if cond else "not ok - ") + "gateway: " + what +
          ("" if cond or not why else f": {why}"), flush=True)


cl = StdioClient(sys.argv[1:], stderr=None)
req = cl.request
r = cl.initialize("gateway-probe")
caps = r["result"]["capabilities"]
ok("resources" in caps and "prompts" in caps, "initialize offers resources and prompts", str(caps))

r = req("resources/list", {})
res = r.get("result", {}).get("resources", [])
uris = [x["uri"] for x in res]
ok(GW + "test://static-text" in uris, "resources/list: every app's, as isolategpt:APP:URI",
   str(uris))
ok(all(x.get("_meta", {}).get("isolategpt/app") == "conformance" for x in res),
   "... each saying its app (and the apps without resources add nothing)", json.dumps(res)[:300])
r = req("resources/templates/list", {})
tpl = [x["uriTemplate"] for x in r.get("result", {}).get("resourceTemplates", [])]
ok(len(tpl) == 1 and tpl[0].startswith(GW) and tpl[0].endswith("{id}/data"),
   "resources/templates/list: the template under the gateway's scheme", str(tpl))

r = req("resources/read", {"uri": GW + "test://static-text"})
c = (r.get("result", {}).get("contents") or [{}])[0]
ok(c.get("text") == "This is the content of the static text resource.",
   "resources/read reaches the app with its own URI", json.dumps(r)[:300])
ok(c.get("uri") == GW + "test://static-text", "... and answers in the gateway's URI", str(c))
expanded = tpl[0].replace("{id}", "42") if tpl else ""
r = req("resources/read", {"uri": expanded})
ok("result" in r and "42" in json.dumps(r["result"]), "a read of the template's expansion",
   json.dumps(r)[:300])

r = req("prompts/list", {})
names = [x["name"] for x in r.get("result", {}).get("prompts", [])]
ok("conformance__test_simple_prompt" in names, "prompts/list: APP__NAME", str(names))
r = req("prompts/get", {"name": "conformance__test_prompt_with_embedded_resource",
                        "arguments": {"resourceUri": "test://example"}})
msgs = r.get("result", {}).get("messages", [])
emb = [m["content"]["resource"]["uri"] for m in msgs if m.get("content", {}).get("type") == "resource"]
ok(emb == [GW + "test://example"], "prompts/get reaches the app; an embedded resource's URI "
   "comes back in the gateway's names", json.dumps(r)[:300])
r = req("completion/complete", {"ref": {"type": "ref/prompt",
                                        "name": "conformance__test_prompt_with_arguments"},
                                "argument": {"name": "arg1", "value": "pa"}})
ok(r.get("result", {}).get("completion", {}).get("values") == ["paris", "park", "party"],
   "completion/complete for APP__PROMPT reaches the app", json.dumps(r)[:300])

for what, method, params in [
        ("an app's own URI, without the gateway's scheme", "resources/read",
         {"uri": "test://static-text"}),
        ("a URI of no installed app", "resources/read", {"uri": "isolategpt:nosuch:test://x"}),
        ("a prompt of no installed app", "prompts/get", {"name": "nosuch__x"}),
        ("a completion for no installed app", "completion/complete",
         {"ref": {"type": "ref/resource", "uri": "isolategpt:nosuch:x"},
          "argument": {"name": "a", "value": "b"}})]:
    r = req(method, params)
    ok(r.get("error", {}).get("code") == -32602 and "names no installed app" in
       r["error"].get("message", ""), f"{what} is refused, saying why", json.dumps(r)[:300])
ok(cl.close() == 0, "hub serve ends cleanly")
sys.exit(1 if failures else 0)
