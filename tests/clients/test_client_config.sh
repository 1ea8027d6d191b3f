#!/usr/bin/env bash
# hub client add|remove|list: each client's file, merged and backed up, in the shape the
# client reads; files it cannot change safely left alone; then the real Claude Code
# (tests/clients/package.json, its native binary) says Connected for the stdio hub and
# for the HTTP service with a bearer token. Spokes in none mode; HOME is the test's.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
export HOME=$TMP/home
mkdir -p "$HOME"
HUB=$BIN/hub
entry() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2], {"d": d}), sort_keys=True))' "$@"; }

# Claude Code: a file with settings and another server of its own.
echo '{"numStartups": 3, "mcpServers": {"other": {"type": "stdio", "command": "/bin/true", "args": []}}}' >"$HOME/.claude.json"
chmod 0600 "$HOME/.claude.json"
out=$("$HUB" client add claude-code --config "$CONF" --user tester 2>&1)
like "claude-code: added, saying where" "$out" "isolategpt in $HOME/.claude.json \\(stdio\\)"
is "... the stdio server runs this hub with the config and user given" \
    "$(entry "$HOME/.claude.json" 'd["mcpServers"]["isolategpt"]')" \
    "{\"args\": [\"serve\", \"--stdio\", \"--config\", \"$CONF\", \"--user\", \"tester\"], \"command\": \"$(readlink -f "$HUB")\", \"type\": \"stdio\"}"
is "... the client's other server and settings kept" "$(entry "$HOME/.claude.json" '[d["numStartups"], sorted(d["mcpServers"])]')" '[3, ["isolategpt", "other"]]'
bak=$(ls "$HOME"/.claude.json.isolategpt-*.bak 2>/dev/null | head -1)
check "... the old file backed up beside it" test -n "$bak"
[ -n "$bak" ] && is "... word for word" "$(entry "$bak" 'sorted(d["mcpServers"])')" '["other"]'
is "... its mode kept" "$(stat -c %a "$HOME/.claude.json")" 600

# Every other client: a new file in its own shape.
for c in claude-desktop vscode cursor gemini windsurf; do
    "$HUB" client add "$c" --app alpha >/dev/null 2>&1 || not_ok "$c: add failed"
done
is "claude-desktop: command and args under mcpServers" \
    "$(entry "$HOME/.config/Claude/claude_desktop_config.json" 'sorted(d["mcpServers"]["isolategpt"])')" '["args", "command"]'
is "vscode: a stdio server under servers" \
    "$(entry "$HOME/.config/Code/User/mcp.json" '[d["servers"]["isolategpt"]["type"], d["servers"]["isolategpt"]["args"]]')" '["stdio", ["serve", "--stdio", "--app", "alpha"]]'
check "cursor: under mcpServers" entry "$HOME/.cursor/mcp.json" 'd["mcpServers"]["isolategpt"]["command"]'
check "gemini: under mcpServers" entry "$HOME/.gemini/settings.json" 'd["mcpServers"]["isolategpt"]["command"]'
check "windsurf: under mcpServers" entry "$HOME/.codeium/windsurf/mcp_config.json" 'd["mcpServers"]["isolategpt"]["command"]'
is "a new file is the user's alone (0600)" "$(stat -c %a "$HOME/.gemini/settings.json")" 600

# HTTP with a token.
printf 'tok-123_abc\n' >"$TMP/token"
"$HUB" client add gemini --url http://127.0.0.1:9/mcp --token-file "$TMP/token" >/dev/null 2>&1
is "gemini: httpUrl and the bearer header" \
    "$(entry "$HOME/.gemini/settings.json" 'd["mcpServers"]["isolategpt"]')" \
    '{"headers": {"Authorization": "Bearer tok-123_abc"}, "httpUrl": "http://127.0.0.1:9/mcp"}'
"$HUB" client add vscode --name hub-http --url https://hub.example/mcp --token-file "$TMP/token" >/dev/null 2>&1
is "vscode: type http, url, header; the stdio server beside it kept" \
    "$(entry "$HOME/.config/Code/User/mcp.json" '[sorted(d["servers"]), d["servers"]["hub-http"]["type"], d["servers"]["hub-http"]["url"]]')" \
    '[["hub-http", "isolategpt"], "http", "https://hub.example/mcp"]'
