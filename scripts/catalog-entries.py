#!/usr/bin/env python3
"""Writes config/catalog/NAME.json for each server below, from manifests that
`hub spokes add` pinned (their tools, as the server listed them) and the lockfiles of
tests/mcpservers (the package's version and the registry's integrity).

    scripts/catalog-entries.py SPOKES_DIR [OUT_DIR]

SPOKES_DIR holds NAME.json for each server, added from the trees of
tests/mcpservers/node_modules, tests/mcpservers/corpus/node_modules and
tests/catalog/npm/node_modules (any isolation
mode, but namespace gives the tools as a jail sees them: desktop-commander describes
the host it finds itself on). What each server needs (hosts, keys, programs,
limits) is written here by hand, from its documentation and code."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCKS = [os.path.join(ROOT, "tests/mcpservers/package-lock.json"),
         os.path.join(ROOT, "tests/mcpservers/corpus/package-lock.json"),
         os.path.join(ROOT, "tests/catalog/npm/package-lock.json")]


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
    "notion": dict(npm="@notionhq/notion-mcp-server", title="Notion",
                   description="Pages, databases, blocks, comments, users and search of a Notion workspace, through its API",
                   keywords=["notes", "wiki", "pages", "databases", "documents"],
                   allow=["notion.com"],
                   secrets=[secret("NOTION_TOKEN", "notion", ["api.notion.com"], "Authorization")]),
    "hubspot": dict(npm="@hubspot/mcp-server", title="HubSpot",
                    description="CRM objects of HubSpot: contacts, companies, deals, tickets, their associations, notes and tasks",
                    keywords=["crm", "sales", "contacts", "deals", "marketing"],
                    allow=["hubspot.com"],
                    secrets=[secret("PRIVATE_APP_ACCESS_TOKEN", "hubspot", ["api.hubspot.com"], "Authorization")]),
    "airtable": dict(npm="airtable-mcp-server", title="Airtable",
                     description="Bases, tables, fields and records of Airtable: list, search, create, update, delete",
                     keywords=["spreadsheet", "database", "tables", "records", "no-code"],
                     allow=["airtable.com"],
                     secrets=[secret("AIRTABLE_API_KEY", "airtable", ["api.airtable.com"], "Authorization")]),
    "perplexity": dict(npm="@perplexity-ai/mcp-server", title="Perplexity",
                       description="Answers, reasoning, deep research and web search from the Perplexity API (Sonar models)",
                       keywords=["search", "web", "research", "answers", "ai"],
                       allow=["perplexity.ai"],
                       secrets=[secret("PERPLEXITY_API_KEY", "perplexity", ["api.perplexity.ai"], "Authorization")]),
    "figma": dict(npm="figma-developer-mcp", title="Figma (Framelink)",
                  description="The layout and styles of Figma files and frames, and their images, for implementing designs",
                  keywords=["design", "ui", "figma", "frames", "images"],
                  args=["--stdio"], allow=["figma.com"], env={"DO_NOT_TRACK": "1"},
                  secrets=[secret("FIGMA_API_KEY", "figma", ["api.figma.com"], "X-Figma-Token")]),
    "mongodb": dict(npm="mongodb-mcp-server", title="MongoDB",
                    description="Databases, collections, queries, aggregations and indexes of a MongoDB server",
                    keywords=["database", "nosql", "mongodb", "documents", "query"],
                    tcp=["${MDB_ADDR}"],
                    env={"MDB_MCP_CONNECTION_STRING": "mongodb://${MDB_ADDR}/${MDB_DATABASE}",
                         "MDB_MCP_TELEMETRY": "disabled"},
                    vars={"MDB_ADDR": {"default": "127.0.0.1:27017", "description": "the server's HOST:PORT (a raw TCP grant)"},
                          "MDB_DATABASE": {"default": "test", "description": "the database"}}),
    "circleci": dict(npm="@circleci/mcp-server-circleci", title="CircleCI",
                     description="Pipelines, builds, failure logs, flaky tests and artifacts of CircleCI projects",
                     keywords=["ci", "builds", "pipelines", "tests", "devops"],
                     allow=["circleci.com"],
                     secrets=[secret("CIRCLECI_TOKEN", "circleci", ["circleci.com"], "Circle-Token")]),
    "mapbox": dict(npm="@mapbox/mcp-server", title="Mapbox",
                   description="Geocoding, directions, isochrones, matrices, static maps and geometry from Mapbox",
                   keywords=["maps", "geocoding", "directions", "geometry", "location"],
                   allow=["mapbox.com"],
                   # The server decodes its token (a JWT): a stand-in would not do.
                   secrets=[secret("MAPBOX_ACCESS_TOKEN", "mapbox")]),
    "linear": dict(npm="linear-mcp-server", title="Linear",
                   description="Issues of Linear: create, update, search, comment, and a user's issues",
                   keywords=["issues", "tickets", "project management", "tracker"],
                   allow=["linear.app"],
                   secrets=[secret("LINEAR_API_KEY", "linear", ["api.linear.app"], "Authorization")]),
    "everart": dict(npm="@modelcontextprotocol/server-everart", title="EverArt",
                    description="Images generated from a prompt by EverArt's models",
                    keywords=["image", "generation", "art", "ai"],
                    allow=["everart.ai"],
                    secrets=[secret("EVERART_API_KEY", "everart", ["api.everart.ai"], "Authorization")]),
    "youtube": dict(npm="@kimtaeyoon83/mcp-server-youtube-transcript", title="YouTube transcripts",
                    description="The transcript (captions) of a YouTube video",
                    keywords=["youtube", "video", "transcript", "captions", "subtitles"],
                    allow=["youtube.com"]),
    "awskb": dict(npm="@modelcontextprotocol/server-aws-kb-retrieval", title="AWS Knowledge Base",
                  description="Retrieval from an AWS Bedrock knowledge base (RAG)",
                  keywords=["aws", "bedrock", "knowledge base", "rag", "retrieval"],
                  allow=["bedrock-agent-runtime.${AWS_REGION}.amazonaws.com"],
                  env={"AWS_REGION": "${AWS_REGION}"},
                  vars={"AWS_REGION": {"default": "us-east-1", "description": "the knowledge base's region"}},
                  # SigV4 signs with the secret key: it cannot be put in on the way out.
                  secrets=[secret("AWS_ACCESS_KEY_ID", "aws-key-id"),
                           secret("AWS_SECRET_ACCESS_KEY", "aws-secret-key")]),
    "line": dict(npm="@line/line-bot-mcp-server", title="LINE",
                 description="Messages, profiles, followers and rich menus of a LINE Official Account, as its bot",
                 keywords=["chat", "messaging", "line", "bot"],
                 # No DESTINATION_USER_ID: the server writes it into its tools' schemas,
                 # which would then differ from the entry's for every user.
                 allow=["line.me"],
                 secrets=[secret("CHANNEL_ACCESS_TOKEN", "line", ["api.line.me"], "Authorization")]),
    "pinecone": dict(npm="@pinecone-database/mcp", title="Pinecone",
                     description="Pinecone's documentation, and the indexes and records of a Pinecone project: describe, upsert, search, rerank",
                     keywords=["vector database", "embeddings", "search", "rag", "index"],
                     allow=["pinecone.io"],
                     secrets=[secret("PINECONE_API_KEY", "pinecone", ["api.pinecone.io"], "Api-Key")]),
    "browserbase": dict(npm="@browserbasehq/mcp-server-browserbase", title="Browserbase",
                        description="Cloud browser sessions on Browserbase, driven in plain words with Stagehand: navigate, act, extract, observe, screenshot",
                        keywords=["browser", "automation", "web", "scrape", "headless"],
                        allow=["browserbase.com", "generativelanguage.googleapis.com"],
                        env={"BROWSERBASE_PROJECT_ID": "${BROWSERBASE_PROJECT_ID}"},
                        vars={"BROWSERBASE_PROJECT_ID": {"description": "the Browserbase project"}},
                        secrets=[secret("BROWSERBASE_API_KEY", "browserbase", ["api.browserbase.com", "api.stagehand.browserbase.com"], "X-BB-API-Key"),
                                 # Stagehand's API is sent the model's key too (it calls the model).
                                 secret("GEMINI_API_KEY", "gemini", ["generativelanguage.googleapis.com", "api.stagehand.browserbase.com"])]),
    "lara": dict(npm="@translated/lara-mcp", title="Lara Translate",
                 description="Translation, language detection, translation memories and glossaries from Lara Translate",
                 keywords=["translate", "translation", "language", "localization", "glossary"],
                 allow=["laratranslate.com"],
                 # Requests are signed with the secret (HMAC): it stays in the environment.
                 secrets=[secret("LARA_ACCESS_KEY_ID", "lara-key-id"),
                          secret("LARA_ACCESS_KEY_SECRET", "lara-key-secret")]),
    "elasticsearch": dict(npm="@elastic/mcp-server-elasticsearch", title="Elasticsearch",
                          description="Indices, mappings, shards and searches (query DSL) of an Elasticsearch cluster",
                          keywords=["search engine", "database", "elasticsearch", "index", "logs"],
                          tcp=["${ES_ADDR}"], env={"ES_URL": "http://${ES_ADDR}"},
                          vars={"ES_ADDR": {"default": "127.0.0.1:9200", "description": "the cluster's HOST:PORT (a raw TCP grant; plain HTTP)"}},
                          # Plain HTTP through a raw TCP grant: netproxy puts nothing in.
                          secrets=[secret("ES_API_KEY", "elasticsearch")]),
    "shopify": dict(npm="@shopify/dev-mcp", title="Shopify Dev",
                    description="Shopify's developer documentation and API schemas (Admin GraphQL, Storefront, Liquid): search, learn, validate",
                    keywords=["shopify", "e-commerce", "documentation", "graphql", "liquid"],
                    allow=["shopify.dev"]),
    "netlify": dict(npm="@netlify/mcp", title="Netlify",
                    description="Netlify projects, deploys, teams, extensions and the user, read and changed through its API",
                    keywords=["hosting", "deploy", "web sites", "jamstack", "devops"],
                    allow=["netlify.com"],
                    secrets=[secret("NETLIFY_PERSONAL_ACCESS_TOKEN", "netlify", ["api.netlify.com"], "Authorization")]),
    "postman": dict(npm="@postman/postman-mcp-server", title="Postman",
                    description="Postman workspaces, collections, requests, environments, mocks and API specs",
                    keywords=["api", "collections", "testing", "http", "specs"],
                    allow=["postman.com"], env={"POSTMAN_MCP_TELEMETRY": "false"},
                    secrets=[secret("POSTMAN_API_KEY", "postman", ["api.postman.com"], "x-api-key")]),
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
