#include "elfdeps.h"

#include "internal.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHEBANG_DEPTH 4
#define DYN_MAX 4096 /* entries of a dynamic section */
/* NodeSource's node has a 5.3 MB dynamic string table (its exported V8 symbols); the
 * table must also lie within the file. */
#define STRTAB_MAX (64 << 20)
#define PHDR_MAX 256

/* The library directories of the system, in the loader's order after RUNPATH: those of
 * /etc/ld.so.conf (what ld.so.cache was built from) and the defaults. */
struct dirs {
    char **v;
    size_t n;
};

static void dirs_add(struct dirs *d, const char *dir)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->v[i], dir) == 0)
            return;
    d->v = xrealloc(d->v, (d->n + 1) * sizeof(char *));
    d->v[d->n++] = xstrdup(dir);
}

static void dirs_free(struct dirs *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i]);
    free(d->v);
}

/* ld.so.conf: absolute directories, one per line, and "include GLOB" (one level). */
static void read_ld_conf(const char *path, struct dirs *d, int depth)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[PATH_MAX];
    while (fgets(line, sizeof(line), f)) {
        char *p = line + strspn(line, " \t");
        p[strcspn(p, "#\r\n")] = '\0';
        size_t n = strlen(p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            p[--n] = '\0';
        if (strncmp(p, "include", 7) == 0 && (p[7] == ' ' || p[7] == '\t') && depth < 2) {
            char *pat = p + 8 + strspn(p + 8, " \t");
            glob_t g;
            if (pat[0] == '/' && glob(pat, 0, NULL, &g) == 0) {
                for (size_t i = 0; i < g.gl_pathc; i++)
                    read_ld_conf(g.gl_pathv[i], d, depth + 1);
                globfree(&g);
            }
        } else if (p[0] == '/') {
            dirs_add(d, p);
        }
    }
    fclose(f);
}

static void system_dirs(struct dirs *d)
{
    read_ld_conf("/etc/ld.so.conf", d, 0);
    static const char *const defaults[] = {"/lib/x86_64-linux-gnu",
                                           "/usr/lib/x86_64-linux-gnu",
                                           "/lib64",
                                           "/usr/lib64",
                                           "/lib",
                                           "/usr/lib"};
    for (size_t i = 0; i < ARRAY_LEN(defaults); i++)
        dirs_add(d, defaults[i]);
}

struct walk {
    char **paths;
    size_t n;
    struct dirs sys;
    struct jail_error *err;
};

static bool have(const struct walk *w, const char *path)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->paths[i], path) == 0)
            return true;
    return false;
}

static int add_path(struct walk *w, const char *path)
{
    if (w->n >= ELFDEPS_MAX) {
        jail_err_set(w->err, 125, "%s: more than %d files to bind", w->paths[0], ELFDEPS_MAX);
        return -1;
    }
    w->paths = xrealloc(w->paths, (w->n + 2) * sizeof(char *));
    w->paths[w->n++] = xstrdup(path);
    w->paths[w->n] = NULL;
    return 0;
}

static bool read_at(int fd, void *buf, size_t len, off_t off)
{
    ssize_t n;
    do
        n = pread(fd, buf, len, off);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len;
}

/* The file offset of virtual address va, through the PT_LOAD segments. */
static bool va_to_off(const Elf64_Phdr *ph, size_t nph, uint64_t va, uint64_t *off)
{
    for (size_t i = 0; i < nph; i++)
        if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr && va - ph[i].p_vaddr < ph[i].p_filesz) {
            *off = ph[i].p_offset + (va - ph[i].p_vaddr);
            return true;
        }
    return false;
}

/* Whether path is a 64-bit little-endian ELF (what an x86_64 loader would take). */
static bool is_elf64(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    unsigned char id[EI_NIDENT];
    bool ok = read_at(fd, id, sizeof(id), 0) && memcmp(id, ELFMAG, SELFMAG) == 0 &&
              id[EI_CLASS] == ELFCLASS64 && id[EI_DATA] == ELFDATA2LSB;
    close(fd);
    return ok;
}

