/* Tool tables of testspoke; the manifests in tests/hub/manifests list the same tools. */
static const struct tool_def probe_tools[] = {
    {"whoami", "{\"type\":\"object\"}", NULL},
    {"echo", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"maxLength\":100000}},\"required\":[\"text\"]}", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}"},
    {"relay", "{\"type\":\"object\",\"properties\":{\"tool\":{\"type\":\"string\"},\"arguments\":{\"type\":\"object\"},\"meta\":{\"type\":\"object\"}},\"required\":[\"tool\"]}", NULL},
    {"env", "{\"type\":\"object\",\"properties\":{\"marker\":{\"type\":\"string\",\"minLength\":4}},\"required\":[\"marker\"]}", NULL},
    {"sleep", "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":600000}},\"required\":[\"ms\"]}", NULL},
    {"log", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}", NULL},
    {"write", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9_.-]+$\"},\"text\":{\"type\":\"string\"}},\"required\":[\"name\",\"text\"]}", NULL},
    {"read", "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}", NULL},
    {"ask", "{\"type\":\"object\"}", NULL},
    {"sample", "{\"type\":\"object\"}", NULL},
    {"connect", "{\"type\":\"object\",\"properties\":{\"host\":{\"type\":\"string\"},\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535}},\"required\":[\"host\",\"port\"]}", NULL},
    {"badresult", "{\"type\":\"object\"}", "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}"},
};
static const struct tool_def hostile_tools[] = {
    {"whoami", "{\"type\":\"object\"}", NULL},
    {"relay", "{\"type\":\"object\",\"properties\":{\"tool\":{\"type\":\"string\"},\"arguments\":{\"type\":\"object\"},\"meta\":{\"type\":\"object\"}},\"required\":[\"tool\"]}", NULL},
    {"garbage", "{\"type\":\"object\"}", NULL},
    {"huge", "{\"type\":\"object\"}", NULL},
    {"silent", "{\"type\":\"object\"}", NULL},
    {"forkbomb", "{\"type\":\"object\",\"properties\":{\"max\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000}},\"required\":[\"max\"]}", NULL},
    {"exit", "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":255}},\"required\":[\"code\"]}", NULL},
    {"flood", "{\"type\":\"object\"}", NULL},
    {"unsolicited", "{\"type\":\"object\"}", NULL},
    {"spin", "{\"type\":\"object\"}", NULL},
    {"memfd", "{\"type\":\"object\",\"properties\":{\"mb\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":4096}},\"required\":[\"mb\"]}", NULL},
    {"impersonate", "{\"type\":\"object\",\"properties\":{\"tool\":{\"type\":\"string\"},\"as\":{\"type\":\"string\"}},\"required\":[\"tool\",\"as\"]}", NULL},
};
