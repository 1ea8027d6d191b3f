#include "hub_fixture.h"
#include "runtime/hub.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

void hub_fixture_config(struct hub_config *cfg, const char *bin, const char *dir,
                        const char *spokes_dir)
{
    config_defaults(cfg, bin);
    free(cfg->spokes_dir);
    cfg->spokes_dir = xstrdup(spokes_dir);
    free(cfg->spoke_bin_dir);
    cfg->spoke_bin_dir = xasprintf("%s/tests/hub", bin);
    free(cfg->data_root);
    cfg->data_root = xasprintf("%s/data", dir);
    free(cfg->run_dir);
    cfg->run_dir = xasprintf("%s/run", dir);
    free(cfg->audit_path);
    cfg->audit_path = xasprintf("%s/audit.jsonl", dir);
}

bool hub_fixture_init(struct hub_fixture *f, const char *name)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/itest-%.32s.XXXXXX", name);
    if (!mkdtemp(f->dir)) {
        perror(f->dir);
        return false;
    }
    const char *bin = getenv("BIN") ? getenv("BIN") : "build";
    const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
    char *spokes = xasprintf("%s/tests/hub/manifests", root);
    hub_fixture_config(&f->cfg, bin, f->dir, spokes);
    free(spokes);
    f->cfg.isolation = ISO_NONE;
    return true;
}

bool hub_fixture_start(struct hub_fixture *f, char *err, size_t errlen)
{
    char why[512];
    if (manifest_set_load(f->cfg.spokes_dir, &f->ms, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "manifests load: %s", why);
        return false;
    }
    f->base = event_base_new();
    if (!f->base) {
        snprintf(err, errlen, "event_base_new failed");
        return false;
    }
    f->hub = hub_new(&f->cfg, &f->ms, f->base, false, why, sizeof(why));
    if (!f->hub) {
        snprintf(err, errlen, "the hub does not start: %s", why);
        return false;
    }
    return true;
}

int hub_fixture_count_lines(const char *path, const char *a, const char *b)
{
    FILE *fp = fopen(path, "r");
    char line[16384];
    int n = 0;
    while (fp && fgets(line, sizeof(line), fp))
        n += strstr(line, a) && (!b || strstr(line, b));
    if (fp)
        fclose(fp);
    return n;
}

void hub_fixture_end(struct hub_fixture *f)
{
    if (f->hub)
        hub_free(f->hub);
    if (f->base)
        event_base_free(f->base);
    manifest_set_free(&f->ms);
    config_free(&f->cfg);
    char *cmd = xasprintf("rm -rf %s", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(cmd);
}
