"""A client that samples no model itself drives `hub serve --stdio --llm URL`
(tests/serve/test_serve_sampling.sh): a spoke's sampling request is answered by the
hub's LLM, the other work of the session goes on while the LLM thinks, and the second
request within the rate limit is refused. Prints TAP lines. argv: the hub command."""
import json
import os
import select
import subprocess
import sys
import time

failures = 0


def ok(cond, what, why=""):
    global failures
    failures += 0 if cond else 1
    print(("ok - " if cond else "not ok - ") + what + ("" if cond or not why else f": {why}"),
          flush=True)


p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
buf = b""
seen = {}


def send(obj):
    p.stdin.write((json.dumps(obj) + "\n").encode())
    p.stdin.flush()


def wait_for(i, timeout=30):
    """The answer to id i (others that come first are kept); None on timeout."""
    global buf
    end = time.monotonic() + timeout
    while i not in seen:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            m = json.loads(line)
            if "id" in m:
                seen[m["id"]] = (time.monotonic(), m)
        if i in seen:
            break
        left = end - time.monotonic()
        if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
            return None, None
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            return None, None
        buf += chunk
    return seen[i]


send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                 "clientInfo": {"name": "no-sampling", "version": "1"}}})
wait_for(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
t0 = time.monotonic()
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
      "params": {"name": "beta__sample", "arguments": {}}})
time.sleep(0.3)  # the sampling request is with the LLM (it answers after 1.5 s)
t1 = time.monotonic()
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
      "params": {"name": "alpha__echo", "arguments": {"text": "meanwhile"}}})
when3, r3 = wait_for(3)
when2, r2 = wait_for(2)
ok(r3 is not None and when3 - t1 < 1.0,
   "another call of the session is answered while the hub's LLM thinks",
   f"{(when3 or 0) - t1:.2f} s")
ok(r2 is not None and when3 is not None and when3 < when2, "... before the sampled answer")
sc = (r2 or {}).get("result", {}).get("structuredContent", {})
ok(sc.get("ok") is True and sc.get("answer", {}).get("content", {}).get("text") ==
   "Hello from the hub's LLM.", "the spoke got the hub's LLM's answer", json.dumps(r2)[:300])
ok(sc.get("answer", {}).get("model") == "standin-model", "... with the model that made it")
ok(when2 - t0 >= 1.4, "... after the LLM's delay", f"{when2 - t0:.2f} s")
send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
      "params": {"name": "beta__sample", "arguments": {}}})
_, r4 = wait_for(4)
sc = (r4 or {}).get("result", {}).get("structuredContent", {})
ok(sc.get("ok") is False and "sampling rate limit" in sc.get("message", ""),
   "a second request within the rate limit is refused, saying why", json.dumps(r4)[:300])
p.stdin.close()
ok(p.wait(timeout=20) == 0, "hub serve ends cleanly")
sys.exit(1 if failures else 0)
