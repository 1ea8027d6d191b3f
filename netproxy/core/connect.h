/* The CONNECT request: an incremental HTTP/1.x request-head parser and the
 * authority-form target ("host:port").
 *
 * The parser is fed the whole buffer received so far and resumes where it stopped, so
 * a client trickling one byte at a time costs O(n) in total. It refuses at the first
 * byte that cannot be part of a valid request (a TLS ClientHello fails on its first
 * byte, a bare LF as soon as it arrives), and past the size limits it stops with
 * 414 / 431 without waiting for the rest. Nothing here allocates. */
#ifndef NETPROXY_CONNECT_H
#define NETPROXY_CONNECT_H

#include "reason.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct req_limits {
    size_t max_line;         /* request line, CRLF included (default 8 KiB) */
    size_t max_header_bytes; /* header section after the request line (default 32 KiB) */
    unsigned max_headers;    /* header fields (default 100) */
};

enum req_status { REQ_MORE, REQ_DONE, REQ_ERROR };

struct req_span {
    size_t off, len;
};

struct req_parser {
    struct req_limits lim;
    int state;
    size_t pos;      /* bytes of the buffer consumed so far */
    size_t line_len; /* request line bytes so far */
    size_t hdr_bytes;
    unsigned headers;
    struct req_span method, target, version;
    struct req_span field_name, field_value; /* the field being parsed */
    struct req_span user_agent;              /* len 0 when absent */
    struct req_span host;                    /* the Host field's value; len 0 when absent */
    unsigned host_fields;                    /* how many Host fields there were */
    int version_minor;                       /* 0 or 1 once line_done */
    bool line_done;                          /* the request line was valid */
    /* Set on REQ_ERROR: the code and a fixed one-line explanation. */
    enum reason error;
    const char *detail;
};

void req_init(struct req_parser *p, const struct req_limits *lim);
/* buf holds every byte received so far (len grows between calls). On REQ_DONE, pos
 * is the length of the request head: bytes after it are tunnel data the client sent
 * early. REQ_DONE does not mean the method is CONNECT: check req_is_connect(). */
enum req_status req_feed(struct req_parser *p, const char *buf, size_t len);
bool req_is_connect(const struct req_parser *p, const char *buf);

/* An authority-form target split into host and port. */
struct authority {
    const char *host; /* points into the target; not terminated */
    size_t host_len;
    bool bracketed; /* "[v6]:port" */
    uint16_t port;
};

/* Parses "host:port" or "[v6addr]:port". On failure returns false and a fixed
 * explanation in *why (userinfo, percent-encoding, a bracketed name, a bad port...). */
bool authority_parse(const char *target, size_t len, struct authority *out, const char **why);

/* Copies the target for logging with any userinfo ("user:pass@") replaced by
 * "[redacted]@", so credentials never reach the audit log. out gets at most size-1
 * bytes; the copy is raw (the audit writer sanitises it). Returns the length. */
size_t target_redact(const char *target, size_t len, char *out, size_t size);

#endif