out=$("$HUB" client add claude-desktop --url http://127.0.0.1:9/mcp --token-file "$TMP/token" 2>&1)
like "claude-desktop takes no HTTP server from its file: refused, saying what to do" "$out" 'takes no HTTP servers from its file'
printf 'has space\n' >"$TMP/bad-token"
out=$("$HUB" client add cursor --url http://127.0.0.1:9/mcp --token-file "$TMP/bad-token" 2>&1)
like "a token file whose first line is not a token is refused" "$out" 'must be the token'
out=$("$HUB" client add cursor --url ftp://x/mcp --token-file "$TMP/token" 2>&1)
like "a URL that is not http(s) is refused" "$out" 'must be an http'

# Files the editor must not touch.
printf '{\n  // my servers\n  "servers": {}\n}\n' >"$TMP/commented.json"
cp "$TMP/commented.json" "$TMP/commented.orig"
out=$("$HUB" client add vscode --file "$TMP/commented.json" 2>&1)
like "a file with comments (JSONC) is refused, not rewritten" "$out" 'not plain JSON'
check "... and left as it was" cmp "$TMP/commented.json" "$TMP/commented.orig"
echo '{"mcpServers": []}' >"$TMP/odd.json"
out=$("$HUB" client add cursor --file "$TMP/odd.json" 2>&1)
like "a file whose servers are not an object is refused" "$out" '"mcpServers" is not an object'

# Codex: TOML, our table replaced whole (a stale subtable too), the rest kept.
mkdir -p "$HOME/.codex"
cat >"$HOME/.codex/config.toml" <<'EOF'
model = "o4"

[mcp_servers.other]
command = "/bin/true"

[mcp_servers.isolategpt]
command = "/old/hub"

[mcp_servers.isolategpt.env]
STALE = "1"

[profiles.fast]
model = "o4-mini"
EOF
"$HUB" client add codex --user 'tester' >/dev/null 2>&1
toml=$($PY -c 'import tomllib,sys,json; print(json.dumps(tomllib.load(open(sys.argv[1],"rb")), sort_keys=True))' "$HOME/.codex/config.toml" 2>&1)
like "codex: the file still parses as TOML, settings and other tables kept" "$toml" '"other": \{"command": "/bin/true"\}\}, "model": "o4", "profiles": \{"fast"'
like "... our server replaced whole: this hub, no stale env" "$toml" "\"isolategpt\": \\{\"args\": \\[\"serve\", \"--stdio\", \"--user\", \"tester\"\\], \"command\": \"$(readlink -f "$HUB")\"\\}"
"$HUB" client remove codex >/dev/null 2>&1
toml=$($PY -c 'import tomllib,sys,json; print(json.dumps(tomllib.load(open(sys.argv[1],"rb")), sort_keys=True))' "$HOME/.codex/config.toml" 2>&1)
unlike "codex: removed" "$toml" 'isolategpt'
like "... the rest kept" "$toml" '"other".*"profiles"'

# remove and list
out=$("$HUB" client remove cursor 2>&1)
like "remove: says what it did and where the old file is" "$out" 'removed isolategpt from .*mcp.json.*isolategpt-.*bak'
is "... the server is gone" "$(entry "$HOME/.cursor/mcp.json" 'sorted(d["mcpServers"])')" '[]'
like "remove of a server that is not there changes nothing" "$("$HUB" client remove cursor 2>&1)" 'has no server isolategpt'
out=$("$HUB" client list 2>&1)
like "list: every client, its file and what our server runs" "$out" "claude-code .*\\.claude\\.json: $(readlink -f "$HUB") serve --stdio"
like "... and which have none" "$out" 'cursor .*no isolategpt server'
like "list CLIENT: its servers" "$("$HUB" client list claude-code 2>&1)" 'other'$'\t''/bin/true'
refute "an unknown client is refused" "$HUB" client add emacs

# The real Claude Code and Gemini CLI: `mcp list` connects to each server they are given.
CLAUDE=$ROOT/tests/clients/node_modules/@anthropic-ai/claude-code-linux-x64/claude
if [ ! -x "$CLAUDE" ]; then
    skip "claude mcp list" "Claude Code is not installed (make deps: npm ci in tests/clients)"
else
    "$BIN/hub" serve token add tester --tokens "$TMP/tokens" >"$TMP/token"
    serve_http_start --tokens "$TMP/tokens"
    "$HUB" client add claude-code --name hub-http --url "$URL" --token-file "$TMP/token" >/dev/null
    # One run lists all three (each run of the CLI costs seconds).
    printf 'wrong-token\n' >"$TMP/wrong"
    "$HUB" client add claude-code --name hub-wrong --url "$URL" --token-file "$TMP/wrong" >/dev/null
    out=$(cd "$TMP" && timeout 120 "$CLAUDE" mcp list 2>&1)
    diag "$out"
    like "claude mcp list: the stdio hub is Connected" "$out" "isolategpt: $(readlink -f "$HUB") serve --stdio .* - . Connected"
    like "claude mcp list: the HTTP service with its token is Connected" "$out" "hub-http: $URL \\(HTTP\\) - . Connected"
    wrong=$(grep 'hub-wrong:' <<<"$out")
    like "... and one with a wrong token is listed" "$wrong" "hub-wrong: $URL \\(HTTP\\)"
    unlike "... not Connected" "$wrong" 'Connected'
fi
GEMINI=$ROOT/tests/clients/node_modules/.bin/gemini
if [ ! -x "$GEMINI" ] || [ -z "${URL:-}" ]; then
    skip "gemini mcp list" "Gemini CLI or Claude Code is not installed (make deps: npm ci in tests/clients)"
else
    "$HUB" client add gemini --config "$CONF" --user tester >/dev/null
    "$HUB" client add gemini --name hub-http --url "$URL" --token-file "$TMP/token" >/dev/null
    echo "{\"$TMP\": \"TRUST_FOLDER\"}" >"$HOME/.gemini/trustedFolders.json" # servers run only in trusted folders
    out=$(cd "$TMP" && timeout 120 "$GEMINI" mcp list 2>&1)
    diag "$out"
    like "gemini mcp list: the stdio hub is Connected" "$out" "isolategpt: $(readlink -f "$HUB") serve --stdio .*\\(stdio\\) - Connected"
    like "gemini mcp list: the HTTP service with its token is Connected" "$out" "hub-http: $URL \\(http\\) - Connected"
fi
# Qwen Code, opencode and GitHub Copilot CLI (issue 38, item 8), from npm: each client's
# own listing after `hub client add` wrote its file, stdio and HTTP with a token.
QWEN=$ROOT/tests/clients/node_modules/.bin/qwen
if [ ! -x "$QWEN" ] || [ -z "${URL:-}" ]; then
    skip "qwen mcp list" "Qwen Code or Claude Code is not installed (make deps: npm ci in tests/clients)"
else
    "$HUB" client add qwen --config "$CONF" --user tester >/dev/null
    "$HUB" client add qwen --name hub-http --url "$URL" --token-file "$TMP/token" >/dev/null
    "$HUB" client add qwen --name hub-wrong --url "$URL" --token-file "$TMP/wrong" >/dev/null
    mkdir -p "$HOME/.qwen"
    echo "{\"$TMP\": \"TRUST_FOLDER\"}" >"$HOME/.qwen/trustedFolders.json"
    out=$(cd "$TMP" && timeout 120 "$QWEN" mcp list 2>&1)
    diag "$out"
    like "qwen mcp list: the stdio hub is Connected" "$out" "isolategpt: $(readlink -f "$HUB") serve --stdio .*\\(stdio\\) - Connected"
    like "qwen mcp list: the HTTP service with its token is Connected" "$out" "hub-http: $URL \\(http\\) - Connected"
    unlike "... and not with a wrong token" "$(grep 'hub-wrong:' <<<"$out")" ' - Connected'
fi
OPENCODE=$ROOT/tests/clients/node_modules/opencode-linux-x64/bin/opencode
if [ ! -x "$OPENCODE" ] || [ -z "${URL:-}" ]; then
    skip "opencode mcp list" "opencode or Claude Code is not installed (make deps: npm ci in tests/clients)"
else
    "$HUB" client add opencode --config "$CONF" --user tester >/dev/null
    "$HUB" client add opencode --name hub-http --url "$URL" --token-file "$TMP/token" >/dev/null
    "$HUB" client add opencode --name hub-wrong --url "$URL" --token-file "$TMP/wrong" >/dev/null
    out=$(cd "$TMP" && timeout 120 "$OPENCODE" mcp list 2>&1 | sed 's/\x1b\[[0-9;]*m//g')
    diag "$out"
    like "opencode mcp list: the stdio hub is connected" "$out" "✓ isolategpt connected"
    like "opencode mcp list: the HTTP service with its token is connected" "$out" "✓ hub-http connected"
    unlike "... and not with a wrong token" "$(grep 'hub-wrong' <<<"$out")" "✓ hub-wrong connected"
fi
COPILOT=$ROOT/tests/clients/node_modules/.bin/copilot
if [ ! -x "$COPILOT" ] || [ -z "${URL:-}" ]; then
    skip "copilot mcp list" "GitHub Copilot CLI or Claude Code is not installed (make deps: npm ci in tests/clients)"
else
    "$HUB" client add copilot --config "$CONF" --user tester >/dev/null
    "$HUB" client add copilot --name hub-http --url "$URL" --token-file "$TMP/token" >/dev/null
    out=$(cd "$TMP" && timeout 120 "$COPILOT" mcp list 2>&1)
    diag "$out"
    like "copilot mcp list: reads the stdio hub from the file hub client add wrote" "$out" "isolategpt"
    like "copilot mcp list: ... and the HTTP service" "$out" "hub-http \\(http\\)"
fi
done_testing
