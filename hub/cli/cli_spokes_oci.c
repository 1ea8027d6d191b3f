/* `hub spokes add NAME [OPTIONS] oci:REF`: a container image as a spoke.
 *
 * The image is pulled by digest with skopeo into an OCI layout in a store the hub
 * manages (<data_root>/.spoke-images/NAME/layout; the tag is resolved to a digest once,
 * by hashing the manifest the registry serves, and only that digest is copied), its
 * root unpacked with umoci (`umoci raw unpack --rootless`: files owned by the hub, no
 * device node made) into <store>/<digest>/rootfs, and then made what the jail may see:
 * a device node refuses the image, setuid and setgid bits and file capabilities are
 * cleared (the jail also mounts it nosuid, under no_new_privs), every file owned by the
 * hub's user (root), readable by all and writable by none but it (the jail's uid is
 * "others"). Nothing in the tree is
 * followed on the host: the walk does not follow symlinks, and the entrypoint is looked
 * up with openat2(RESOLVE_IN_ROOT), as the jail will see it. The profile written beside
 * it (<store>/<digest>/profile.json: the runtime's profile with "rootfs", the image's
 * Env and WorkingDir, without the host's system binds) is what the manifest names, so
 * the hub runs the image's Entrypoint + Cmd in nsjail-lite with that root instead of the
 * host's. The manifest pins the digest ("image"); `hub spokes update` resolves the tag
 * again and moves it.
 *
 * Registry credentials ("USER:PASSWORD" in the secret store, --registry-secret NAME)
 * reach skopeo as an auth file, 0600 in a private directory made for the pull and
 * removed after it: never on a command line, in the manifest or in a log. */
#include "cli_logtail.h"
#include "cli_spokes_oci.h"
#include "cli_run.h"
#include "jsonfile.h"
#include "log.h"
#include "rmtree.h"
#include "runtime/runtime.h"
#include "secret.h"
#include "sha256.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define SKOPEO "skopeo"
#define UMOCI "umoci"
#define REF_MAX 255
#define MANIFEST_MAX (4 * 1024 * 1024)
#define ENV_MAX_ENTRIES 64
#define ARGS_MAX 32 /* a manifest's command holds at most 32 */

bool oci_is_ref(const char *arg)
{
    return strncmp(arg, "oci:", 4) == 0;
}

/* What skopeo may be handed: a registry reference's characters only, so that nothing
 * reads as an option or a different transport. */
static bool ref_valid(const char *ref)
{
    size_t n = strlen(ref);
    if (n == 0 || n > REF_MAX || ref[0] == '-' || ref[0] == '/' || strstr(ref, "://"))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = ref[i];
        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
            !strchr("._-:/@[]", c))
            return false;
    }
    return true;
}

static bool digest_valid(const char *d)
{
    if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + 64)
        return false;
    for (const char *c = d + 7; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

/* The repository of ref (without ":tag" or "@digest"), *digest the digest it names,
 * *host the registry (the first component when it looks like a host, else docker.io). */
static void split_ref(const char *ref, char **repo, char **digest, char **host)
{
    const char *at = strchr(ref, '@');
    const char *slash = strrchr(ref, '/');
    const char *colon = strrchr(ref, ':');
    size_t n = strlen(ref);
    if (at)
        n = (size_t)(at - ref);
    else if (colon && (!slash || colon > slash))
        n = (size_t)(colon - ref);
    *repo = xstrndup(ref, n);
    *digest = at ? xstrdup(at + 1) : NULL;
    const char *first_slash = strchr(ref, '/');
    size_t hn = first_slash ? (size_t)(first_slash - ref) : 0;
    char *first = xstrndup(ref, hn);
    if (hn && (strchr(first, '.') || strchr(first, ':') || strcmp(first, "localhost") == 0))
        *host = first;
    else {
        free(first);
        *host = xstrdup("docker.io");
    }
}

/* A registry on the host's loopback speaks plain HTTP (the tests' and a local
 * mirror's): nothing crosses a network there. Every other one needs TLS. */
static bool loopback_host(const char *host)
{
    static const char *const names[] = {"localhost", "127.", "[::1]", NULL};
    for (size_t i = 0; names[i]; i++)
        if (strncmp(host, names[i], strlen(names[i])) == 0 &&
            (names[i][strlen(names[i]) - 1] == '.' || host[strlen(names[i])] == '\0' ||
             host[strlen(names[i])] == ':'))
            return true;
    return false;
}


static void base64(const unsigned char *in, size_t n, char *out)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[o++] = t[v >> 18 & 63];
        out[o++] = t[v >> 12 & 63];
        out[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? t[v & 63] : '=';
    }
    out[o] = '\0';
}

