"""Drives `hub serve --stdio` for tests/serve/test_serve_prestart.sh and reads the hub's
audit log as it goes: spokes started when a session opens (prestart), and stopped after
idle_s without a call. Usage: prestart_probe.py SCENARIO AUDIT HUB-ARGV... ; prints one
JSON line of what it saw (the shell test judges it). PROBE_APPS: the apps the session
scenario waits for."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_stdio import StdioClient, field as g, wait_until as wait  # noqa: E402

scenario, audit = sys.argv[1], sys.argv[2]
argv = sys.argv[3:]


def records():
    try:
        with open(audit) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def find(action, app=None, reason=None, outcome=None):
    return [i for i, r in enumerate(records())
            if g(r, "event.action") == action and (app is None or g(r, "isolate.app") == app)
            and (reason is None or g(r, "event.reason") == reason)
            and (outcome is None or g(r, "event.outcome") == outcome)]


def echo(c, app):
    r = c.request("tools/call", {"name": app + "__echo", "arguments": {"text": "hi"}})
    return bool(r and "result" in r and not r["result"].get("isError"))


out = {}
c = StdioClient(argv)
out["initialized"] = c.initialize("prestart-probe") is not None
if scenario == "none":
    # Nothing starts with the session: the first call starts its spoke.
    out["echo"] = echo(c, "alpha")
    starts, calls = find("spoke-start", "alpha", outcome="success"), find("tool-call-start", "alpha")
    out["started_by_call"] = bool(starts and calls and calls[0] < starts[0])
    out["others_started"] = len(find("spoke-start", outcome="success")) - len(starts)
elif scenario == "session":
    # Every app the session is offered starts before any call.
    apps = os.environ["PROBE_APPS"].split(",")
    out["all_started"] = wait(lambda: all(find("spoke-start", a, outcome="success") for a in apps))
    out["echo"] = echo(c, "alpha")
    starts, calls = find("spoke-start", "alpha", outcome="success"), find("tool-call-start", "alpha")
    out["alpha_starts"] = len(starts)
    out["started_before_call"] = bool(starts and calls and starts[0] < calls[0])
elif scenario == "manifest":
    # beta's manifest says session; alpha is left to hub.json (none).
    out["beta_started"] = wait(lambda: find("spoke-start", "beta", outcome="success"))
    out["echo"] = echo(c, "alpha")
    starts, calls = find("spoke-start", "alpha", outcome="success"), find("tool-call-start", "alpha")
    out["alpha_started_by_call"] = bool(starts and calls and calls[0] < starts[0])
elif scenario == "idle":
    # gamma's manifest: idle_s 1; alpha is left to --spoke-idle (0: never).
    out["echo"] = echo(c, "alpha") and echo(c, "gamma")
    out["gamma_stopped"] = wait(lambda: find("spoke-kill", "gamma", reason="idle"))
    time.sleep(2)  # alpha, were it stopped too, would have been by now
    out["alpha_stopped"] = bool(find("spoke-kill", "alpha", reason="idle"))
    out["echo_again"] = echo(c, "gamma")
    out["gamma_starts"] = len(find("spoke-start", "gamma", outcome="success"))
out["exit"] = c.close()
print(json.dumps(out))
