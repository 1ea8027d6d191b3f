"""A stand-in OTLP/HTTP collector on loopback (test_audit_otlp.sh): prints its port,
then appends each POST's path and JSON body as one line to OUT. With --hang it accepts
connections and never answers (a collector that is down but listening)."""
import http.server
import json
import socket
import sys
import time

out = sys.argv[1]
if "--hang" in sys.argv:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    print(s.getsockname()[1], flush=True)
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        with open(out, "a") as f:
            f.write(json.dumps({"path": self.path, "type": self.headers.get("Content-Type"),
                                "body": json.loads(body)}) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *a):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
