#!/usr/bin/env bash
# Injection at the egress, end to end: a hub in namespace mode, a Node spoke (probe.mjs)
# that holds stand-ins for two secrets, and stand-in APIs in a network namespace of the
# test's own that record what they receive. The value reaches its API and nothing in
# the jail, the manifest, the logs or the audit holds it; from the attacker's side the
# stand-in sent to another secret's host, in the CONNECT request, or with a
# mismatched Host or SNI is refused and audited; a host with no secret keeps end-to-end
# TLS (netproxy never opens it); the CA's key is not reachable from the jail; a
# rotation reaches the running spoke's next request.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
require_cmds node
. "$ROOT/tests/secrets/secrets_lib.sh"
hub_setup
upstream_start api.github.com api.notion.com files.example.org plain.example.org
secrets_config api.github.com api.notion.com files.example.org plain.example.org
H() {
    if [ "$1 ${2:-}" = "spokes add" ]; then
        "$BIN/hub" spokes add --config "$CONF" "${@:3}"
    else
        "$BIN/hub" "$@" --config "$CONF"
    fi
}
has() { if echo "$2" | grep -Eq -- "$3"; then ok "$1"; else not_ok "$1: /$3/ not in: $(echo "$2" | head -c 600)"; fi; }
GH=ghp_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
NT=ntn_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 46)
FK=fk_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 30)
echo "$GH" | H secrets set github --hosts api.github.com --header Authorization >/dev/null
echo "$NT" | H secrets set notion --hosts api.notion.com >/dev/null
echo "$FK" | H secrets set files --hosts files.example.org --query key >/dev/null
out=$(H spokes add probe --allow github.com,notion.com,example.org --secret GITHUB_TOKEN=github \
    --secret NOTION_TOKEN=notion --secret FILES_KEY=files --yes \
    -- node "$ROOT/tests/secrets/probe.mjs" 2>&1)
is "spokes add probe with three secrets" "$?" 0 || diag "$out"
call() { hubc "$@" 2>>"$TMP/calls.err"; }
at_exit '[ -s "$TMP/calls.err" ] && sed "s/^/# /" "$TMP/calls.err" | head -40'
sc() { jget 'd["structuredContent"]'; }

# ---- what the jail holds ----
env=$(call probe.env '{}')
gh_standin=$(echo "$env" | jget 'd["structuredContent"]["env"]["GITHUB_TOKEN"]')
nt_standin=$(echo "$env" | jget 'd["structuredContent"]["env"]["NOTION_TOKEN"]')
fk_standin=$(echo "$env" | jget 'd["structuredContent"]["env"]["FILES_KEY"]')
like "the spoke's GITHUB_TOKEN is a stand-in with the value's prefix" "$gh_standin" "^ghp_[A-Za-z0-9]{36}$"
check "... not the value" test "$gh_standin" != "$GH"
is "... of the value's length" "${#gh_standin}" "${#GH}"
unlike "/proc/self/environ holds no value" "$(echo "$env" | jget 'd["structuredContent"]["environ"]')" "$GH|$NT|$FK"
is "the jail trusts the hub's CA (NODE_EXTRA_CA_CERTS)" \
    "$(echo "$env" | jget 'd["structuredContent"]["env"]["NODE_EXTRA_CA_CERTS"]')" /etc/isolategpt/ca.crt

# ---- the value reaches its API ----
r=$(call probe.get "{\"url\":\"https://api.github.com/user\",\"headers\":{\"Authorization\":\"Bearer \${GITHUB_TOKEN}\"}}")
is "a request with the stand-in to its host succeeds" "$(echo "$r" | jget 'd["structuredContent"]["status"]')" 200
is "... and the API received the value" "$(records 'r["headers"].get("authorization")' | tail -1)" "Bearer $GH"
r=$(call probe.get "{\"url\":\"https://api.notion.com/v1/users/me\",\"headers\":{\"Authorization\":\"Bearer \${NOTION_TOKEN}\",\"Notion-Version\":\"2022-06-28\"}}")
is "a second secret, any header (none named), reaches its API" "$(records 'r["headers"].get("authorization")' | tail -1)" "Bearer $NT"
r=$(call probe.get "{\"url\":\"https://files.example.org/get?name=a&key=\${FILES_KEY}\"}")
is "a secret named for a query parameter is put there" "$(records 'r["path"]' | tail -1)" "/get?name=a&key=$FK"
r=$(call probe.get "{\"url\":\"https://api.github.com/repos\",\"headers\":{\"Authorization\":\"Bearer nothing-secret-here\"}}")
is "a request to a secret's host without the stand-in passes unchanged" \
    "$(records 'r["headers"].get("authorization")' | tail -1)" "Bearer nothing-secret-here"