/* Looks name up in a colon-separated search path (RUNPATH), $ORIGIN being origin. */
static bool search_runpath(const char *runpath, const char *origin, const char *name, char *out,
                           size_t outlen)
{
    char *copy = xstrdup(runpath), *save = NULL;
    bool found = false;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char expanded[PATH_MAX];
        if (strncmp(dir, "$ORIGIN", 7) == 0)
            snprintf(expanded, sizeof(expanded), "%s%s", origin, dir + 7);
        else if (strncmp(dir, "${ORIGIN}", 9) == 0)
            snprintf(expanded, sizeof(expanded), "%s%s", origin, dir + 9);
        else
            snprintf(expanded, sizeof(expanded), "%s", dir);
        if (expanded[0] != '/' || (size_t)snprintf(out, outlen, "%s/%s", expanded, name) >= outlen)
            continue;
        found = is_elf64(out);
    }
    free(copy);
    return found;
}

static int walk_file(struct walk *w, const char *path, int depth);

static int need_library(struct walk *w, const char *from, const char *name, const char *runpath)
{
    char found[PATH_MAX];
    if (strchr(name, '/')) {
        if (name[0] != '/' || !is_elf64(name)) {
            jail_err_set(w->err, 125, "%s needs %s, which is not an absolute ELF path", from, name);
            return -1;
        }
        return walk_file(w, name, 0);
    }
    char *copy = xstrdup(from);
    bool ok = runpath && search_runpath(runpath, dirname(copy), name, found, sizeof(found));
    free(copy);
    for (size_t i = 0; !ok && i < w->sys.n; i++)
        ok = (size_t)snprintf(found, sizeof(found), "%s/%s", w->sys.v[i], name) < sizeof(found) &&
             is_elf64(found);
    if (!ok) {
        jail_err_set(w->err, 125, "%s needs the library %s, which is not found", from, name);
        return -1;
    }
    return walk_file(w, found, 0);
}

