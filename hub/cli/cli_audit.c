/* `hub audit verify [--config F] [--key PEM]... FILE...`: checks a set of the hub's or
 * netproxy's audit files (lib/auditverify.h): exit 0 for an intact, sealed set; else
 * the first fault (FILE:LINE: what) on stderr and an exit code a cron job can act on:
 *   1 a record changed, deleted, inserted or reordered, or a file of the set missing,
 *   3 a bad signature, or a checkpoint signed with a key not given,
 *   4 records after the last signed checkpoint (a cut tail, or a writer still running),
 *   5 a file that cannot be read, 2 bad options or no key.
 * `hub audit pubkey [--netproxy] [--config F]`: the public half of the hub's audit key
 * (PEM), or of its netproxy's, for the SIEM side and for `verify --key` where the hub's
 * state directory is not at hand. */
#include "cmdline/cmdline.h"
#include "runtime/runtime.h"
#include "auditkey.h"
#include "auditverify.h"
#include "log.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_audit(int argc, char **argv);

#define MAX_KEYS 16

static void usage(FILE *f)
{
    fprintf(f, "usage: hub audit verify [--config F] [--key PEM]... FILE...\n"
               "       hub audit pubkey [--netproxy] [--config F]\n"
               "verify checks that the audit files (a rotated set, in any order) are one\n"
               "unbroken hash chain sealed by signed checkpoints. Exit 0 when intact; else the\n"
               "first bad record as FILE:LINE on stderr and: 1 a record changed, deleted,\n"
               "inserted or reordered (or a file of the set missing), 3 a bad signature, 4\n"
               "records after the last checkpoint (a cut tail, or a writer still running),\n"
               "5 a file that cannot be read, 2 bad options.\n"
               "pubkey prints the public key that signs the hub's checkpoints (PEM), or with\n"
               "--netproxy the one that signs its netproxy's.\n\n"
               "  --key PEM          a public (or private) Ed25519 key to check signatures\n"
               "                     with (repeatable); default: the hub's and its netproxy's\n"
               "  --config FILE      the hub's configuration (where its state directory is)\n"
               "  -h, --help         this help\n");
}

/* A key of the state directory, read only: verify and pubkey never make one. */
static EVP_PKEY *state_key(const struct hub_config *cfg, bool netproxy, bool quiet)
{
    char err[512];
    char *path = netproxy ? config_netproxy_key_path(cfg) : config_audit_key_path(cfg);
    EVP_PKEY *k = access(path, F_OK) == 0 ? auditkey_load(path, err, sizeof(err)) : NULL;
    if (!k && !quiet)
        log_warnx("no audit key at %s (made when %s first writes its audit; or give --key)", path,
                  netproxy ? "the hub's netproxy" : "the hub");
    free(path);
    return k;
}

static int do_pubkey(const struct hub_config *cfg, bool netproxy)
{
    EVP_PKEY *k = state_key(cfg, netproxy, false);
    if (!k)
        return EXIT_USAGE;
    char *pem = auditkey_public_pem(k);
    char id[AUDITKEY_ID_LEN + 1] = "";
    auditkey_id(k, id);
    EVP_PKEY_free(k);
    if (!pem)
        return EXIT_USAGE;
    fputs(pem, stdout);
    fprintf(stderr, "key id %s\n", id);
    free(pem);
    return EXIT_OK;
}

static int do_verify(const struct hub_config *cfg, char **key_files, size_t nkey_files,
                     char **files, size_t nfiles)
{
    EVP_PKEY *keys[MAX_KEYS];
    size_t nkeys = 0;
    int rc = EXIT_OK;
    for (size_t i = 0; i < nkey_files; i++) {
        char err[512];
        if (!(keys[nkeys] = auditkey_load(key_files[i], err, sizeof(err)))) {
            log_warnx("%s", err);
            rc = EXIT_USAGE;
            break;
        }
        nkeys++;
    }
    if (rc == EXIT_OK && nkeys == 0) {
        /* The hub's key and its netproxy's: either log may be in the set. */
        if ((keys[nkeys] = state_key(cfg, false, false)))
            nkeys++;
        if ((keys[nkeys] = state_key(cfg, true, true)))
            nkeys++;
        if (nkeys == 0)
            rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK) {
        struct auditverify_report r;
        enum auditverify_status st =
            auditverify_files((const char *const *)files, nfiles, keys, nkeys, &r);
        if (st == AV_OK)
            printf("intact: %llu records (seq %llu to %llu) in %zu file(s), %llu signed "
                   "checkpoints, the last at %s\n",
                   (unsigned long long)r.records, (unsigned long long)r.first_seq,
                   (unsigned long long)r.last_seq, nfiles, (unsigned long long)r.checkpoints,
                   r.sealed_at);
        else
            fprintf(stderr, "hub audit verify: %s\n", r.what);
        rc = (int)st;
    }
    for (size_t i = 0; i < nkeys; i++)
        EVP_PKEY_free(keys[i]);
    return rc;
}

int cmd_audit(int argc, char **argv)
{
    static const struct option opts[] = {{"key", required_argument, NULL, 'k'},
                                         {"netproxy", no_argument, NULL, 'n'},
                                         CLI_COMMON_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    struct cli_args a = {.argc = argc, .argv = argv, .opts = opts, .usage = usage};
    char *key_files[MAX_KEYS];
    size_t nkey_files = 0;
    bool netproxy = false;
    int opt;
    while ((opt = cli_next_option(&a)) >= 0) {
        if (opt == 'k') {
            if (nkey_files == MAX_KEYS) {
                log_warnx("at most %d --key", MAX_KEYS);
                return EXIT_USAGE;
            }
            key_files[nkey_files++] = optarg;
        } else if (opt == 'n') {
            netproxy = true;
        }
    }
    if (opt == CLI_OPTS_EXIT)
        return a.exit;
    const char *verb = optind < argc ? argv[optind] : NULL;
    bool verify = verb && strcmp(verb, "verify") == 0;
    bool pubkey = verb && strcmp(verb, "pubkey") == 0;
    int operands = argc - optind - 1;
    if ((!verify && !pubkey) || (verify && operands < 1) || (pubkey && operands != 0) ||
        (pubkey && nkey_files) || (verify && netproxy)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    /* hub.json alone (the audit file, the keys): a broken manifest stops no verification. */
    struct hub_config cfg;
    int rc = cli_load(&a.common, &cfg, NULL);
    if (rc == EXIT_OK)
        rc = pubkey ? do_pubkey(&cfg, netproxy)
                    : do_verify(&cfg, key_files, nkey_files, argv + optind + 1, (size_t)operands);
    config_free(&cfg);
    return rc;
}
