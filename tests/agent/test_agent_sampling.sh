#!/usr/bin/env bash
# sampling/createMessage: a spoke's own LLM context, served by the hub: the spoke
# gets a completion without any credential, in its own "spoke:APP" context with no
# tools and a capped maxTokens, audited, and rate-limited per app.
. "$(dirname "$0")/../lib.sh"
require_root
. "$ROOT/tests/agent/agent_lib.sh"

for MODE in process namespace; do
    rm -rf "$DATA" "$RUN" "$AUDIT"
    agent_setup '{"llm": {"sampling_max_tokens": 50, "sampling_burst": 1, "sampling_per_minute": 1}}'
    standin_start '[plan(("summarizer__summarize", {"text": "A long report about fares."}),
                         ("summarizer__summarize", {"text": "Another one."})),
                    text("A short summary."), text("Here are your summaries.")]'
    out=$(echo "Summarize my two reports." | OPENAI_API_KEY=sk-itest-sampling ask --memory none --answers allow)
    is "$MODE: the spoke got a completion through the hub" \
        "$(echo "$out" | jget 'd["calls"][0]["result"]["structuredContent"]["summary"]')" "A short summary."
    is "$MODE: ... in its own context" \
        "$(audit_count "g(r,'event.action')=='llm-call' and g(r,'isolate.llm.context')=='spoke:summarizer'")" 1
    is "$MODE: ... which was offered no tools and only what the spoke sent" \
        "$(standin_requests '"tools" not in b and [m["role"] for m in b["messages"]] == ["user"] and b["messages"][0]["content"].startswith("Summarize in one line: A long report")')" 1
    is "$MODE: ... with maxTokens capped at sampling_max_tokens" \
        "$(standin_requests 'b.get("max_tokens") == 50')" 1
    is "$MODE: ... and the key sent by the hub only" \
        "$(standin_requests 'r["headers"].get("authorization") == "Bearer sk-itest-sampling"')" 3
    is "$MODE: a second request within the rate limit is refused" \
        "$(echo "$out" | jget 'd["calls"][1]["outcome"]')" tool-error
    like "$MODE: ... saying why" "$(echo "$out" | jget 'd["calls"][1]["result"]["content"][0]["text"]')" \
        "sampling rate limit: at most 1 requests per minute per app"
    is "$MODE: ... without reaching the LLM" "$(standin_requests)" 3
    is "$MODE: the runtime audits both sampling requests" \
        "$(audit_count "g(r,'event.action')=='sampling'")" 2
done
done_testing