/* The ELF's interpreter and libraries. */
static int walk_elf(struct walk *w, const char *path, int fd, off_t size)
{
    Elf64_Ehdr eh;
    if (!read_at(fd, &eh, sizeof(eh), 0) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr) ||
        eh.e_phnum > PHDR_MAX || eh.e_phoff > (uint64_t)size) {
        jail_err_set(w->err, 125, "%s: not a 64-bit little-endian ELF this loader runs", path);
        return -1;
    }
    Elf64_Phdr ph[PHDR_MAX];
    size_t nph = eh.e_phnum;
    if (!read_at(fd, ph, nph * sizeof(Elf64_Phdr), (off_t)eh.e_phoff)) {
        jail_err_set(w->err, 125, "%s: its program headers cannot be read", path);
        return -1;
    }
    const Elf64_Phdr *dyn = NULL;
    for (size_t i = 0; i < nph; i++) {
        if (ph[i].p_type == PT_INTERP) {
            char interp[PATH_MAX];
            if (ph[i].p_filesz == 0 || ph[i].p_filesz >= sizeof(interp) ||
                !read_at(fd, interp, ph[i].p_filesz, (off_t)ph[i].p_offset)) {
                jail_err_set(w->err, 125, "%s: a bad PT_INTERP", path);
                return -1;
            }
            interp[ph[i].p_filesz] = '\0';
            if (interp[0] != '/' || walk_file(w, interp, 0) < 0) {
                if (interp[0] != '/')
                    jail_err_set(w->err, 125, "%s: interpreter %s is not absolute", path, interp);
                return -1;
            }
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = &ph[i];
        }
    }
    if (!dyn)
        return 0; /* static */
    size_t ndyn = dyn->p_filesz / sizeof(Elf64_Dyn);
    if (ndyn == 0 || ndyn > DYN_MAX) {
        jail_err_set(w->err, 125, "%s: a dynamic section of %zu entries", path, ndyn);
        return -1;
    }
    Elf64_Dyn *d = xcalloc(ndyn, sizeof(*d));
    int rc = -1;
    char *strtab = NULL;
    if (!read_at(fd, d, ndyn * sizeof(*d), (off_t)dyn->p_offset)) {
        jail_err_set(w->err, 125, "%s: its dynamic section cannot be read", path);
        goto out;
    }
    uint64_t str_va = 0, str_size = 0, str_off;
    for (size_t i = 0; i < ndyn && d[i].d_tag != DT_NULL; i++) {
        if (d[i].d_tag == DT_STRTAB)
            str_va = d[i].d_un.d_ptr;
        else if (d[i].d_tag == DT_STRSZ)
            str_size = d[i].d_un.d_val;
    }
    if (!str_va || !str_size || str_size > STRTAB_MAX || !va_to_off(ph, nph, str_va, &str_off) ||
        str_off > (uint64_t)size || str_size > (uint64_t)size - str_off) {
        jail_err_set(w->err, 125, "%s: a bad dynamic string table", path);
        goto out;
    }
    strtab = xmalloc(str_size + 1);
    if (!read_at(fd, strtab, str_size, (off_t)str_off)) {
        jail_err_set(w->err, 125, "%s: its dynamic string table cannot be read", path);
        goto out;
    }
    strtab[str_size] = '\0';
    const char *runpath = NULL, *rpath = NULL;
    for (size_t i = 0; i < ndyn && d[i].d_tag != DT_NULL; i++) {
        if (d[i].d_un.d_val >= str_size)
            continue;
        if (d[i].d_tag == DT_RUNPATH)
            runpath = strtab + d[i].d_un.d_val;
        else if (d[i].d_tag == DT_RPATH)
            rpath = strtab + d[i].d_un.d_val;
    }
    for (size_t i = 0; i < ndyn && d[i].d_tag != DT_NULL; i++) {
        if (d[i].d_tag != DT_NEEDED)
            continue;
        if (d[i].d_un.d_val >= str_size) {
            jail_err_set(w->err, 125, "%s: a DT_NEEDED entry outside its string table", path);
            goto out;
        }
        if (need_library(w, path, strtab + d[i].d_un.d_val, runpath ? runpath : rpath) < 0)
            goto out;
    }
    rc = 0;
out:
    free(strtab);
    free(d);
    return rc;
}

static int walk_file(struct walk *w, const char *path, int depth)
{
    if (have(w, path))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        jail_err_set(w->err, fd < 0 && errno == ENOENT ? 127 : 125, "%s: %s", path,
                     fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (add_path(w, path) < 0) {
        close(fd);
        return -1;
    }
    char head[PATH_MAX];
    ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
    int rc;
    if (n >= 2 && head[0] == '#' && head[1] == '!') {
        head[n] = '\0';
        char *p = head + 2 + strspn(head + 2, " \t");
        p[strcspn(p, " \t\r\n")] = '\0';
        if (depth >= SHEBANG_DEPTH || p[0] != '/') {
            jail_err_set(w->err, 125, "%s: its #! interpreter %s is not an absolute path%s", path,
                         p, depth >= SHEBANG_DEPTH ? " (or #! nests too deep)" : "");
            rc = -1;
        } else {
            rc = walk_file(w, p, depth + 1);
        }
    } else if (n >= SELFMAG && memcmp(head, ELFMAG, SELFMAG) == 0) {
        rc = walk_elf(w, path, fd, st.st_size);
    } else {
        jail_err_set(w->err, 126, "%s: neither a script (#!) nor an ELF program", path);
        rc = -1;
    }
    close(fd);
    return rc;
}

int elfdeps_resolve(const char *program, char ***paths, size_t *n, struct jail_error *err)
{
    if (!program || program[0] != '/') {
        jail_err_set(err, 125, "program %s: an absolute path is needed", program ? program : "");
        return -1;
    }
    struct walk w = {.paths = *paths, .n = *n, .err = err};
    system_dirs(&w.sys);
    int rc = walk_file(&w, program, 0);
    dirs_free(&w.sys);
    *paths = w.paths;
    *n = w.n;
    return rc;
}
