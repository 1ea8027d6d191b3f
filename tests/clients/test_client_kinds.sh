#!/usr/bin/env bash
# hub client add for the clients of issue 38 (item 8), each file in the shape its client
# reads: Qwen Code (Gemini's), opencode (command as one array, type local/remote),
# GitHub Copilot CLI (type local/http, tools ["*"]), Cursor's CLI (Cursor's own file)
# and Goose (YAML, edited line by line: its other extensions and settings kept, a flow
# mapping left alone); what add says to check the connection (Gemini's trusted folders,
# Codex's missing check); `hub serve token add` names a wrong option. HOME is the test's.
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
export HOME=$TMP/home
mkdir -p "$HOME"
HUB=$BIN/hub
EXE=$(readlink -f "$HUB")
entry() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2], {"d": d}), sort_keys=True))' "$@"; }
yentry() { $PY -c 'import yaml,json,sys; d=yaml.safe_load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2], {"d": d}), sort_keys=True))' "$@"; }
printf 'tok-123_abc\n' >"$TMP/token"

# ---- Qwen Code: Gemini CLI's shape in ~/.qwen ----
out=$("$HUB" client add qwen --user tester 2>&1)
like "qwen: added in ~/.qwen/settings.json" "$out" "Qwen Code: isolategpt in $HOME/.qwen/settings.json"
is "... command and args under mcpServers" "$(entry "$HOME/.qwen/settings.json" 'd["mcpServers"]["isolategpt"]')" \
    "{\"args\": [\"serve\", \"--stdio\", \"--user\", \"tester\"], \"command\": \"$EXE\"}"
like "... saying how to check it, and folder trust" "$out" "qwen mcp list.*Disabled until you trust the folder"
"$HUB" client add qwen --name hub-http --url http://127.0.0.1:9/mcp --token-file "$TMP/token" >/dev/null 2>&1
is "qwen over HTTP: httpUrl and the bearer header" "$(entry "$HOME/.qwen/settings.json" 'd["mcpServers"]["hub-http"]')" \
    '{"headers": {"Authorization": "Bearer tok-123_abc"}, "httpUrl": "http://127.0.0.1:9/mcp"}'

# ---- opencode: "mcp", a local server's command one array ----
mkdir -p "$HOME/.config/opencode"
echo '{"$schema": "https://opencode.ai/config.json", "theme": "x", "mcp": {"other": {"type": "remote", "url": "https://o.example/mcp"}}}' \
    >"$HOME/.config/opencode/opencode.json"
out=$("$HUB" client add opencode --app alpha 2>&1)
is "opencode: type local, the command one array, enabled" "$(entry "$HOME/.config/opencode/opencode.json" 'd["mcp"]["isolategpt"]')" \
    "{\"command\": [\"$EXE\", \"serve\", \"--stdio\", \"--app\", \"alpha\"], \"enabled\": true, \"type\": \"local\"}"
is "... its settings and other server kept" "$(entry "$HOME/.config/opencode/opencode.json" '[d["theme"], sorted(d["mcp"])]')" \
    '["x", ["isolategpt", "other"]]'
like "... saying how to check it" "$out" "opencode mcp list"
"$HUB" client add opencode --name hub-http --url http://127.0.0.1:9/mcp --token-file "$TMP/token" >/dev/null 2>&1
is "opencode over HTTP: type remote, url, header" "$(entry "$HOME/.config/opencode/opencode.json" 'd["mcp"]["hub-http"]')" \
    '{"enabled": true, "headers": {"Authorization": "Bearer tok-123_abc"}, "type": "remote", "url": "http://127.0.0.1:9/mcp"}'
like "opencode list: what the array runs" "$("$HUB" client list opencode 2>&1)" "isolategpt"$'\t'"$EXE serve --stdio --app alpha"

# ---- GitHub Copilot CLI: type local / http, and the tools it may use ----
"$HUB" client add copilot >"$TMP/out" 2>&1
is "copilot: type local, command, args, tools [\"*\"]" "$(entry "$HOME/.copilot/mcp-config.json" 'd["mcpServers"]["isolategpt"]')" \
    "{\"args\": [\"serve\", \"--stdio\"], \"command\": \"$EXE\", \"tools\": [\"*\"], \"type\": \"local\"}"
"$HUB" client add copilot --name hub-http --url http://127.0.0.1:9/mcp --token-file "$TMP/token" >/dev/null 2>&1
is "copilot over HTTP: type http" "$(entry "$HOME/.copilot/mcp-config.json" 'd["mcpServers"]["hub-http"]')" \
    '{"headers": {"Authorization": "Bearer tok-123_abc"}, "tools": ["*"], "type": "http", "url": "http://127.0.0.1:9/mcp"}'