r=$(call probe.get "{\"url\":\"https://api.github.com/git\",\"headers\":{\"Authorization\":\"Basic64 x-access-token:\${GITHUB_TOKEN}\"}}")
is "a stand-in inside a Basic credential is replaced there" \
    "$(records 'r["headers"].get("authorization")' | tail -1)" "Basic $(printf 'x-access-token:%s' "$GH" | base64 -w0)"
r=$(call probe.get "{\"url\":\"https://api.github.com/body\",\"method\":\"POST\",\"body\":\"token=\${GITHUB_TOKEN}\"}")
like "the stand-in in a body to its own host passes unchanged (not configured)" \
    "$(records 'r["body"]' | tail -1)" "^token=ghp_[A-Za-z0-9]{36}$"
unlike "... it is not the value" "$(records 'r["body"]' | tail -1)" "$GH"
is "the injections are audited: secret, host, method, path" \
    "$(audit_count 'g(r,"event.action")=="credential-inject" and g(r,"isolate.secret.name")=="github" and g(r,"url.domain")=="api.github.com" and g(r,"http.request.method")=="GET" and g(r,"url.path")=="/user"' "$PROXY_AUDIT")" 1

# ---- from the attacker's side ----
n_before=$(wc -l <"$RECORDS")
r=$(call probe.get "{\"url\":\"https://files.example.org/upload\",\"headers\":{\"X-Token\":\"\${GITHUB_TOKEN}\"}}")
is "the stand-in sent to another secret's host is refused (403)" "$(echo "$r" | jget 'd["structuredContent"]["status"]')" 403
is "... saying why" "$(echo "$r" | jget 'd["structuredContent"]["error"]')" credential-to-wrong-host
is "... and audited as credential-to-wrong-host, naming the secret" \
    "$(audit_count 'g(r,"event.reason")=="credential-to-wrong-host" and g(r,"isolate.secret.name")=="github" and g(r,"url.domain")=="files.example.org"' "$PROXY_AUDIT")" 1
r=$(call probe.get "{\"url\":\"https://files.example.org/upload\",\"method\":\"POST\",\"body\":\"exfil=\${GITHUB_TOKEN}\"}")
is "... also in a body" "$(echo "$r" | jget 'd["structuredContent"]["error"]')" credential-to-wrong-host
is "no refused request reached the other API" "$(wc -l <"$RECORDS")" "$n_before"
r=$(call probe.get "{\"url\":\"https://api.github.com/user\",\"headers\":{\"Host\":\"files.example.org\",\"Authorization\":\"Bearer \${GITHUB_TOKEN}\"}}")
is "a request that names another host than its tunnel's is refused (421, domain fronting)" \
    "$(echo "$r" | jget '[d["structuredContent"]["status"], d["structuredContent"]["error"]]')" '[421, "host-mismatch"]'
r=$(call probe.get "{\"url\":\"https://api.github.com/user\",\"sni\":\"files.example.org\"}")
is "a ClientHello naming another host than the tunnel's is refused" "$(echo "$r" | jget 'd["structuredContent"]["status"]')" 0
check "... and audited as sni-mismatch" test "$(audit_count 'g(r,"event.reason")=="sni-mismatch"' "$PROXY_AUDIT")" -ge 1
r=$(call probe.get "{\"url\":\"https://api.github.com/user\",\"proxyHeaders\":{\"Proxy-Authorization\":\"Bearer \${GITHUB_TOKEN}\"}}")
is "the stand-in in the CONNECT request itself is refused" "$(echo "$r" | jget 'd["structuredContent"]["error"]')" "proxy answered 403"
r=$(call probe.get "{\"url\":\"https://plain.example.org/\"}")
is "a host no secret is for keeps end-to-end TLS: the hub's CA does not answer for it" \
    "$(echo "$r" | jget 'd["structuredContent"]["error"]')" UNABLE_TO_VERIFY_LEAF_SIGNATURE
is "... no request went through" "$(records 'r["authority"]' | grep -c plain.example.org)" 0
r=$(call probe.read '{"path":"/etc/isolategpt/ca.key"}')
is "the CA's key is not in the jail" "$(echo "$r" | jget 'd["structuredContent"]["ok"]')" false
r=$(call probe.read '{"path":"/etc/isolategpt/ca.crt"}')
is "... its certificate is (control)" "$(echo "$r" | jget 'd["structuredContent"]["ok"]')" true

