/* Test helpers for the LLM client: a private temp directory, the stand-in server
 * (openai_standin) started per case with its script, and its request log. */
#ifndef TESTS_LLM_HARNESS_H
#define TESTS_LLM_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct standin {
    pid_t pid;
    int port;
    char script[512];
    char log[512];
    char base_url[64];
};

/* A fresh directory /tmp/itest-llm-<pid>-XXXXXX, removed by harness_cleanup(). */
const char *harness_dir(void);
void harness_cleanup(void);
/* Writes text to harness_dir()/name; returns the path (static storage per call). */
const char *harness_write(const char *name, const char *text);
/* JSON written with ' for " (test scripts read better); no literal ' possible. */
char *harness_json(const char *squoted);

/* Starts the stand-in with the script (single-quoted JSON, see harness_json). */
bool standin_start(struct standin *s, const char *squoted_script);
void standin_stop(struct standin *s);
/* The requests the stand-in received so far, as a JSON array (caller decrefs). */
json_t *standin_requests(const struct standin *s);
/* Request i's body parsed as JSON (NULL if none); caller decrefs. */
json_t *standin_body(json_t *requests, size_t i);

/* Milliseconds between two steady-clock readings from now_mono_ns(). */
long harness_ms(unsigned long long from_ns, unsigned long long to_ns);

#endif
