#!/usr/bin/env python3
"""Speaks MCP (stdio) to one server the way the hub does, and calls every tool that
tests/mcpservers/calls.json lists for it: a stand-in client for scripts/trace-node-seccomp
(which must see what the server does, without the hub in the trace) and for the bench.

    drive.py CALLS.json SERVER -- COMMAND [ARG...]

Answers what the server asks (sampling: a canned message; elicitation: decline; roots:
none), ignores notifications, prints one line per call (ok / isError / error) and exits
1 when a call got no answer within 30 s."""
import json
import subprocess
import sys
import threading

calls_file, server = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
calls = json.load(open(calls_file))[server]
proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
answers = {}
cond = threading.Condition()


def send(msg):
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def reader():
    for line in proc.stdout:
        msg = json.loads(line)
        if "method" in msg and "id" in msg:
            m = msg["method"]
            if m == "sampling/createMessage":
                res = {"role": "assistant", "model": "stub",
                       "content": {"type": "text", "text": "hi"}}
            elif m == "elicitation/create":
                res = {"action": "decline"}
            elif m == "roots/list":
                res = {"roots": []}
            else:
                res = {}
            send({"jsonrpc": "2.0", "id": msg["id"], "result": res})
        elif "id" in msg:
            with cond:
                answers[msg["id"]] = msg
                cond.notify_all()
    with cond:
        answers["eof"] = True
        cond.notify_all()


threading.Thread(target=reader, daemon=True).start()


def request(i, method, params):
    send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
    with cond:
        if not cond.wait_for(lambda: i in answers or "eof" in answers, timeout=30):
            print("no answer to %s" % method)
            sys.exit(1)
        return answers.get(i)


request(1, "initialize", {"protocolVersion": "2025-11-25",
                          "capabilities": {"sampling": {}, "elicitation": {}},
                          "clientInfo": {"name": "drive", "version": "1"}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
request(2, "tools/list", {})
for n, (tool, args) in enumerate(calls):
    a = request(3 + n, "tools/call", {"name": tool, "arguments": args})
    if a is None:
        print("%s: the server ended" % tool)
        sys.exit(1)
    state = "error" if "error" in a else "isError" if a["result"].get("isError") else "ok"
    print("%-32s %s" % (tool, state))
proc.stdin.close()
try:
    proc.wait(timeout=2)
except subprocess.TimeoutExpired:  # servers with timers of their own (everything) stay
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
