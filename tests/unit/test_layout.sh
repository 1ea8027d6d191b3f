#!/usr/bin/env bash
# hub/'s layout: one folder per subsystem, and includes that go one way only.
#
# The layers, lowest first (a folder may include the public header of a folder in a
# lower layer, never one in its own layer or above; lib/ is below them all):
#   secrets < config < net < runtime < llm, memory, cmdline < assistant, repl, serve
#   < casestudies, agentbench < cli
# secrets (the store, stand-ins, the CA), config (hub.json, manifests, the catalog, the
# pin) and net (the spokes' network, netproxy's supervision) need no hub: the runtime
# calls them and hands them what they need, never the other way.
# casestudies and agentbench sit above assistant because they drive the agent.
# A folder's public header is <folder>/<folder>.h (cli/ has none: nothing includes it);
# every other header is internal to its folder. Within a folder a header is named
# plainly ("agent.h"); across folders by folder ("runtime/runtime.h", -Ihub).
#
# Checked on the tree, and on a scratch tree with one violation of each kind, which
# must each be caught (a check that cannot fail asserts nothing).
set -u
cd "$(dirname "$0")/../.."

declare -A RANK=([secrets]=0 [config]=1 [net]=2 [runtime]=3 [llm]=4 [memory]=4 [cmdline]=4 [assistant]=5 [repl]=5 [serve]=5 [casestudies]=6 [agentbench]=6 [cli]=7)

# Prints one line per violation under ROOT/hub ("file: why"); prints nothing if none.
violations() {
    local root=$1 f folder inc target trank
    for f in "$root"/hub/*.[ch]; do
        [ -e "$f" ] && echo "${f#$root/}: stands outside hub/'s folders"
    done
    for f in "$root"/hub/*/*.[ch]; do
        [ -e "$f" ] || continue
        folder=${f#$root/hub/}
        folder=${folder%%/*}
        if [ -z "${RANK[$folder]:-}" ]; then
            echo "${f#$root/}: hub/$folder/ is not a known layer (add it to tests/unit/test_layout.sh)"
            continue
        fi
        while IFS= read -r inc; do
            case "$inc" in
            hub/* | ../* | ./*)
                echo "${f#$root/}: includes \"$inc\" (write \"folder/x.h\" across folders, \"x.h\" within)"
                ;;
            */*)
                target=${inc%%/*}
                [ -n "${RANK[$target]:-}" ] || continue # another component (nsjail-lite/jail.h)
                trank=${RANK[$target]}
                if [ "$target" = "$folder" ]; then
                    echo "${f#$root/}: includes its own folder's \"$inc\" by folder (write \"${inc#*/}\")"
                elif [ "$inc" != "$target/$target.h" ]; then
                    echo "${f#$root/}: includes \"$inc\", internal to hub/$target/ (its interface is $target/$target.h)"
                elif [ "$trank" -ge "${RANK[$folder]}" ]; then
                    echo "${f#$root/}: hub/$folder/ includes \"$inc\" from a layer not below its own"
                fi
                ;;
            *)
                # A plain name is this folder's header or lib/'s; another folder's header
                # named plainly would only resolve through an -I of its own.
                [ -e "$root/hub/$folder/$inc" ] && continue
                local other
                for other in "$root"/hub/*/"$inc"; do
                    [ -e "$other" ] && echo "${f#$root/}: includes \"$inc\" of ${other#$root/} by its plain name"
                done
                ;;
            esac
        done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
    done
}

out=$(violations .)
if [ -z "$out" ]; then
    echo "ok - hub/: every file in a layer's folder, includes one way, only public headers across folders"
else
    while IFS= read -r line; do echo "not ok - layout: $line"; done <<<"$out"
fi

# The runtime holds the runtime alone: the network, the secret store and the
# configuration are folders of their own (issue 39).
strays=$(cd hub/runtime && ls net_* secret* standin* keylike* hubca* config.* manifest.* 2>/dev/null | tr '\n' ' ')
if [ -z "$strays" ]; then
    echo "ok - hub/runtime/ holds no network, secret-store or configuration files"
else
    echo "not ok - hub/runtime/ holds files of other folders: $strays"
fi

# The public headers the check names exist (a folder whose interface went missing
# would otherwise pass by being unincludable).
for folder in "${!RANK[@]}"; do
    [ "$folder" = cli ] && continue
    if [ -f "hub/$folder/$folder.h" ]; then
        echo "ok - hub/$folder/ has its public header $folder/$folder.h"
    else
        echo "not ok - hub/$folder/ has its public header: hub/$folder/$folder.h is missing"
    fi
done

# The check itself, against a scratch tree with one violation of each kind.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/test_layout.$$.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch"/hub/{runtime,llm,assistant,cli,odd}
touch "$scratch"/hub/runtime/{runtime.h,internal.h} "$scratch"/hub/llm/llm.h \
    "$scratch"/hub/assistant/assistant.h
printf '#include "runtime/runtime.h"\n#include "util.h"\n' >"$scratch/hub/llm/fine.c"
printf '#include "llm/llm.h"\n' >"$scratch/hub/runtime/up.c"
printf '#include "runtime/internal.h"\n' >"$scratch/hub/assistant/peek.c"
printf '#include "internal.h"\n' >"$scratch/hub/llm/plain.c"
printf '#include "hub/runtime/runtime.h"\n' >"$scratch/hub/cli/old.c"
printf '#include "assistant/assistant.h"\n' >"$scratch/hub/assistant/self.c"
printf '#include "llm/llm.h"\n' >"$scratch/hub/odd/new.c"
touch "$scratch/hub/loose.c"
bad=$(violations "$scratch")
expect() { # what, pattern
    if grep -q -- "$2" <<<"$bad"; then
        echo "ok - the check catches $1"
    else
        echo "not ok - the check catches $1: no line matching '$2' in: $bad"
    fi
}
expect "a lower layer including a higher one" 'hub/runtime/up.c: hub/runtime/ includes "llm/llm.h" from a layer not below'
expect "another folder's internal header" 'hub/assistant/peek.c: includes "runtime/internal.h", internal to hub/runtime/'
expect "another folder's header by its plain name" 'hub/llm/plain.c: includes "internal.h" of hub/runtime/internal.h'
expect "the old hub/ path style" 'hub/cli/old.c: includes "hub/runtime/runtime.h"'
expect "its own folder named by folder" 'hub/assistant/self.c: includes its own folder'
expect "a folder that is not a layer" 'hub/odd/new.c: hub/odd/ is not a known layer'
expect "a file outside the folders" 'hub/loose.c: stands outside'
if grep -q 'fine.c' <<<"$bad"; then
    echo "not ok - the check lets a higher layer include a lower one's public header: $bad"
else
    echo "ok - the check lets a higher layer include a lower one's public header"
fi