/* The auth file of a pull: <dir>/auth.json, 0600 in a private directory (*dir, for
 * the caller to remove), {"auths": {HOST: {"auth": base64(USER:PASSWORD)}}}. The value
 * stays in secret memory until written; the file is the only copy on disk. */
static char *write_authfile(const struct hub_config *cfg, const char *secret, const char *host,
                            char **dir, char *err, size_t errlen)
{
    struct secret_store *st = secret_store_new(cfg);
    struct secret_meta meta = {0};
    char *value = NULL;
    size_t len = 0;
    char serr[512];
    int got = secret_store_get(st, secret, &meta, &value, &len, serr, sizeof(serr));
    secret_meta_clear(&meta);
    secret_store_free(st);
    if (got <= 0) {
        snprintf(err, errlen, "registry secret %s: %s", secret,
                 got == 0 ? "not in the store (hub secrets set NAME, the value USER:PASSWORD)"
                          : serr);
        return NULL;
    }
    if (!memchr(value, ':', len) || memchr(value, '\n', len) || len > 4096) {
        secret_free(value);
        snprintf(err, errlen, "registry secret %s: the value must be USER:PASSWORD on one line",
                 secret);
        return NULL;
    }
    char tmpl[] = "/tmp/hub-oci-auth.XXXXXX";
    char *path = NULL;
    char *b64 = secret_alloc(len / 3 * 4 + 8);
    base64((const unsigned char *)value, len, b64);
    secret_free(value);
    if (!mkdtemp(tmpl)) {
        snprintf(err, errlen, "a private directory for the registry's credentials: %s",
                 strerror(errno));
        secret_free(b64);
        return NULL;
    }
    *dir = xstrdup(tmpl);
    path = xasprintf("%s/auth.json", tmpl);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    /* The host as the registry is named (skopeo looks it up by that key). */
    const char *parts[] = {"{\"auths\":{\"", host, "\":{\"auth\":\"", b64, "\"}}}\n"};
    for (size_t i = 0; ok && i < ARRAY_LEN(parts); i++)
        ok = write_all(fd, parts[i], strlen(parts[i])) == 0;
    if (fd >= 0)
        close(fd);
    secret_free(b64);
    if (!ok) {
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

/* A blob of the layout by digest, parsed (bounded). */
static json_t *load_blob(const char *layout, const char *digest, char *err, size_t errlen)
{
    if (!digest_valid(digest)) {
        snprintf(err, errlen, "the image names a blob \"%.80s\" that is no sha256 digest",
                 digest ? digest : "");
        return NULL;
    }
    char *p = xasprintf("%s/blobs/sha256/%s", layout, digest + 7);
    struct jf_ctx c = {.file = p, .err = err, .errlen = errlen};
    json_t *j = jf_load(&c, MANIFEST_MAX);
    free(p);
    return j;
}

/* The image's config (its "config" object) for the manifest pulled under tag. */
static json_t *image_config(const char *layout, const char *tag, char *err, size_t errlen)
{
    char *ip = xasprintf("%s/index.json", layout);
    struct jf_ctx c = {.file = ip, .err = err, .errlen = errlen};
    json_t *index = jf_load(&c, MANIFEST_MAX);
    free(ip);
    if (!index)
        return NULL;
    const char *mdigest = NULL;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(index, "manifests"), i, m)
    {
        const char *name = json_string_value(json_object_get(json_object_get(m, "annotations"),
                                                             "org.opencontainers.image.ref.name"));
        if (name && strcmp(name, tag) == 0)
            mdigest = json_string_value(json_object_get(m, "digest"));
    }
    json_t *manifest = mdigest ? load_blob(layout, mdigest, err, errlen) : NULL;
    if (!mdigest)
        snprintf(err, errlen, "%s/index.json has no image %s", layout, tag);
    json_t *config = manifest ? load_blob(layout,
                                          json_string_value(json_object_get(
                                              json_object_get(manifest, "config"), "digest")),
                                          err, errlen)
                              : NULL;
    json_decref(manifest);
    json_decref(index);
    json_t *inner = config ? json_object_get(config, "config") : NULL;
    if (inner)
        json_incref(inner);
    else if (config)
        inner = json_object(); /* no config at all: no entrypoint, said below */
    json_decref(config);
    return inner;
}

/* ---- the unpacked root made safe to show ---- */

/* umoci --rootless makes an empty file where a layer has a device node, and says so
 * ("rootless{PATH} creating empty file in place of device"): such an image is refused,
 * whatever the file became. -2 and err naming the first, else 0. */
static int refuse_devices(int ufd, char *err, size_t errlen)
{
    int fd = dup(ufd);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        snprintf(err, errlen, "reading umoci's output: %s", strerror(errno));
        return -2;
    }
    rewind(f);
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        const char *hit = strstr(line, "in place of device");
        if (!hit)
            continue;
        const char *open_b = strstr(line, "rootless{");
        const char *close_b = open_b ? strchr(open_b, '}') : NULL;
        if (open_b && close_b && close_b < hit)
            snprintf(err, errlen, "image file /%.*s: a device node: refused",
                     (int)(close_b - open_b - 9), open_b + 9);
        else
            snprintf(err, errlen, "the image holds a device node: refused");
        rc = -2;
    }
    free(line);
    fclose(f);
    return rc;
}

