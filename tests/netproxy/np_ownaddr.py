"""An address added to the host after netproxy started, inside $NETNS
(test_np_ownaddr.sh)."""
from nptest import *

NS = os.environ["NETNS"]
PORT = 4443
LATE = "5.6.7.8"  # a public address, only ever local to this namespace (no route out)
table = {"late.allowed.example": {"A": [[LATE]]}}
srv = Servers([
    {"name": "local-service", "kind": "echo", "addr": "::", "port": PORT},
    {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": table},
], netns=NS)
px = Proxy(["--allow", "allowed.example", "--ports", str(PORT),
            "--dns-server", "127.0.0.1:%d" % srv.ports["dns"]], netns=NS, tag="ownaddr")

# The host gains the address after the proxy started (it read its own addresses then).
subprocess.run(["ip", "-n", NS, "addr", "add", LATE + "/32", "dev", "lo"], check=True)

code = ("import socket,sys\n"
        "s=socket.create_connection(('127.0.0.1',%d),timeout=5)\n"
        "s.sendall(b'CONNECT late.allowed.example:%d HTTP/1.1\\r\\n\\r\\nsecret request')\n"
        "s.shutdown(socket.SHUT_WR)\n"
        "d=b''\n"
        "s.settimeout(5)\n"
        "try:\n"
        "  while True:\n"
        "    x=s.recv(65536)\n"
        "    if not x: break\n"
        "    d+=x\n"
        "except Exception: pass\n"
        "sys.stdout.buffer.write(d)\n") % (px.port, PORT)
out = subprocess.run(["ip", "netns", "exec", NS, PY, "-c", code], capture_output=True,
                     timeout=20).stdout
st, hd, body = parse_response(out)
check(st == 403 and hd.get("x-proxy-error") == "forbidden-address",
      "an allowed name resolving to an address the host gained since start: 403",
      "%s %s" % (st, hd.get("x-proxy-error")))
check(b"secret request" not in out and b"BYE:" not in out,
      "... not a byte reached the local service", repr(out[-60:]))
rec = px.record_for(lambda r: r.get("destination.domain") == "late.allowed.example")
check(rec and rec.get("event.reason") == "forbidden-address" and
      rec.get("destination.ip") == LATE and rec.get("isolate.address_guard") == "own-address",
      "... on record as this host's own address", str(rec))
check(px.alive(), "the proxy runs on")
is_(px.stop(), 0, "the proxy exits cleanly")
done()
