"""Drives hub serve --stdio for tests/serve/test_serve_secret_ask.sh: a client that can be
asked calls alpha.env, whose result carries a secret's value under secret_scan "ask",
three times, answering once, then "session" (which is not offered), then declining.
Prints "KEY VALUE" lines for the test to check."""
import json
import sys
import time

sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient  # noqa: E402

hub, conf, _, value = sys.argv[1:5]
c = StdioClient([hub, "serve", "--stdio", "--config", conf])
c.initialize("secret-ask", {"elicitation": {}})


def question(timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for k, m in enumerate(c.notes):
            if m.get("method") == "elicitation/create":
                del c.notes[k]
                return m
        c._read(0.2)
    return None


def round_(n, reply):
    i = c.call("tools/call", {"name": "alpha__env", "arguments": {"marker": "API_TOKEN"}})
    q = question()
    print("asked%d" % n, "yes" if q else "no")
    if q:
        p = q["params"]
        print("text%d" % n, p["message"].replace("\n", " "))
        print("value_in_question%d" % n, "yes" if value in json.dumps(q) else "no")
        print("choices%d" % n,
              ",".join(p["requestedSchema"]["properties"]["decision"]["enum"]))
        c.send({"jsonrpc": "2.0", "id": q["id"], "result": reply})
    a = c.answer(i, 30)
    text = json.dumps(a) if a else "none"
    print("value_in_result%d" % n, "yes" if value in text else "no")
    print("denied%d" % n, "yes" if "was denied" in text else "no")


round_(1, {"action": "accept", "content": {"decision": "once"}})
round_(2, {"action": "accept", "content": {"decision": "session"}})
round_(3, {"action": "decline"})
print("rc", c.close())
