#!/usr/bin/env python3
"""Writes config/catalog/NAME.json for each server below, from manifests that
`hub spokes add` pinned (their tools, as the server listed them) and the lockfiles of
tests/mcpservers (the package's version and the registry's integrity).

    scripts/catalog-entries.py SPOKES_DIR [OUT_DIR]

SPOKES_DIR holds NAME.json for each server, added from the trees of
tests/mcpservers/node_modules and tests/mcpservers/corpus/node_modules (any isolation
mode, but namespace gives the tools as a jail sees them: desktop-commander describes
the host it finds itself on). What each server needs (hosts, keys, programs,
limits) is written here by hand, from its documentation and code."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCKS = [os.path.join(ROOT, "tests/mcpservers/package-lock.json"),
         os.path.join(ROOT, "tests/mcpservers/corpus/package-lock.json")]


def secret(env, name, hosts=None, header=None, query=None):
    s = {"env": env, "secret": name}
    if hosts:
        s["hosts"] = hosts
    if header:
        s["header"] = header
    if query:
        s["query"] = query
    return s


# name: npm package, title, description, keywords, and what it needs.
SERVERS = {
    "github": dict(npm="@modelcontextprotocol/server-github", title="GitHub",
                   description="Repositories, files, issues, pull requests, branches and code search on GitHub, through its REST API",
                   keywords=["git", "code", "repository", "issues", "pull requests", "devops"],
                   allow=["github.com"],
                   secrets=[secret("GITHUB_PERSONAL_ACCESS_TOKEN", "github", ["api.github.com"], "Authorization")]),
    "brave": dict(npm="@modelcontextprotocol/server-brave-search", title="Brave Search",
                  description="Web and local search with the Brave Search API",
                  keywords=["search", "web", "internet", "local businesses"],
                  allow=["brave.com"],
                  secrets=[secret("BRAVE_API_KEY", "brave", ["api.search.brave.com"], "X-Subscription-Token")]),
    "slack": dict(npm="@modelcontextprotocol/server-slack", title="Slack",
                  description="Channels, messages, threads, reactions and users of a Slack workspace, as its bot",
                  keywords=["chat", "messaging", "team", "channels"],
                  allow=["slack.com"], env={"SLACK_TEAM_ID": "${SLACK_TEAM_ID}"},
                  vars={"SLACK_TEAM_ID": {"description": "the workspace's team ID (T...)"}},
                  secrets=[secret("SLACK_BOT_TOKEN", "slack", ["slack.com"], "Authorization")]),
    "gmaps": dict(npm="@modelcontextprotocol/server-google-maps", title="Google Maps",
                  description="Geocoding, places, directions, distances and elevation from the Google Maps Platform",
                  keywords=["maps", "places", "directions", "location", "geography"],
                  allow=["maps.googleapis.com"],
                  secrets=[secret("GOOGLE_MAPS_API_KEY", "gmaps", ["maps.googleapis.com"], query="key")]),
    "postgres": dict(npm="@modelcontextprotocol/server-postgres", title="PostgreSQL",
                     description="Read-only SQL queries and table schemas of a PostgreSQL database",
                     keywords=["database", "sql", "postgresql", "tables"],
                     args=["postgresql://${PG_ADDR}/${PG_DATABASE}"], tcp=["${PG_ADDR}"],
                     vars={"PG_ADDR": {"default": "127.0.0.1:5432", "description": "the server's HOST:PORT (a raw TCP grant)"},
                           "PG_DATABASE": {"default": "postgres", "description": "the database"}}),
    "gitlab": dict(npm="@modelcontextprotocol/server-gitlab", title="GitLab",
                   description="Projects, files, issues, merge requests and branches on GitLab, through its REST API",
                   keywords=["git", "code", "repository", "issues", "merge requests", "devops"],
                   allow=["gitlab.com"],
                   secrets=[secret("GITLAB_PERSONAL_ACCESS_TOKEN", "gitlab", ["gitlab.com"], "Authorization")]),
    "redis": dict(npm="@modelcontextprotocol/server-redis", title="Redis",
                  description="Get, set, delete and list keys of a Redis server",
                  keywords=["database", "cache", "key-value", "redis"],
                  args=["redis://${REDIS_ADDR}"], tcp=["${REDIS_ADDR}"],
                  vars={"REDIS_ADDR": {"default": "127.0.0.1:6379", "description": "the server's HOST:PORT (a raw TCP grant)"}}),
    "pdf": dict(npm="@modelcontextprotocol/server-pdf", title="PDF",
                description="Read, search and display PDF documents of its /data and roots",
                keywords=["pdf", "documents", "read", "files"], args=["--stdio"]),
    "desktop": dict(npm="@wonderwhy-er/desktop-commander", title="Desktop Commander",
                    description="Files, search and edits in its /data, and long-running processes (none may start in the jail without --exec)",
                    keywords=["files", "edit", "search", "filesystem", "terminal"]),
    "time": dict(npm="time-mcp", title="Time",
                 description="The current time, time zones, relative times and calendars",
                 keywords=["time", "date", "timezone", "calendar", "clock"]),
    "kubernetes": dict(npm="mcp-server-kubernetes", title="Kubernetes",
                       description="Pods, deployments, services, logs and Helm charts of a Kubernetes cluster, through kubectl",
                       keywords=["kubernetes", "cluster", "containers", "devops", "kubectl", "helm"],
                       limits={"nofile": 4096}),
    "git": dict(npm="@cyanheads/git-mcp-server", title="Git",
                description="Git repositories in its /data: init, clone, status, diff, commit, branches, log, tags, worktrees",
                keywords=["git", "version control", "repository", "commit", "branch"],
                exec=["git"]),
    "exa": dict(npm="exa-mcp-server", title="Exa",
                description="Web search and page contents from the Exa search API",
                keywords=["search", "web", "research", "crawl"],
                allow=["exa.ai"],
                secrets=[secret("EXA_API_KEY", "exa", ["api.exa.ai"], "x-api-key")]),
    "context7": dict(npm="@upstash/context7-mcp", title="Context7",
                     description="Up-to-date documentation and code examples of libraries, from Context7",
                     keywords=["documentation", "docs", "libraries", "code examples", "api reference"],
                     allow=["context7.com"]),
    "tavily": dict(npm="tavily-mcp", title="Tavily",
                   description="Web search, extraction, crawling and site maps from the Tavily API",
                   keywords=["search", "web", "research", "crawl", "extract"],
                   allow=["tavily.com"],
                   # The key also goes in request bodies (api_key), where netproxy does
                   # not put it: the spoke's environment holds it.
                   secrets=[secret("TAVILY_API_KEY", "tavily")]),
    "firecrawl": dict(npm="firecrawl-mcp", title="Firecrawl",
                      description="Scrape, crawl, map, search and extract web pages with the Firecrawl API",
                      keywords=["scrape", "crawl", "web", "search", "extract"],
                      allow=["firecrawl.dev"],
                      secrets=[secret("FIRECRAWL_API_KEY", "firecrawl", ["api.firecrawl.dev"], "Authorization")]),
    "everything": dict(npm="@modelcontextprotocol/server-everything", title="Everything (MCP test server)",
                       description="MCP's reference test server: echo, sums, images, resources, prompts, sampling and elicitation",
                       keywords=["test", "demo", "echo", "mcp"]),
    "filesystem": dict(npm="@modelcontextprotocol/server-filesystem", title="Filesystem",
                       description="Read, write, edit, move and search files in its /data",
                       keywords=["files", "directories", "read", "write", "filesystem"],
                       args=["/data"]),
    "memory": dict(npm="@modelcontextprotocol/server-memory", title="Memory",
                   description="A knowledge graph of entities, relations and observations kept in its /data",
                   keywords=["memory", "knowledge graph", "notes", "remember"],
                   env={"MEMORY_FILE_PATH": "/data/memory.jsonl"}),
    "sequential": dict(npm="@modelcontextprotocol/server-sequential-thinking", title="Sequential Thinking",
                       description="A tool for step-by-step reflective problem solving",
                       keywords=["thinking", "reasoning", "planning"]),
}


def lock_entry(npm):
    for path in LOCKS:
        lock = json.load(open(path))
        e = lock["packages"].get("node_modules/" + npm)
        if e:
            return e
    raise SystemExit("no %s in the lockfiles" % npm)


def main():
    spokes = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "config/catalog")
    os.makedirs(out, exist_ok=True)
    for name, s in SERVERS.items():
        m = json.load(open(os.path.join(spokes, name + ".json")))
        lock = lock_entry(s["npm"])
        entry = {"name": name, "title": s["title"], "description": s["description"],
                 "keywords": s["keywords"],
                 "source": {"npm": s["npm"], "version": lock["version"],
                            "integrity": lock["integrity"]}}
        for key in ("args", "allow", "tcp", "exec", "env", "vars", "secrets", "limits"):
            if key in s:
                entry[key] = s[key]
        if m.get("protocol"):
            entry["protocol"] = m["protocol"]
        entry["tools"] = [{k: v for k, v in t.items() if k != "irreversible"} for t in m["tools"]]
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(entry, f, indent=1, ensure_ascii=True)
            f.write("\n")
    print("%d entries in %s" % (len(SERVERS), out))


if __name__ == "__main__":
    main()
