"""The MCP server of tests/oci's Python image: the standard library only, run by the
image's own Debian python3 (copied from the host's files by the test). One JSON-RPC
message a line. Its tool "pyinfo" reports, from inside, what the image's interpreter
sees and may do: its version, host files, writing its root, starting a process (the
python seccomp preset allows no fork); "fetch" gets a URL with urllib, through the
jail's gateway and netproxy like any spoke's traffic (the test's CA in /data)."""
import json
import os
import sys


def pyinfo():
    def can_write(path):
        try:
            with open(path, "w") as f:
                f.write("x")
            os.unlink(path)
            return True
        except OSError:
            return False

    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        fork = "allowed"
    except OSError as e:
        fork = os.strerror(e.errno)
    return {
        "version": "%d.%d" % sys.version_info[:2],
        "executable": os.path.realpath(sys.executable),
        "uid": os.getuid(),
        "host_shadow": os.path.exists("/etc/shadow"),
        "host_env": os.path.exists("/usr/bin/env"),
        "marker": open("/app/marker").read().strip(),
        "write_root": can_write("/oci-probe"),
        "write_usr": can_write("/usr/lib/python3.11/oci-probe"),
        "write_data": can_write("/data/oci-probe"),
        "fork": fork,
        "cwd": os.getcwd(),
    }


def fetch(url):
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile="/data/ca.pem")
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=15) as r:
            return r.read().decode()
    except Exception as e:  # what failed is the answer
        return "error: %s" % e


TOOLS = [{"name": "pyinfo", "description": "What the image's Python sees.",
          "inputSchema": {"type": "object", "properties": {}}},
         {"name": "fetch", "description": "Gets a URL.",
          "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}},
                          "required": ["url"]}}]


def answer(msg):
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        return None
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "pyspoke", "version": "1.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and msg["params"]["name"] == "fetch":
        text = fetch(msg["params"]["arguments"]["url"])
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(pyinfo())}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": mid,
                "error": {"code": -32601, "message": "no such method"}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