/* Appends umoci's output to the pull's log. */
static void copy_log(int from, int to)
{
    char buf[8192];
    ssize_t n;
    off_t off = 0;
    while ((n = pread(from, buf, sizeof(buf), off)) > 0) {
        if (write_all(to, buf, (size_t)n) < 0)
            break;
        off += n;
    }
}

static const char *walk_err_path;
static char walk_err[256];

static int normalize_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
        snprintf(walk_err, sizeof(walk_err), "a device node");
        walk_err_path = path;
        return 1;
    }
    /* The hub's own user (root as a service): bind sources must be its or root's. */
    if (lchown(path, geteuid(), getegid()) < 0)
        goto fail;
    /* File capabilities are privilege too (the jail's nosuid mounts and no_new_privs
     * ignore them; on the host they go as well). */
    if (lremovexattr(path, "security.capability") < 0 && errno != ENODATA && errno != ENOTSUP &&
        errno != EPERM) /* EPERM: a symlink's, which the kernel does not keep */
        goto fail;
    if (type == FTW_SL || S_ISLNK(st->st_mode))
        return 0; /* a link's own mode means nothing; its target is its own entry */
    mode_t m = st->st_mode & 07777;
    m &= ~(mode_t)(S_ISUID | S_ISGID | S_IWGRP | S_IWOTH);
    /* The jail's uid is "others": it reads what the image's owner could. */
    m |= S_IRUSR | S_IRGRP | S_IROTH;
    if (S_ISDIR(st->st_mode) || (m & S_IXUSR))
        m |= S_IXUSR | S_IXGRP | S_IXOTH;
    if (chmod(path, m) < 0)
        goto fail;
    return 0;
fail:
    snprintf(walk_err, sizeof(walk_err), "%s", strerror(errno));
    walk_err_path = path;
    return 1;
}

static int normalize_root(const char *rootfs, char *err, size_t errlen)
{
    walk_err_path = NULL;
    walk_err[0] = '\0';
    /* FTW_PHYS: symlinks are entries, never followed; FTW_MOUNT: nothing else entered. */
    int r = nftw(rootfs, normalize_one, 32, FTW_PHYS | FTW_MOUNT);
    if (r == 0)
        return 0;
    if (walk_err_path)
        snprintf(err, errlen, "image file /%s: %s: refused", walk_err_path + strlen(rootfs) + 1,
                 walk_err);
    else
        snprintf(err, errlen, "walking %s: %s", rootfs, strerror(errno));
    return -1;
}

