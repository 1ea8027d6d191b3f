"""Packs the test MCP server (server.js beside this file) as isolate-test-mcp@VERSION
with DESCRIPTION as its tool's description, into the stand-in registry's directory
REG, and makes it the latest: python3 publish.py REG PORT VERSION DESCRIPTION."""
import base64
import hashlib
import io
import json
import os
import sys
import tarfile

reg, port, version, description = sys.argv[1:5]
name = "isolate-test-mcp"
here = os.path.dirname(os.path.abspath(__file__))
server = open(os.path.join(here, "server.js")).read().replace("@DESCRIPTION@", description)
pkg = {"name": name, "version": version, "bin": {name: "server.js"}, "license": "MIT"}
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    for fname, text, mode in (("package.json", json.dumps(pkg), 0o644), ("server.js", server, 0o755)):
        data = text.encode()
        info = tarfile.TarInfo("package/" + fname)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))
tgz = buf.getvalue()
os.makedirs(os.path.join(reg, name, "-"), exist_ok=True)
fname = "%s-%s.tgz" % (name, version)
open(os.path.join(reg, name, "-", fname), "wb").write(tgz)
packument_path = os.path.join(reg, name + ".packument")
doc = json.load(open(packument_path)) if os.path.exists(packument_path) else {
    "name": name, "versions": {}, "dist-tags": {}}
doc["versions"][version] = dict(pkg, dist={
    "tarball": "http://127.0.0.1:%s/%s/-/%s" % (port, name, fname),
    "shasum": hashlib.sha1(tgz).hexdigest(),
    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()})
doc["dist-tags"]["latest"] = version
json.dump(doc, open(packument_path, "w"))
print(doc["versions"][version]["dist"]["integrity"])