# ---- Cursor's CLI reads Cursor's own file ----
out=$("$HUB" client add cursor-agent 2>&1)
check "cursor-agent: in ~/.cursor/mcp.json" entry "$HOME/.cursor/mcp.json" 'd["mcpServers"]["isolategpt"]["command"]'
like "... saying how to check it" "$out" "cursor-agent mcp list"

# ---- Goose: YAML ----
"$HUB" client add goose --user tester >"$TMP/out" 2>&1
is "goose: a new config.yaml with the extension" "$(yentry "$HOME/.config/goose/config.yaml" 'd["extensions"]["isolategpt"]')" \
    "{\"args\": [\"serve\", \"--stdio\", \"--user\", \"tester\"], \"bundled\": null, \"cmd\": \"$EXE\", \"description\": \"IsolateGPT hub: sandboxed MCP apps\", \"enabled\": true, \"env_keys\": [], \"envs\": {}, \"name\": \"isolategpt\", \"timeout\": 300, \"type\": \"stdio\"}"
cat >"$HOME/.config/goose/config.yaml" <<'YAML'
GOOSE_PROVIDER: openai
extensions:
    developer:
        bundled: true
        enabled: true
        name: developer
        type: builtin
    isolategpt:
        cmd: /old/hub
        type: stdio
        # a comment of the user's inside the old entry
GOOSE_MODEL: gpt-4o
YAML
"$HUB" client add goose --name isolategpt >"$TMP/out" 2>&1
is "goose: an existing file: our entry replaced, at its indentation" \
    "$(yentry "$HOME/.config/goose/config.yaml" '[d["GOOSE_PROVIDER"], d["GOOSE_MODEL"], sorted(d["extensions"]), d["extensions"]["isolategpt"]["cmd"], d["extensions"]["developer"]["type"]]')" \
    "[\"openai\", \"gpt-4o\", [\"developer\", \"isolategpt\"], \"$EXE\", \"builtin\"]"
is "... once" "$(grep -c '^    isolategpt:' "$HOME/.config/goose/config.yaml")" 1
check "... the old file backed up" test -n "$(ls "$HOME"/.config/goose/config.yaml.isolategpt-*.bak 2>/dev/null)"
"$HUB" client add goose --name hub-http --url http://127.0.0.1:9/mcp --token-file "$TMP/token" >/dev/null 2>&1
is "goose over HTTP: streamable_http, uri, header" \
    "$(yentry "$HOME/.config/goose/config.yaml" '[d["extensions"]["hub-http"][k] for k in ("type", "uri", "headers")]')" \
    '["streamable_http", "http://127.0.0.1:9/mcp", {"Authorization": "Bearer tok-123_abc"}]'
like "goose list: its extensions" "$("$HUB" client list goose 2>&1)" "hub-http"
"$HUB" client remove goose >/dev/null 2>&1
is "goose remove: ours gone, the rest kept" \
    "$(yentry "$HOME/.config/goose/config.yaml" '[sorted(d["extensions"]), d["GOOSE_MODEL"]]')" '[["developer", "hub-http"], "gpt-4o"]'
printf 'extensions: {developer: {enabled: true}}\n' >"$TMP/flow.yaml"
cp "$TMP/flow.yaml" "$TMP/flow.orig"
out=$("$HUB" client add goose --file "$TMP/flow.yaml" 2>&1)
like "goose: a flow mapping is refused, not rewritten" "$out" 'not a block mapping'
check "... and left as it was" cmp "$TMP/flow.yaml" "$TMP/flow.orig"
printf 'extensions: {}\n' >"$TMP/empty.yaml"
"$HUB" client add goose --file "$TMP/empty.yaml" >/dev/null 2>&1
is "goose: \"extensions: {}\" becomes the block with our entry" "$(yentry "$TMP/empty.yaml" 'sorted(d["extensions"])')" '["isolategpt"]'

# ---- what add says to check, for the clients that need it ----
like "gemini: add says the server is Disabled until the folder is trusted, and how" \
    "$("$HUB" client add gemini 2>&1)" 'Disabled .*trust the folder.*trustedFolders.json'
like "codex: add says it shows no connection check, and how to verify" \
    "$("$HUB" client add codex 2>&1)" 'no connection check: `codex mcp list`.*/mcp'

# ---- hub serve token add with an option it does not take ----
out=$("$HUB" serve token add alice --tokens "$TMP/tokens" --config X 2>&1)
is "serve token add --config: a usage error (exit 2)" "$?" 2
like "... naming the option" "$out" '\-\-config is not one of its options \(it takes USER and --tokens FILE\)'
unlike "... not all of serve's help" "$out" '--max-sessions-per-token'
check "... and no token written" test ! -e "$TMP/tokens"
done_testing
