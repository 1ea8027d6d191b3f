#!/usr/bin/python3
"""A minimal MCP client over Streamable HTTP for the host test (tests/host/package-checks).

  mcp_http.py URL TOKEN call TOOL JSON      one tools/call; prints the result as JSON;
                                            exit 0 unless it failed or isError
  mcp_http.py URL TOKEN restarts APP N      N spoke starts in one service: APP__whoami
                                            (starts the spoke), then APP__exit (ends it);
                                            prints "STARTED FAILED"
"""

import json
import sys
import urllib.error
import urllib.request


class Session:
    def __init__(self, url, token):
        self.url, self.token, self.sid, self.next_id = url, token, None, 1
        init = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "check-host", "version": "1"}})
        if "result" not in init:
            raise RuntimeError("initialize: %s" % init)
        self.notify("notifications/initialized")

    def post(self, body):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "Authorization": "Bearer " + self.token}
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
        req = urllib.request.Request(self.url, json.dumps(body).encode(), headers)
        with urllib.request.urlopen(req, timeout=120) as r:
            self.sid = r.headers.get("Mcp-Session-Id") or self.sid
            text = r.read().decode()
            if r.headers.get("Content-Type", "").startswith("text/event-stream"):
                # The last "data:" line that answers our request.
                answer = None
                for line in text.splitlines():
                    if line.startswith("data:"):
                        msg = json.loads(line[5:])
                        if msg.get("id") == body.get("id"):
                            answer = msg
                return answer
            return json.loads(text) if text.strip() else None

    def request(self, method, params):
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        return self.post(body)

    def notify(self, method):
        self.post({"jsonrpc": "2.0", "method": method})

    def call(self, tool, args):
        return self.request("tools/call", {"name": tool, "arguments": args})


def main():
    url, token, cmd = sys.argv[1], sys.argv[2], sys.argv[3]
    s = Session(url, token)
    if cmd == "call":
        answer = s.call(sys.argv[4], json.loads(sys.argv[5]))
        print(json.dumps(answer))
        ok = answer and "result" in answer and not answer["result"].get("isError")
        return 0 if ok else 1
    if cmd == "restarts":
        app, n = sys.argv[4], int(sys.argv[5])
        started = failed = 0
        for i in range(n):
            answer = s.call(app + "__whoami", {})
            if answer and "result" in answer and not answer["result"].get("isError"):
                started += 1
            else:
                failed += 1
                print("start %d: %s" % (i + 1, json.dumps(answer)[:300]), file=sys.stderr)
            s.call(app + "__exit", {"code": 0})  # the spoke ends; this call fails
        print(started, failed)
        return 0 if failed == 0 else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, urllib.error.URLError, RuntimeError, ValueError) as e:
        print("mcp_http: %s" % e, file=sys.stderr)
        sys.exit(1)
