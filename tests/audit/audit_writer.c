/* audit_writer: writes records through lib/audit.h as the hub and netproxy do, for the
 * tamper tests (tests/audit/) and the chain's benchmark (scripts/bench/audit).
 *
 * audit_writer --out FILE [--key PEM] [--records N] [--every R] [--rotate-at I]...
 *              [--no-chain] [--time]
 *   --key        sign checkpoints with this key (made when missing); none: chained only
 *   --every R    a checkpoint every R records (default the library's)
 *   --rotate-at  after record I, rename FILE as logrotate does (FILE.1 -> FILE.2, ...,
 *                FILE -> FILE.1) and reopen, as SIGHUP does
 *   --no-chain   plain records (the benchmark's baseline)
 *   --time       print "records/s R cpu-records/s C" for the writes (closing excluded):
 *                R by the clock, C by the process's CPU time (user and system), which a
 *                loaded machine disturbs less */
#include "audit.h"
#include "auditchain.h"
#include "auditkey.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROTATIONS 64

static void rotate_names(const char *out)
{
    /* Shift FILE.k -> FILE.k+1 from the highest that exists, then FILE -> FILE.1. */
    int top = 0;
    for (;;) {
        char *p = xasprintf("%s.%d", out, top + 1);
        bool there = access(p, F_OK) == 0;
        free(p);
        if (!there)
            break;
        top++;
    }
    for (int k = top; k >= 1; k--) {
        char *from = xasprintf("%s.%d", out, k), *to = xasprintf("%s.%d", out, k + 1);
        rename(from, to);
        free(from);
        free(to);
    }
    char *to = xasprintf("%s.1", out);
    rename(out, to);
    free(to);
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *key_path = NULL;
    unsigned long long records = 10, every = 0;
    unsigned long long rotate_at[MAX_ROTATIONS];
    size_t nrot = 0;
    bool chain = true, timed = false;
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"key", required_argument, NULL, 'k'},
                                         {"records", required_argument, NULL, 'n'},
                                         {"every", required_argument, NULL, 'e'},
                                         {"rotate-at", required_argument, NULL, 'r'},
                                         {"no-chain", no_argument, NULL, 'c'},
                                         {"time", no_argument, NULL, 't'},
                                         {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            out = optarg;
            break;
        case 'k':
            key_path = optarg;
            break;
        case 'n':
            records = strtoull(optarg, NULL, 10);
            break;
        case 'e':
            every = strtoull(optarg, NULL, 10);
            break;
        case 'r':
            if (nrot < MAX_ROTATIONS)
                rotate_at[nrot++] = strtoull(optarg, NULL, 10);
            break;
        case 'c':
            chain = false;
            break;
        case 't':
            timed = true;
            break;
        default:
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "audit_writer: --out FILE\n");
        return 2;
    }
    char err[512];
    struct audit *a = audit_open(out, "audit-writer", err, sizeof(err));
    if (!a) {
        fprintf(stderr, "audit_writer: %s\n", err);
        return 1;
    }
    EVP_PKEY *key = NULL;
    if (chain) {
        struct auditchain_opts o = {.every_records = every};
        if ((key_path && !(key = auditkey_load_or_create(key_path, err, sizeof(err)))) ||
            auditchain_attach(a, key, &o, err, sizeof(err)) < 0) {
            fprintf(stderr, "audit_writer: %s\n", err);
            audit_close(a);
            EVP_PKEY_free(key);
            return 1;
        }
    }
    uint64_t t0 = now_mono_ns(), c0 = cpu_ns();
    for (unsigned long long i = 1; i <= records; i++) {
        /* A record shaped like netproxy's decision record. */
        json_t *rec = json_object();
        audit_set_str(rec, "event.kind", "event");
        audit_set_str(rec, "event.action", "connect");
        audit_set_str(rec, "event.outcome", i % 3 ? "success" : "failure");
        audit_set_str(rec, "destination.domain", "api.example.com");
        audit_set_int(rec, "destination.port", 443);
        audit_set_str(rec, "isolate.spoke.id", "metro_hail-1");
        audit_set_int(rec, "isolate.test.n", (int64_t)i);
        if (audit_write(a, rec) < 0) {
            perror("audit_writer: write");
            return 1;
        }
        for (size_t r = 0; r < nrot; r++)
            if (rotate_at[r] == i) {
                rotate_names(out);
                if (audit_reopen(a) < 0) {
                    perror("audit_writer: reopen");
                    return 1;
                }
            }
    }
    uint64_t t1 = now_mono_ns(), c1 = cpu_ns();
    audit_close(a);
    EVP_PKEY_free(key);
    if (timed)
        printf("records/s %.0f cpu-records/s %.0f\n",
               (double)records * 1e9 / (double)(t1 - t0 ? t1 - t0 : 1),
               (double)records * 1e9 / (double)(c1 - c0 ? c1 - c0 : 1));
    return 0;
}
