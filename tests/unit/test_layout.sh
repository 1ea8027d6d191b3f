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
    for f in "$root"/hub/*/*.[ch] "$root"/hub/*/*/*.[ch]; do
        [ -e "$f" ] || continue
        folder=${f#$root/hub/}
        folder=${folder%%/*}
        # A sub-folder (hub/serve/auth/): its own headers plainly, its folder's shared
        # headers as "serve/x.h", a sibling sub-folder only by its one header
        # "serve/S/S.h" (from the folder's top: "S/S.h").
        local dir=${f%/*} sub=""
        [ "$dir" != "$root/hub/$folder" ] && sub=${dir##*/}
        if [ -z "${RANK[$folder]:-}" ]; then
            echo "${f#$root/}: hub/$folder/ is not a known layer (add it to tests/unit/test_layout.sh)"
            continue
        fi
        while IFS= read -r inc; do
            if [ -n "$sub" ] && [[ "$inc" == "$folder"/* ]]; then
                local rest=${inc#"$folder"/}
                if [[ "$rest" == */* ]]; then
                    local s2=${rest%%/*}
                    [ "$rest" = "$s2/$s2.h" ] && [ -d "$root/hub/$folder/$s2" ] ||
                        echo "${f#$root/}: includes \"$inc\", internal to hub/$folder/$s2/ (its interface is $folder/$s2/$s2.h)"
                elif [ ! -e "$root/hub/$folder/$rest" ]; then
                    echo "${f#$root/}: includes \"$inc\", which hub/$folder/ does not have"
                fi
                continue
            fi
            if [ -z "$sub" ] && [[ "$inc" == */* ]] && [ -d "$root/hub/$folder/${inc%%/*}" ]; then
                local s2=${inc%%/*}
                [ "$inc" = "$s2/$s2.h" ] ||
                    echo "${f#$root/}: includes \"$inc\", internal to hub/$folder/$s2/ (its interface is $s2/$s2.h)"
                continue
            fi
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
                [ -e "$dir/$inc" ] && continue
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

# netproxy/: a folder per path a connection takes, each with one header
# (netproxy/F/F.h) that the other folders include; at the top only main.c and
# netproxy.h (the process-wide state).
np_out=""
for f in netproxy/*.[ch]; do
    case "$f" in netproxy/main.c | netproxy/netproxy.h) ;; *) np_out+="$f: stands outside netproxy/'s folders"$'\n' ;; esac
done
for d in netproxy/*/; do
    d=${d%/}
    [ -f "$d/${d##*/}.h" ] || np_out+="$d/: has no header ${d##*/}.h"$'\n'
done
while IFS=: read -r f inc; do
    [ -n "$f" ] || continue
    own=${f#netproxy/}
    own=${own%%/*}
    t=${inc#netproxy/}
    t=${t%%/*}
    [ "$inc" = "netproxy/netproxy.h" ] && continue
    if [ "$t" = "$own" ]; then
        np_out+="$f: names its own folder's \"$inc\" by path"$'\n'
    elif [ "$inc" != "netproxy/$t/$t.h" ]; then
        np_out+="$f: includes \"$inc\", internal to netproxy/$t/"$'\n'
    fi
done < <(grep -o '^#include "netproxy/[^"]*"' netproxy/*.[ch] netproxy/*/*.[ch] | sed 's/#include "\(.*\)"/\1/')
if [ -z "$np_out" ]; then
    echo "ok - netproxy/: every file in a path's folder, each folder reached by its one header"
else
    while IFS= read -r line; do [ -n "$line" ] && echo "not ok - netproxy layout: $line"; done <<<"$np_out"
fi

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
mkdir -p "$scratch"/hub/assistant/{talk,plan}
touch "$scratch"/hub/assistant/talk/{talk.h,inner.h} "$scratch"/hub/assistant/plan/plan.h \
    "$scratch"/hub/assistant/shared.h
printf '#include "assistant/shared.h"\n#include "assistant/plan/plan.h"\n#include "inner.h"\n' \
    >"$scratch/hub/assistant/talk/fine2.c"
printf '#include "assistant/talk/inner.h"\n' >"$scratch/hub/assistant/plan/sibling.c"
printf '#include "talk/inner.h"\n' >"$scratch/hub/assistant/top.c"
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
expect "a sibling sub-folder's internal header" 'hub/assistant/plan/sibling.c: includes "assistant/talk/inner.h", internal to hub/assistant/talk/'
expect "a sub-folder's internal header from its folder's top" 'hub/assistant/top.c: includes "talk/inner.h", internal to hub/assistant/talk/'
if grep -q 'fine2\?.c' <<<"$bad"; then
    echo "not ok - the check lets a higher layer include a lower one's public header: $bad"
else
    echo "ok - the check lets a higher layer include a lower one's public header"
fi
