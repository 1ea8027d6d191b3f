"""A stand-in npm registry on loopback for test_spokes_npm.sh: serves the packuments
and tarballs of a directory (DIR/NAME is NAME's packument, DIR/NAME/-/FILE.tgz its
tarballs), on a port the kernel picks, printed on the first line of stdout."""
import http.server
import os
import sys

root = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = os.path.join(root, self.path.lstrip("/").replace("%2f", "/").replace("%2F", "/"))
        path = os.path.normpath(path)
        if os.path.isdir(path) and os.path.isfile(path + ".packument"):
            path += ".packument"  # NAME is a directory of tarballs and a packument
        if not path.startswith(os.path.normpath(root)) or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error":"Not found"}')
            return
        data = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type",
                         "application/octet-stream" if path.endswith(".tgz") else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
