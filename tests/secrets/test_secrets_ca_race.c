/* Hubs that start at the same moment on one secret store agree on one CA: each of them
 * forked at once calls hubca_ensure() on a fresh store, then every one must hold the same
 * certificate, and the key and certificate on disk must belong together (without the
 * store's lock, two hubs each made a CA, wrote the key of one beside the certificate of
 * the other, and a third saw no ca.crt between an unlink and a rename). */
#include "config/config.h"
#include "secrets/secrets.h"
#include "tests/unit/test.h"
#include "util.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HUBS 8
#define ROUNDS 6

static char *slurp_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = xcalloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* 1 when the key file's public key is the certificate's. */
static int key_matches_cert(const char *dir)
{
    char *kp = xasprintf("%s/ca/ca.key", dir), *cp = xasprintf("%s/ca/ca.crt", dir);
    FILE *kf = fopen(kp, "r"), *cf = fopen(cp, "r");
    EVP_PKEY *key = kf ? PEM_read_PrivateKey(kf, NULL, NULL, NULL) : NULL;
    X509 *cert = cf ? PEM_read_X509(cf, NULL, NULL, NULL) : NULL;
    int ok = key && cert && X509_check_private_key(cert, key) == 1;
    EVP_PKEY_free(key);
    X509_free(cert);
    if (kf)
        fclose(kf);
    if (cf)
        fclose(cf);
    free(kp);
    free(cp);
    return ok;
}

static void one_round(int round)
{
    char tmpl[] = "/tmp/isolate-ca-race.XXXXXX";
    char *root = mkdtemp(tmpl);
    CHECK(root != NULL, "round %d: a temporary store", round);
    if (!root)
        return;
    struct hub_config cfg;
    config_defaults(&cfg, "/nonexistent");
    free(cfg.secrets_dir);
    cfg.secrets_dir = xasprintf("%s/secrets", root);
    int pipes[HUBS][2];
    pid_t pids[HUBS];
    int gate[2];
    if (pipe(gate) < 0)
        return;
    for (int i = 0; i < HUBS; i++) {
        if (pipe(pipes[i]) < 0)
            return;
        pids[i] = fork();
        if (pids[i] == 0) {
            /* Each waits at the gate, so that all of them start together. */
            char c;
            close(gate[1]);
            if (read(gate[0], &c, 1) < 0)
                _exit(3);
            struct hub_ca ca;
            char err[256];
            int rc = hubca_ensure(&cfg, &ca, err, sizeof(err));
            if (rc < 0) {
                dprintf(pipes[i][1], "ERROR %s", err);
                _exit(1);
            }
            if (write(pipes[i][1], ca.cert_pem, strlen(ca.cert_pem)) < 0)
                _exit(2);
            _exit(0);
        }
        close(pipes[i][1]);
    }
    close(gate[0]);
    close(gate[1]); /* every child's read returns now */
    char *certs[HUBS];
    int failed = 0, differ = 0;
    for (int i = 0; i < HUBS; i++) {
        certs[i] = xcalloc(1, 65536);
        size_t got = 0;
        ssize_t n;
        while ((n = read(pipes[i][0], certs[i] + got, 65535 - got)) > 0)
            got += (size_t)n;
        close(pipes[i][0]);
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed++;
            fprintf(stderr, "# round %d hub %d: %s\n", round, i, certs[i]);
        }
    }
    char *on_disk = xasprintf("%s/ca/ca.crt", cfg.secrets_dir);
    char *disk = slurp_file(on_disk);
    for (int i = 0; i < HUBS; i++)
        if (!disk || strcmp(certs[i], disk) != 0)
            differ++;
    CHECK(failed == 0, "round %d: %d hubs at once each load the CA (%d failed)", round, HUBS,
          failed);
    CHECK(differ == 0, "round %d: ... and every one holds the certificate on disk (%d differ)",
          round, differ);
    CHECK(key_matches_cert(cfg.secrets_dir), "round %d: ... whose key is the one beside it",
          round);
    for (int i = 0; i < HUBS; i++)
        free(certs[i]);
    free(disk);
    free(on_disk);
    char *cmd = xasprintf("rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", root);
    free(cmd);
    config_free(&cfg);
}

int main(void)
{
    for (int r = 0; r < ROUNDS; r++)
        one_round(r);
    return test_done();
}