/* name looked up inside rootfs as the jail will see it (symlinks resolved in it):
 * its real path inside (e.g. /usr/bin/python3.11), or NULL. */
static char *inside_path(int rootfd, const char *rootfs, const char *name)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, rootfd, name, &how, sizeof(how));
    if (fd < 0)
        return NULL;
    struct stat st;
    char link[64], real[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n =
        fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? readlink(link, real, sizeof(real) - 1) : -1;
    close(fd);
    size_t rl = strlen(rootfs);
    if (n <= 0 || (size_t)n <= rl)
        return NULL;
    real[n] = '\0';
    return strncmp(real, rootfs, rl) == 0 && real[rl] == '/' ? xstrdup(real + rl) : NULL;
}

/* The program of the image's argv[0]: an absolute path inside it, or a name looked up
 * in the image's PATH. The path as the image names it (the jail resolves the links);
 * *real what it resolves to, for the runtime's guess. */
static char *find_entrypoint(const char *rootfs, const char *arg0, const json_t *env, char **real)
{
    int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return NULL;
    char *found = NULL;
    if (strchr(arg0, '/')) {
        if (arg0[0] == '/' && (*real = inside_path(rootfd, rootfs, arg0)) != NULL)
            found = xstrdup(arg0);
    } else {
        const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        size_t i;
        json_t *v;
        json_array_foreach(env, i, v)
        {
            const char *s = json_string_value(v);
            if (s && strncmp(s, "PATH=", 5) == 0)
                path = s + 5;
        }
        for (const char *dir = path; !found && *dir;) {
            size_t len = strcspn(dir, ":");
            char *cand = xasprintf("%.*s/%s", (int)len, dir, arg0);
            if (cand[0] == '/' && (*real = inside_path(rootfd, rootfs, cand)) != NULL)
                found = cand;
            else
                free(cand);
            dir += len + (dir[len] == ':');
        }
    }
    close(rootfd);
    return found;
}

static const char *guess_runtime(const char *real)
{
    const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    if (strncmp(base, "python", 6) == 0)
        return "python";
    if (strcmp(base, "node") == 0 || strcmp(base, "nodejs") == 0)
        return "node";
    return "c";
}

/* The profile of runtime beside hub.json's (as the hub picks one), as JSON. */
static json_t *runtime_profile(const struct hub_config *cfg, const char *runtime, char *err,
                               size_t errlen)
{
    char *copy = xstrdup(cfg->profile);
    char *path = xasprintf("%s/%s.json", dirname(copy), runtime);
    free(copy);
    if (strcmp(runtime, "c") == 0 || access(path, R_OK) != 0) {
        free(path);
        path = xstrdup(cfg->profile);
    }
    struct jf_ctx c = {.file = path, .err = err, .errlen = errlen};
    json_t *p = jf_load(&c, MANIFEST_MAX);
    free(path);
    return p;
}

/* <dir>/profile.json: the runtime's profile with the image as its root, the image's
 * Env and WorkingDir, and none of the host's system binds. */
