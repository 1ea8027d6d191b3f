#!/usr/bin/env bash
# README.md and docs/*.md: every relative link names a file of the tree, and every
# #anchor a heading of the page it points at (GitHub's slugs). Checked on the tree, and
# on a scratch copy with a broken link and a broken anchor, which must both be caught.
. "$(dirname "$0")/../lib.sh"
check_links() { # ROOT: prints one line per broken link
    /usr/bin/python3 - "$1" <<'PYEOF'
import os, re, sys
root = sys.argv[1]
def slugs(path):
    out, seen = set(), {}
    fence = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip()
        s = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out
pages = [os.path.join(root, "README.md")] + sorted(
    os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
for page in pages:
    text = open(page, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        where = os.path.relpath(page, root)
        if not os.path.exists(dest):
            print(f"{where}: {target}: no such file")
        elif anchor and dest.endswith(".md") and anchor not in slugs(dest):
            print(f"{where}: {target}: no such heading")
PYEOF
}
out=$(check_links "$ROOT")
is "README.md and docs/: every relative link and anchor resolves" "$out" ""
# The check must fail on what it is meant to catch.
mkdir -p "$TMP/tree/docs"
cp "$ROOT/README.md" "$TMP/tree/" && cp "$ROOT"/docs/*.md "$TMP/tree/docs/"
echo '[gone](docs/no-such-page.md) [bad](docs/serve.md#no-such-heading)' >>"$TMP/tree/README.md"
out=$(check_links "$TMP/tree")
like "a link to a missing page is caught" "$out" 'no-such-page.md: no such file'
like "a link to a missing heading is caught" "$out" 'serve.md#no-such-heading: no such heading'
done_testing
