#!/usr/bin/env bash
# A Python MCP server as a container image (issue 36, item 2): the test builds the image
# from Debian's python3 files of this host (the interpreter, its standard library and
# the libraries it loads; no docker, no base image), with the server
# (tests/oci/pyspoke.py) as its Cmd and "python3" as its Entrypoint, found in the image's
# PATH. `hub spokes add oci:` pulls it from a loopback registry, guesses the python
# runtime from the entrypoint (seccomp preset python: no fork), and the call answers in
# namespace mode from the image's interpreter, which sees no host file and cannot write
# its root or its standard library; with --allow, its urllib reaches a stand-in HTTPS
# upstream through the jail's gateway and netproxy (the image's /etc gets the generated
# resolv.conf), and a name not allowed is refused on netproxy's record.
. "$(dirname "$0")/../lib.sh"
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
. "$ROOT/tests/oci/oci_lib.sh"
require_root || exit 0
oci_tools_or_skip
if [ ! -x /usr/bin/python3.11 ]; then
    skip "$TEST_NAME" "no /usr/bin/python3.11 to build the image from"
    exit 0
fi
hub_setup
test_cert www.allowed.example denied.example
UPORT=$(free_port)
cat >"$TMP/upstream.py" <<PYEOF
import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from %s" % self.headers.get("Host", "")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", $UPORT), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("$TMP/srv.pem", "$TMP/srv.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PYEOF
bg $PY "$TMP/upstream.py"
wait_for "the stand-in upstream" 10 bash -c "echo >/dev/tcp/127.0.0.1/$UPORT"
hub_config "{\"secrets\": {\"dir\": \"$TMP/secrets\", \"key_file\": \"$TMP/store.key\"},
    \"netproxy\": {\"binary\": \"$BIN/netproxy\", \"audit\": \"$PROXY_AUDIT\",
    \"resolve\": [\"www.allowed.example:$UPORT:127.0.0.1\", \"denied.example:$UPORT:127.0.0.1\"],
    \"upstream_allow_cidr\": [\"127.0.0.1/32\"]}}"
mode_needs_jail_skip
oci_registry || exit 1

# ---- the image: python3.11, its stdlib (no tests, no site-packages), its libraries ----
lay=$TMP/layout b=$TMP/bundle
r=$b/rootfs
{
    umoci init --layout "$lay" && umoci new --image "$lay:py" &&
        umoci unpack --image "$lay:py" "$b" >/dev/null &&
        mkdir -p "$r/usr/bin" "$r/usr/lib/x86_64-linux-gnu" "$r/lib64" "$r/app" &&
        cp /usr/bin/python3.11 "$r/usr/bin/" && ln -s python3.11 "$r/usr/bin/python3" &&
        ln -s usr/lib "$r/lib" &&
        tar -C /usr/lib --exclude=python3.11/test --exclude=python3.11/idlelib \
            --exclude=python3.11/tkinter --exclude=python3.11/ensurepip \
            --exclude=python3.11/lib2to3 --exclude=python3.11/site-packages \
            --exclude=python3.11/dist-packages -cf - python3.11 | tar -C "$r/usr/lib" -xf - &&
        for lib in $(ldd /usr/bin/python3.11 /usr/lib/python3.11/lib-dynload/_ssl.*.so \
            /usr/lib/python3.11/lib-dynload/_hashlib.*.so | awk '$3 ~ /^\// {print $3}' | sort -u); do
            cp -L "$lib" "$r/usr/lib/x86_64-linux-gnu/" || exit 1
        done &&
        cp -L /lib64/ld-linux-x86-64.so.2 "$r/lib64/" &&
        cp "$ROOT/tests/oci/pyspoke.py" "$r/app/server.py" &&
        echo "python image" >"$r/app/marker" &&
        umoci repack --image "$lay:py" "$b" &&
        umoci config --image "$lay:py" --config.entrypoint python3 \
            --config.cmd /app/server.py --config.env PATH=/usr/bin --config.workingdir /app &&
        oci_push "$lay:py" itest/pyspoke:3.11
} >"$TMP/build.out" 2>&1
is "a Python image is built from the host's python3 files and pushed" "$?" 0 ||
    diag "$(tail -5 "$TMP/build.out")"

printf 'tester:%s\n' "$PASSWORD" | "$BIN/hub" secrets set --config "$CONF" regcred >/dev/null 2>&1
"$BIN/hub" spokes add --config "$CONF" --yes --registry-secret regcred py \
    --allow allowed.example --ports "$UPORT" \
    "oci:$REGISTRY/itest/pyspoke:3.11" >"$TMP/out" 2>"$TMP/err"
is "spokes add py oci:$REGISTRY/itest/pyspoke:3.11 works in namespace mode" "$?" 0 ||
    diag "$(cat "$TMP/out" "$TMP/err")"
M=$SPOKES/py.json
is "... the entrypoint found in the image's PATH, then its Cmd" "$(jget 'd["command"]' <"$M")" \
    '["/usr/bin/python3", "/app/server.py"]'
is "... the python runtime guessed from it" "$(jget 'd["runtime"]' <"$M")" python
out=$(hubc py.pyinfo '{}' 2>"$TMP/call.err")
is "hub call py.pyinfo answers" "$?" 0 || diag "$(cat "$TMP/call.err")"
P=$(echo "$out" | jget 'd["content"][0]["text"]')
diag "pyinfo: $P"
is "... from the image's interpreter" "$(echo "$P" | jget 'd["executable"] + " " + d["marker"]')" \
    "/usr/bin/python3.11 python image"
is "... in its WorkingDir" "$(echo "$P" | jget 'd["cwd"]')" /app
is "... seeing no host /etc/shadow and no host /usr/bin/env" \
    "$(echo "$P" | jget '[d["host_shadow"], d["host_env"]]')" '[false, false]'
is "... unable to write its root or its standard library" \
    "$(echo "$P" | jget '[d["write_root"], d["write_usr"]]')" '[false, false]'
is "... able to write /data" "$(echo "$P" | jget 'd["write_data"]')" true
is "... and unable to fork (the python preset)" "$(echo "$P" | jget 'd["fork"]')" \
    "Operation not permitted"

# ---- egress: through the gateway and netproxy, like any spoke ----
mkdir -p "$DATA/tester/py"
cp "$TMP/ca.pem" "$DATA/tester/py/ca.pem"
out=$(hubc py.fetch "{\"url\":\"https://www.allowed.example:$UPORT/\"}" 2>"$TMP/call.err")
is "the image's urllib reaches an allowed name through netproxy" \
    "$(echo "$out" | jget 'd["content"][0]["text"]')" "hello from www.allowed.example:$UPORT" ||
    diag "$(cat "$TMP/call.err")"
out=$(hubc py.fetch "{\"url\":\"https://denied.example:$UPORT/\"}" 2>"$TMP/call.err")
like "... and not a name it is not allowed" "$(echo "$out" | jget 'd["content"][0]["text"]')" '^error: '
like "... on netproxy's record" "$(grep -h '"address":"denied.example"' "$PROXY_AUDIT" 2>/dev/null | head -1)" \
    '"reason":"domain-not-allowed"'
is "no process is left behind" "$(leftover_procs)" 0
done_testing