# ---- rotation: `hub secrets set` again while the spoke runs ----
GH2=ghp_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 36)
rot=$(TMP=$TMP $PY "$ROOT/tests/secrets/rotate_probe.py" "$BIN/hub" "$CONF" "$RECORDS" "$GH2")
diag "rotation: $rot"
is "before the rotation the API got the old value" "$(echo "$rot" | jget 'd["before"]')" "Bearer $GH"
is "after it, the new one, with no restart" "$(echo "$rot" | jget 'd["after"]')" "Bearer $GH2"
is "... the same spoke, holding the same stand-in" \
    "$(echo "$rot" | jget '[d["same_spoke"], d["same_standin"]]')" '[true, true]'
like "the hub's netproxy runs in a memory cgroup of its own" "$(echo "$rot" | jget 'd["netproxy_cgroup"]')" \
    "/isolategpt-netproxy\.[0-9]+$"
is "... limited to hub.json's netproxy.memory_mb (default 1024 MiB)" \
    "$(echo "$rot" | jget 'd["netproxy_memory_limit"]')" $((1024 * 1024 * 1024))
np_cg=$(echo "$rot" | jget 'd["netproxy_cgroup"]')
check "... removed when that hub ended" test ! -d "/sys/fs/cgroup/memory$np_cg" -a ! -d "/sys/fs/cgroup$np_cg"
# A hub killed with SIGKILL leaves its netproxy's cgroup: the next start removes it.
stale_pid=$(sh -c 'echo $$')
stale=/sys/fs/cgroup${np_cg%.*}.$stale_pid
[ -d /sys/fs/cgroup/memory ] && stale=/sys/fs/cgroup/memory${np_cg%.*}.$stale_pid
mkdir "$stale" && at_exit "rmdir $stale 2>/dev/null"
call probe.env '{}' >/dev/null
check "a netproxy cgroup whose hub is gone is removed when the next hub starts netproxy" test ! -d "$stale"
check "... and netproxy recorded the update" \
    test "$(audit_count 'g(r,"event.action")=="secret-update" and g(r,"isolate.secret.name")=="github"' "$PROXY_AUDIT")" -ge 1

# ---- netproxy at its ceiling: the OOM killer ends it in its cgroup, the hub restarts it ----
ceil=$(TMP=$TMP $PY "$ROOT/tests/secrets/ceiling_probe.py" "$BIN/hub" "$CONF" "$AUDIT")
diag "ceiling: $ceil"
is "tunnels never read past a ceiling lowered to 8 MiB above netproxy's use: the OOM killer ends it" \
    "$(echo "$ceil" | jget 'd.get("ended")')" true
like "... the hub's netproxy-exit record says it was the memory ceiling" \
    "$(echo "$ceil" | jget 'd.get("reason")')" "memory ceiling of 1024 MiB"
is "... the hub restarts it, in its cgroup with the configured limit again" \
    "$(echo "$ceil" | jget '[d.get("restarted"), d.get("limit_after")]')" "[true, $((1024 * 1024 * 1024))]"
is "... and the spoke's next request goes through the new netproxy" "$(echo "$ceil" | jget 'd.get("after")')" 200

# ---- where the values are not ----
# A tool that writes its key to disk writes the stand-in (checked: a failed call would
# leave no file and the last check below would fail without saying why).
w=$(call probe.write '{"name":"cache.json","text":"${GITHUB_TOKEN} ${NOTION_TOKEN}"}')
is "the spoke writes its environment's keys to its data" "$(echo "$w" | jget 'd["structuredContent"]["ok"]' 2>/dev/null)" true ||
    diag "probe.write: $(echo "$w" | head -c 400) $(tail -5 "$TMP/calls.err" 2>/dev/null)"
is "the value is nowhere in the spoke's data, the manifests, the logs, the audit or the transcript" \
    "$(grep -rlF -e "$GH" -e "$GH2" -e "$NT" -e "$FK" "$DATA" "$SPOKES" "$RUN" "$AUDIT" "$PROXY_AUDIT" "$TMP/audit.transcript.jsonl" 2>/dev/null)" ""
check "... while the stand-ins are there (the test looked in the right places)" \
    grep -rqE "ghp_[A-Za-z0-9]{36}" "$DATA"
done_testing
