#!/usr/bin/env bash
# One local process cannot lock everyone out of the repl-server (issue 14, item 4),
# from the attacker's side: with --tokens every request needs a valid token (stored
# hashed), a session belongs to the token that opened it, each token holds at most its
# quota of sessions and connections, unproven connections count for their address, and
# a connection that does not complete a request in time (a slowloris) is closed.
# Without --tokens the quotas go by peer address (127.0.0.2 and 127.0.0.3 are two
# clients), and a non-loopback --listen is refused.
. "$(dirname "$0")/../lib.sh"
. "$ROOT/tests/pyexec/pyexec_lib.sh"
pyexec_setup process

A_TOKEN=attacker-token-$$-$RANDOM
V_TOKEN=victim-token-$$-$RANDOM
$PY - "$A_TOKEN" "$V_TOKEN" >"$TMP/tokens" <<'PYEOF'
import hashlib, sys
print("# repl-server tokens of the test")
print("sha256:%s mallory" % hashlib.sha256(sys.argv[1].encode()).hexdigest())
print("sha256:%s victim" % hashlib.sha256(sys.argv[2].encode()).hexdigest())
PYEOF
check "the token file holds hashes, not the tokens" bash -c "! grep -q '$A_TOKEN' '$TMP/tokens'"

cat >"$TMP/client.py" <<'PYEOF'
import json, socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
from cases import ok
PORT, A, V, GROUP = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

class C:
    def __init__(self, src="127.0.0.1"):
        self.s = socket.socket()
        self.s.settimeout(20)
        self.s.bind((src, 0))
        self.s.connect(("127.0.0.1", PORT))
    def send(self, req):
        p = json.dumps(req).encode()
        self.s.sendall(struct.pack(">I", len(p)) + p)
    def recv(self):
        def exact(n):
            b = b""
            while len(b) < n:
                try:
                    c = self.s.recv(n - len(b))
                except (ConnectionResetError, socket.timeout):
                    return None
                if not c:
                    return None
                b += c
            return b
        h = exact(4)
        if h is None:
            return None
        body = exact(struct.unpack(">I", h)[0])
        return None if body is None else json.loads(body)
    def run(self, code, token=None, sid=None, close=False):
        req = {"code": code}
        if token is not None:
            req["token"] = token
        if sid:
            req["session_id"] = sid
        if close:
            req["close"] = True
        self.send(req)
        return self.recv()
    def closed(self):
        try:
            self.s.settimeout(5)
            return self.s.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

if GROUP == "tokens":
    c = C()
    r = c.run("print(1)")
    ok(r and r["status"] == "error" and "unauthorized" in r["error"], "no token: refused (unauthorized)", r)
    ok(c.closed(), "... and the connection is closed")
    c = C()
    r = c.run("print(1)", token="guess-" + A)
    ok(r and r["status"] == "error" and "unauthorized" in r["error"], "a wrong token: refused", r)
    a = C()
    sids = []
    for i in range(6):
        r = a.run("x = %d\nprint(x)" % i, token=A)
        if r and r["status"] == "ok":
            sids.append(r["session_id"])
        else:
            last = r
    ok(len(sids) == 2, "the attacker's token gets its quota of sessions (2 of 8), not all (%d)" % len(sids))
    ok(last and "too many sessions for this client" in last["error"], "... the rest refused as over its quota", last)
    v = C("127.0.0.2")
    r = v.run("print('victim')", token=V)
    ok(r and r["status"] == "ok" and r["output"] == "victim\n", "the victim still gets a session", r)
    vsid = r and r["session_id"]
    r = v.run("print(x)", token=V, sid=sids[0])
    ok(r and r["status"] == "error" and "unknown session" in r["error"],
       "another token cannot use the attacker's session, even with its id", r)
    r = a.run("print(2)", token=A, sid=vsid)
    ok(r and r["status"] == "error" and "unknown session" in r["error"],
       "... nor the attacker the victim's", r)
    r = a.run("print(x)", token=A, sid=sids[1])
    ok(r and r["status"] == "ok" and r["output"] == "1\n", "the attacker's own session answers it (control)", r)
    r = a.run("print(1)", token=V, sid=sids[1])
    ok(r and "one token per connection" in r["error"], "a connection cannot switch tokens", r)
    # Connections: each proves the token; past the quota (4 of 16) they are refused.
    held, refused = [], 0
    for i in range(8):
        c = C()
        r = c.run("print(1)", token=A, sid=sids[0])
        if r and r["status"] == "ok":
            held.append(c)
        elif r and "too many connections for this token" in r["error"]:
            refused += 1
    ok(len(held) == 3 and refused == 5,
       "the attacker's token holds its quota of connections (4 of 16, its first one "
       "included): %d more held, %d refused" % (len(held), refused))
    v2 = C("127.0.0.3")
    r = v2.run("print(3)", token=V, sid=vsid)
    ok(r and r["status"] == "ok", "the victim still connects and runs", r)
    # Unproven connections count for their address.
    idle = [C("127.0.0.4") for _ in range(4)]
    time.sleep(0.2)
    extra = C("127.0.0.4")
    r = extra.recv()
    ok(r and "too many connections from this client" in r["error"],
       "a fifth silent connection from one address is refused", r)
    v3 = C("127.0.0.5")
    r = v3.run("print(4)", token=V, sid=vsid)
    ok(r and r["status"] == "ok", "... while another address connects (control)", r)
