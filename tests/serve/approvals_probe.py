"""Drives hub serve --stdio for tests/serve/test_serve_approvals.sh: a client that cannot
be asked (or, with "only", one that can but whose hub sends every question to the queue)
calls alpha.relay -> beta.echo and the questions are answered with `hub approvals`, as a
person on the host would. Prints "KEY VALUE" lines for the test to check."""
import json
import re
import subprocess
import sys
import time

sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient  # noqa: E402

hub, conf, _, mode = sys.argv[1:5]
extra = sys.argv[5:]


def approvals(*args):
    r = subprocess.run([hub, "approvals", "--config", conf, *args], capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def waiting_id(c, timeout=20):
    """The id the hub tells the client about (notifications/message), or None."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for k, m in enumerate(c.notes):
            if m.get("method") == "notifications/message" and \
                    m["params"].get("logger") == "isolategpt/approvals":
                del c.notes[k]
                found = re.search(r"hub approvals allow ([0-9a-f]{8})", m["params"]["data"])
                return found.group(1) if found else None
            if m.get("method") == "elicitation/create":
                print("elicited", "yes")
                del c.notes[k]
        c._read(0.2)
    return None


def relay(c, tool, token):
    return c.call("tools/call", {"name": "alpha__relay", "_meta": {"progressToken": token},
                                 "arguments": {"tool": tool, "arguments": {"text": "hi"}}})


caps = {"elicitation": {}} if mode == "only" else {}
c = StdioClient([hub, "serve", "--stdio", "--config", conf, *extra])
c.initialize("approvals-" + mode, caps)

if mode == "queue":
    i = relay(c, "beta.echo", "p1")
    qid = waiting_id(c)
    print("told", qid or "nothing")
    end = time.monotonic() + 5
    told = False
    while not told and time.monotonic() < end:
        told = any(m.get("method") == "notifications/progress" and
                   "hub approvals allow" in m["params"].get("message", "") for m in c.notes)
        told or c._read(0.2)
    print("progress", "yes" if told else "no")
    rc, out = approvals()
    print("list", out.replace("\n", " | "))
    rc, out = approvals("allow", qid, "--for", "session")
    print("allow", rc, out.strip())
    # the relay stage is a question of its own
    qid2 = waiting_id(c)
    rc, out = approvals("allow", qid2 or "none")
    print("allow2", rc, out.strip())
    a = c.answer(i, 20)
    print("result", json.dumps(a["result"].get("structuredContent"), sort_keys=True) if a else "none")
    rc, out = approvals("allow", qid)
    print("again", rc, out.strip())

    i = relay(c, "gamma.echo", "p2")
    qid = waiting_id(c)
    rc, out = approvals("deny", qid)
    print("deny", rc, out.strip())
    a = c.answer(i, 20)
    print("denied", json.dumps(a["result"].get("structuredContent"), sort_keys=True) if a else "none")

    i = relay(c, "gamma.echo", "p3")
    qid = waiting_id(c)
    print("pending", "yes" if qid and qid in approvals()[1] else "no")
    c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": i, "reason": "the user pressed Esc"}})
    time.sleep(0.5)
    print("withdrawn", "yes" if qid not in approvals()[1] else "no")
    print("answered-after-cancel", "yes" if c.answer(i, 1) else "no")
    # another account sees none of these, and cannot answer one
    i = relay(c, "gamma.echo", "p4")
    qid = waiting_id(c)
    print("qid", qid)
    sys.stdout.flush()
    input()  # the test acts as another account here, then lets the probe go on
    a = c.answer(i, 20)
    print("expired", json.dumps(a["result"]["content"][0]["text"]) if a else "none")
elif mode == "only":
    i = relay(c, "beta.echo", "p1")
    qid = waiting_id(c)
    print("told", qid or "nothing")
    print("allow", *approvals("allow", qid or "none", "--for", "always"))
    a = c.answer(i, 20)
    print("result", json.dumps(a["result"].get("structuredContent"), sort_keys=True) if a else "none")
elif mode == "exec":
    a = c.request("tools/call", {"name": "beta__echo", "arguments": {"text": "x"}})
    print("refusal", json.dumps(a["result"]["content"][0]["text"]))
print("rc", c.close())