static char *write_profile(const struct hub_config *cfg, const char *dir, const char *runtime,
                           const json_t *config, char *err, size_t errlen)
{
    json_t *p = runtime_profile(cfg, runtime, err, errlen);
    if (!p)
        return NULL;
    json_t *mounts = json_object_get(p, "mounts");
    if (mounts) {
        json_object_del(mounts, "ro");
        json_object_del(mounts, "ro_optional");
        json_object_del(mounts, "rw");
    }
    char *rootfs = xasprintf("%s/rootfs", dir);
    json_object_set_new(p, "rootfs", json_string(rootfs));
    free(rootfs);
    json_t *env = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(config, "Env"), i, v)
    {
        const char *s = json_string_value(v);
        const char *eq = s ? strchr(s, '=') : NULL;
        if (!eq || eq == s || json_string_length(v) > 8192 ||
            memchr(s, '\0', json_string_length(v)) || json_array_size(env) == ENV_MAX_ENTRIES)
            continue; /* not NAME=VALUE: left out */
        json_array_append(env, v);
    }
    json_object_set_new(p, "env", env);
    const char *wd = json_string_value(json_object_get(config, "WorkingDir"));
    if (wd && wd[0] == '/' && strlen(wd) < 1024)
        json_object_set_new(p, "cwd", json_string(wd));
    else
        json_object_del(p, "cwd");
    json_object_set_new(p, "description",
                        json_string("a container image's root (hub spokes add oci:)"));
    char *path = xasprintf("%s/profile.json", dir);
    int rc = json_dump_file(p, path, JSON_INDENT(2));
    json_decref(p);
    if (rc < 0) {
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

/* oci_pull, or with resolve_only just the digest REF names now (out->image: ref, digest). */
static int pull(const struct hub_config *cfg, const char *app, const char *ref, const json_t *args,
                const char *registry_secret, const char *runtime, bool resolve_only,
                struct oci_image *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!ref_valid(ref)) {
        snprintf(err, errlen,
                 "\"%.100s\" is not an image reference (HOST[:PORT]/NAME[:TAG] or "
                 "NAME@sha256:DIGEST)",
                 ref);
        return -1;
    }
    char *repo, *digest, *host;
    split_ref(ref, &repo, &digest, &host);
    char *store = xasprintf("%s/.spoke-images/%s", cfg->data_root, app);
    char *layout = xasprintf("%s/layout", store);
    char *log_path = xasprintf("%s/pull.log", store);
    char *auth_dir = NULL, *auth = NULL, *raw = NULL, *dir = NULL, *unpacking = NULL;
    char *real = NULL, *entry = NULL;
    json_t *config = NULL;
    int log_fd = -1, rc = -1;
    bool insecure = loopback_host(host);
    if (digest && !digest_valid(digest)) {
        snprintf(err, errlen, "%s: only sha256 digests are pinned", ref);
        goto out;
    }
    if (mkdir_p(store, 0700) < 0 ||
        (log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0) {
        snprintf(err, errlen, "%s: %s", store, strerror(errno));
        goto out;
    }
    if (registry_secret &&
        !(auth = write_authfile(cfg, registry_secret, host, &auth_dir, err, errlen)))
        goto out;
    char *src_ref = NULL;
    if (!digest) {
        /* The tag's digest now: the hash of the manifest the registry serves for it. */
        src_ref = xasprintf("docker://%s", ref);
        char *argv[10];
        int n = 0;
        argv[n++] = SKOPEO;
        argv[n++] = "inspect";
        argv[n++] = "--raw";
        argv[n++] = "--retry-times=0";
        argv[n++] = insecure ? "--tls-verify=false" : "--tls-verify=true";
        if (auth) {
            argv[n++] = "--authfile";
            argv[n++] = auth;
        }
        argv[n++] = src_ref;
        argv[n] = NULL;
        size_t len = 0;
        int st = cli_run(argv, log_fd, &raw, &len, MANIFEST_MAX);
        free(src_ref);
        char hex[2 * SHA256_LEN + 1];
        if (st != 0 || !sha256_hex(raw, len, hex)) {
            snprintf(err, errlen, "skopeo inspect %s failed (%s %d); its output, %s:", ref,
                     st < 0 ? "could not run skopeo, or too large:" : "exit", st, log_path);
            goto out;
        }
        digest = xasprintf("sha256:%s", hex);
    }
    if (resolve_only) {
        out->image = json_pack("{s:s,s:s}", "ref", ref, "digest", digest);
        rc = 0;
        goto out;
    }
    fprintf(stderr, "hub: pulling %s (%s) with skopeo into %s...\n", ref, digest, layout);
    const char *hex = digest + 7;
    dir = xasprintf("%s/%s", store, hex);
    if (access(dir, F_OK) != 0) {
        src_ref = xasprintf("docker://%s@%s", repo, digest);
        char *dst_ref = xasprintf("oci:%s:%s", layout, hex);
        char *argv[12];
        int n = 0;
        argv[n++] = SKOPEO;
        argv[n++] = "copy";
        argv[n++] = "--retry-times=0";
        argv[n++] = "--quiet";
        argv[n++] = insecure ? "--src-tls-verify=false" : "--src-tls-verify=true";
        if (auth) {
            argv[n++] = "--src-authfile";
            argv[n++] = auth;
        }
        argv[n++] = src_ref;
        argv[n++] = dst_ref;
        argv[n] = NULL;
        int st = cli_run(argv, log_fd, NULL, NULL, 0);
        free(src_ref);
        free(dst_ref);
        if (st != 0) {
            snprintf(err, errlen, "skopeo copy %s@%s failed (%s %d); its output, %s:", repo, digest,
                     st < 0 ? "could not run skopeo:" : "exit", st, log_path);
            goto out;
        }
        /* Unpacked beside, moved into place once it is safe to show. */
        unpacking = xasprintf("%s.unpacking.%d", dir, (int)getpid());
        char *rootfs = xasprintf("%s/rootfs", unpacking);
        char *img = xasprintf("%s:%s", layout, hex);
        char *uargv[] = {UMOCI, "raw", "unpack", "--rootless", "--image", img, rootfs, NULL};
        /* umoci's own output apart: it names the device nodes it left out. */
        char *ulog = xasprintf("%s/unpack.log", store);
        int ufd = open(ulog, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (ufd < 0 || mkdir(unpacking, 0700) < 0)
            st = -1;
        else
            st = cli_run(uargv, ufd, NULL, NULL, 0);
        free(img);
        if (ufd >= 0) {
            if (st == 0)
                st = refuse_devices(ufd, err, errlen);
            copy_log(ufd, log_fd);
            close(ufd);
        }
        unlink(ulog);
        free(ulog);
        if (st == -2) {
            free(rootfs);
            goto out;
        }
        if (st != 0) {
            snprintf(err, errlen, "umoci raw unpack %s failed (%s %d); its output, %s:", ref,
                     st < 0 ? "could not run umoci:" : "exit", st, log_path);
            free(rootfs);
            goto out;
        }
        int nr = normalize_root(rootfs, err, errlen);
        free(rootfs);
        if (nr < 0 || chmod(unpacking, 0755) < 0 || rename(unpacking, dir) < 0) {
            if (nr == 0)
                snprintf(err, errlen, "moving the image to %s: %s", dir, strerror(errno));
            goto out;
        }
        free(unpacking);
        unpacking = NULL;
    }
    config = image_config(layout, hex, err, errlen);
    if (!config)
        goto out;
    /* Entrypoint + Cmd, as a container runtime joins them; args given replace Cmd. */
    json_t *argv = json_array();
    const char *keys[] = {"Entrypoint", "Cmd"};
    bool own_args = json_array_size(args) > 0;
    for (size_t k = 0; k < 2; k++) {
        size_t i;
        json_t *v;
        const json_t *list = k == 1 && own_args ? args : json_object_get(config, keys[k]);
        json_array_foreach(list, i, v)
        {
            if (!json_is_string(v) || json_string_length(v) > 4096 ||
                json_array_size(argv) == ARGS_MAX) {
                snprintf(err, errlen, "the image's %s holds a non-string or too many arguments",
                         keys[k]);
                json_decref(argv);
                goto out;
            }
            json_array_append(argv, v);
        }
    }
    if (json_array_size(argv) == 0) {
        snprintf(err, errlen, "the image %s has no Entrypoint and no Cmd: nothing to run", ref);
        json_decref(argv);
        goto out;
    }
    char *rootfs = xasprintf("%s/rootfs", dir);
    const char *arg0 = json_string_value(json_array_get(argv, 0));
    entry = find_entrypoint(rootfs, arg0, json_object_get(config, "Env"), &real);
    free(rootfs);
    if (!entry) {
        snprintf(err, errlen, "the image's program \"%.200s\" is no file in it", arg0);
        json_decref(argv);
        goto out;
    }
    json_array_set_new(argv, 0, json_string(entry));
    out->command = argv;
    out->runtime = xstrdup(runtime ? runtime : guess_runtime(real));
    out->profile = write_profile(cfg, dir, out->runtime, config, err, errlen);
    if (!out->profile)
        goto out;
    out->image = json_pack("{s:s,s:s,s:s}", "ref", ref, "digest", digest, "dir", dir);
    if (own_args)
        json_object_set_new(out->image, "args", json_deep_copy(args));
    if (registry_secret)
        json_object_set_new(out->image, "secret", json_string(registry_secret));
    fprintf(stderr, "hub: image %s pinned at %s, its root read-only in %s/rootfs\n", ref, digest,
            dir);
    rc = 0;
out:
    if (rc < 0 && log_fd >= 0 && strstr(err, "its output")) {
        log_warnx("%s", err); /* the caller leaves this message out */
        cli_show_log_tail(log_path);
    }
    if (log_fd >= 0)
        close(log_fd);
    if (auth) {
        unlink(auth);
        free(auth);
    }
    if (auth_dir) {
        rmdir(auth_dir);
        free(auth_dir);
    }
    if (unpacking) {
        rmtree(unpacking);
        free(unpacking);
    }
    json_decref(config);
    free(entry);
    free(real);
    free(raw);
    free(dir);
    free(repo);
    free(digest);
    free(host);
    free(layout);
    free(log_path);
    free(store);
    if (rc < 0)
        oci_image_free(out);
    return rc;
}

int oci_pull(const struct hub_config *cfg, const char *app, const char *ref, const json_t *args,
             const char *registry_secret, const char *runtime, struct oci_image *out, char *err,
             size_t errlen)
{
    return pull(cfg, app, ref, args, registry_secret, runtime, false, out, err, errlen);
}

char *oci_tag_moved(const struct hub_config *cfg, const char *app, const json_t *image, char *err,
                    size_t errlen)
{
    struct oci_image now;
    const char *ref = json_string_value(json_object_get(image, "ref"));
    if (pull(cfg, app, ref, NULL, json_string_value(json_object_get(image, "secret")), NULL, true,
             &now, err, errlen) < 0)
        return NULL;
    const char *pinned = json_string_value(json_object_get(image, "digest"));
    const char *d = json_string_value(json_object_get(now.image, "digest"));
    char *r = strcmp(pinned, d) == 0
                  ? xstrdup("")
                  : xasprintf("image: %s now names %s, pinned %s (the pinned image still runs; "
                              "`hub spokes update %s` pulls the new one)",
                              ref, d, pinned, app);
    oci_image_free(&now);
    return r;
}

void oci_drop(const char *dir)
{
    rmtree(dir);
    /* <store>/<HEX> -> <store>/layout:<HEX>: the tag, then the blobs only it used. */
    char *copy = xstrdup(dir), *copy2 = xstrdup(dir);
    char *layout = xasprintf("%s/layout", dirname(copy));
    char *img = xasprintf("%s:%s", layout, basename(copy2));
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char *rm[] = {UMOCI, "rm", "--image", img, NULL};
    char *gc[] = {UMOCI, "gc", "--layout", layout, NULL};
    if (devnull >= 0 && cli_run(rm, devnull, NULL, NULL, 0) == 0)
        cli_run(gc, devnull, NULL, NULL, 0);
    if (devnull >= 0)
        close(devnull);
    free(img);
    free(layout);
    free(copy);
    free(copy2);
}

void oci_apply(json_t *root, const struct oci_image *img)
{
    json_object_set(root, "command", img->command);
    json_object_set_new(root, "runtime", json_string(img->runtime));
    json_object_set_new(root, "profile", json_string(img->profile));
    json_object_set(root, "image", img->image);
}

char *oci_digest_diff(const json_t *was, const json_t *now)
{
    const char *d0 = json_string_value(json_object_get(was, "digest"));
    const char *d1 = json_string_value(json_object_get(now, "digest"));
    if (!d0 || !d1 || strcmp(d0, d1) == 0)
        return NULL;
    return xasprintf("image: %s %s -> %s", json_string_value(json_object_get(now, "ref")), d0, d1);
}

void oci_image_free(struct oci_image *img)
{
    json_decref(img->command);
    free(img->runtime);
    free(img->profile);
    json_decref(img->image);
    memset(img, 0, sizeof(*img));
}
