"""A client that samples no model itself drives `hub serve --stdio --llm URL`
(tests/serve/test_serve_sampling.sh): a spoke's sampling request is answered by the
hub's LLM, the other work of the session goes on while the LLM thinks, and the second
request within the rate limit is refused. Prints TAP lines. argv: the hub command."""
import json
import sys
import time

from mcp_stdio import StdioClient

failures = 0


def ok(cond, what, why=""):
    global failures
    failures += 0 if cond else 1
    print(("ok - " if cond else "not ok - ") + what + ("" if cond or not why else f": {why}"),
          flush=True)


cl = StdioClient(sys.argv[1:], stderr=None)
cl.initialize("no-sampling")  # no sampling capability
t0 = time.monotonic()
i2 = cl.call("tools/call", {"name": "beta__sample", "arguments": {}})
time.sleep(0.3)  # the sampling request is with the LLM (it answers after 1.5 s)
t1 = time.monotonic()
i3 = cl.call("tools/call", {"name": "alpha__echo", "arguments": {"text": "meanwhile"}})
r3 = cl.answer(i3)
r2 = cl.answer(i2)
when3 = cl.answers[i3][0] if r3 else None
when2 = cl.answers[i2][0] if r2 else None
ok(r3 is not None and when3 - t1 < 1.0,
   "another call of the session is answered while the hub's LLM thinks",
   f"{(when3 or 0) - t1:.2f} s")
ok(r2 is not None and when3 is not None and when3 < when2, "... before the sampled answer")
sc = (r2 or {}).get("result", {}).get("structuredContent", {})
ok(sc.get("ok") is True and sc.get("answer", {}).get("content", {}).get("text") ==
   "Hello from the hub's LLM.", "the spoke got the hub's LLM's answer", json.dumps(r2)[:300])
ok(sc.get("answer", {}).get("model") == "standin-model", "... with the model that made it")
ok(when2 is not None and when2 - t0 >= 1.4, "... after the LLM's delay",
   f"{(when2 or t0) - t0:.2f} s")
r4 = cl.request("tools/call", {"name": "beta__sample", "arguments": {}})
sc = (r4 or {}).get("result", {}).get("structuredContent", {})
ok(sc.get("ok") is False and "sampling rate limit" in sc.get("message", ""),
   "a second request within the rate limit is refused, saying why", json.dumps(r4)[:300])
ok(cl.close() == 0, "hub serve ends cleanly")
sys.exit(1 if failures else 0)