elif GROUP == "slowloris":
    t0 = time.time()
    silent = C()
    partial = C()
    partial.s.sendall(b"\x00\x00")
    trickle = C()
    body = json.dumps({"code": "print(1)", "token": A}).encode()
    frame = struct.pack(">I", len(body)) + body
    # One byte every 0.3 s: the connection is never idle, the request never whole.
    got = None
    for b in frame[:12]:
        try:
            trickle.s.sendall(bytes([b]))
        except OSError:
            break
        time.sleep(0.3)
    for name, c in (("a silent connection", silent), ("half a header", partial),
                    ("a request trickled a byte at a time", trickle)):
        r = c.recv()
        ok(r and r["status"] == "error" and "no complete request within" in r["error"],
           "%s is told why it is closed" % name, r)
        ok(c.closed(), "... and closed", )
    took = time.time() - t0
    ok(took < 6, "... all within the frame timeout (1 s), not the idle timeout (%.1f s)" % took)
    c = C()
    r = c.run("print(5)", token=V)
    ok(r and r["status"] == "ok", "a client that sends whole requests is served (control)", r)
elif GROUP == "address":
    a, b = C("127.0.0.2"), C("127.0.0.3")
    r1 = a.run("print(1)")
    r2 = a.run("print(2)")
    ok(r1 and r1["status"] == "ok", "without tokens: a client gets a session", r1)
    ok(r2 and "too many sessions for this client" in r2["error"], "... and no more than its quota (1)", r2)
    r = b.run("print(3)")
    ok(r and r["status"] == "ok", "... while another address gets its own", r)
PYEOF

start_server --tokens "$TMP/tokens" --max-sessions 8 --pool 0 --max-clients 16 --frame-timeout 1 ||
    { not_ok "the server starts: $(cat "$TMP/server.err")"; exit 1; }
ok "the server starts with --tokens"
$PY "$TMP/client.py" "$ROOT/tests/pyexec" "$PORT" "$A_TOKEN" "$V_TOKEN" tokens
$PY "$TMP/client.py" "$ROOT/tests/pyexec" "$PORT" "$A_TOKEN" "$V_TOKEN" slowloris
is "audit: refusals name the reason" \
    "$(audit_count 'g(r,"event.action")=="repl-request" and g(r,"event.reason") in ("unauthorized","client-sessions","client-connections","slow-client")' | awk '$1 > 0 {print "yes"}')" yes
is "no token reaches the audit log" "$(grep -c "$A_TOKEN\|$V_TOKEN" "$AUDIT")" 0
stop_server
is "the server exits 0" "$SRV_RC" 0

start_server --max-sessions 8 --pool 0 --client-max-sessions 1 ||
    { not_ok "the server starts without tokens: $(cat "$TMP/server.err")"; exit 1; }
$PY "$TMP/client.py" "$ROOT/tests/pyexec" "$PORT" "" "" address
stop_server

out=$("$BIN/hub" repl-server --config "$CONF" --listen 0.0.0.0:0 2>&1)
rc=$?
refute "a non-loopback --listen without --tokens is refused (exit $rc)" test "$rc" -eq 0
like "... saying why" "$out" "not a loopback address.*--tokens"
done_testing
