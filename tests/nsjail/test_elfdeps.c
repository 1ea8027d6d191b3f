/* nsjail-lite/elfdeps.c: what a host program needs in a jail, read from its files.
 * Real programs of this host (git, a shell script), and hostile files made here: ELF
 * headers that lie about their sizes, a library that is nowhere, a #! loop, neither a
 * script nor an ELF. Every refusal names the file; none reads past what it checked. */
#include "nsjail-lite/elfdeps.h"
#include "tests/unit/test.h"
#include "util.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/itest-elfdeps.XXXXXX";

static bool has(char **paths, const char *want)
{
    for (size_t i = 0; paths && paths[i]; i++)
        if (strcmp(paths[i], want) == 0)
            return true;
    return false;
}

static bool has_suffix(char **paths, const char *suffix)
{
    for (size_t i = 0; paths && paths[i]; i++) {
        size_t n = strlen(paths[i]), m = strlen(suffix);
        if (n >= m && strcmp(paths[i] + n - m, suffix) == 0)
            return true;
    }
    return false;
}

static void free_paths(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

/* Resolves path; the code (0 for success) and, when err_want, a message containing it. */
static int resolve(const char *path, char ***out, size_t *n, struct jail_error *err)
{
    *out = NULL;
    *n = 0;
    return elfdeps_resolve(path, out, n, err) == 0 ? 0 : err->exit_code;
}

static char *write_file(const char *name, const void *data, size_t len, mode_t mode)
{
    char *path = xasprintf("%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        perror(path);
    close(fd);
    return path;
}

/* A minimal x86_64 ELF: a header, phnum program headers (a PT_LOAD covering the file
 * and a PT_DYNAMIC at dyn_off with the given entries), a string table after them. */
static char *make_elf(const char *name, uint16_t phnum, const Elf64_Dyn *dyn, size_t ndyn,
                      const char *strtab, size_t strsz)
{
    unsigned char buf[4096] = {0};
    Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_DYN;
    eh->e_machine = EM_X86_64;
    eh->e_phoff = sizeof(*eh);
    eh->e_phentsize = sizeof(Elf64_Phdr);
    eh->e_phnum = phnum;
    Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
    size_t dyn_off = 512, str_off = 1024;
    ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_offset = 0, .p_vaddr = 0, .p_filesz = sizeof(buf)};
    ph[1] = (Elf64_Phdr){.p_type = PT_DYNAMIC,
                         .p_offset = dyn_off,
                         .p_vaddr = dyn_off,
                         .p_filesz = ndyn * sizeof(Elf64_Dyn)};
    memcpy(buf + dyn_off, dyn, ndyn * sizeof(Elf64_Dyn));
    memcpy(buf + str_off, strtab, strsz);
    return write_file(name, buf, sizeof(buf), 0755);
}

/* make_elf's layout in a file of size bytes, its PT_LOAD covering it all: the string
 * table at 1024 fills the rest, "libc.so.6" at index 1 (a node with V8's symbols). */
static char *make_big_elf(const char *name, size_t size)
{
    unsigned char *buf = xcalloc(1, size);
    Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_DYN;
    eh->e_machine = EM_X86_64;
    eh->e_phoff = sizeof(*eh);
    eh->e_phentsize = sizeof(Elf64_Phdr);
    eh->e_phnum = 2;
    Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
    Elf64_Dyn dyn[] = {
        {DT_STRTAB, {1024}}, {DT_STRSZ, {size - 1024}}, {DT_NEEDED, {1}}, {DT_NULL, {0}}};
    ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_offset = 0, .p_vaddr = 0, .p_filesz = size};
    ph[1] = (Elf64_Phdr){
        .p_type = PT_DYNAMIC, .p_offset = 512, .p_vaddr = 512, .p_filesz = sizeof(dyn)};
    memcpy(buf + 512, dyn, sizeof(dyn));
    memcpy(buf + 1025, "libc.so.6", 10);
    char *path = write_file(name, buf, size, 0755);
    free(buf);
    return path;
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char **paths;
    size_t n;
    struct jail_error err;

    if (access("/usr/bin/git", X_OK) == 0) {
        CHECK(resolve("/usr/bin/git", &paths, &n, &err) == 0, "git resolves");
        CHECK(n >= 3 && strcmp(paths[0], "/usr/bin/git") == 0, "the program first (%zu files)", n);
        CHECK(has_suffix(paths, "/ld-linux-x86-64.so.2"), "its interpreter (PT_INTERP)");
        CHECK(has_suffix(paths, "/libc.so.6") && has_suffix(paths, "/libz.so.1"),
              "the libraries it loads (DT_NEEDED, and theirs)");
        free_paths(paths, n);
    } else {
        printf("ok - git resolves # SKIP no git\n");
    }
    char *script = write_file("script", "#!/bin/sh\necho hi\n", 18, 0755);
    CHECK(resolve(script, &paths, &n, &err) == 0 && has(paths, script) && has(paths, "/bin/sh") &&
              has_suffix(paths, "/libc.so.6"),
          "a #! script: it, its interpreter and the interpreter's libraries");
    free_paths(paths, n);
    /* Appending to what is there: no file twice. */
    paths = NULL;
    n = 0;
    elfdeps_resolve(script, &paths, &n, &err);
    size_t first = n;
    elfdeps_resolve("/bin/sh", &paths, &n, &err);
    CHECK(n == first, "a second program already covered adds nothing");
    free_paths(paths, n);

    CHECK(resolve("bin/sh", &paths, &n, &err) == 125 && strstr(err.message, "absolute"),
          "a relative path is refused (%s)", err.message);
    free_paths(paths, n);
    CHECK(resolve("/nonexistent/program", &paths, &n, &err) == 127, "a missing program: 127");
    free_paths(paths, n);
    char *text = write_file("text", "just text\n", 10, 0755);
    CHECK(resolve(text, &paths, &n, &err) == 126 && strstr(err.message, "neither"),
          "neither a script nor an ELF: 126 (%s)", err.message);
    free_paths(paths, n);
    char *a = xasprintf("%s/loop-a", dir), *b = xasprintf("%s/loop-b", dir);
    char *sa = xasprintf("#!%s\n", b), *sb = xasprintf("#!%s\n", a);
    free(write_file("loop-a", sa, strlen(sa), 0755));
    free(write_file("loop-b", sb, strlen(sb), 0755));
    CHECK(resolve(a, &paths, &n, &err) == 0 && n == 2,
          "#! scripts that name each other: each once, no loop");
    free_paths(paths, n);
    char *rel = write_file("relshebang", "#!sh\n", 5, 0755);
    CHECK(resolve(rel, &paths, &n, &err) == 125, "a relative #! interpreter is refused");
    free_paths(paths, n);

    static const char strtab[] = "\0libnowhere-itest.so.9\0";
    Elf64_Dyn dyn[] = {
        {DT_STRTAB, {1024}}, {DT_STRSZ, {sizeof(strtab)}}, {DT_NEEDED, {1}}, {DT_NULL, {0}}};
    char *nowhere = make_elf("needs-nowhere", 2, dyn, 4, strtab, sizeof(strtab));
    CHECK(resolve(nowhere, &paths, &n, &err) == 125 && strstr(err.message, "libnowhere-itest"),
          "a library found nowhere is named (%s)", err.message);
    free_paths(paths, n);
    Elf64_Dyn bad_str[] = {
        {DT_STRTAB, {1 << 30}}, {DT_STRSZ, {64}}, {DT_NEEDED, {1}}, {DT_NULL, {0}}};
    char *badstr = make_elf("bad-strtab", 2, bad_str, 4, strtab, sizeof(strtab));
    CHECK(resolve(badstr, &paths, &n, &err) == 125 && strstr(err.message, "string table"),
          "a string table outside the file is refused");
    free_paths(paths, n);
    Elf64_Dyn big_str[] = {{DT_STRTAB, {1024}}, {DT_STRSZ, {1 << 29}}, {DT_NULL, {0}}};
    char *bigstr = make_elf("big-strtab", 2, big_str, 3, strtab, sizeof(strtab));
    CHECK(resolve(bigstr, &paths, &n, &err) == 125, "a string table larger than the file: refused");
    free_paths(paths, n);
    char *bignode = make_big_elf("big-node", 6 << 20);
    CHECK(resolve(bignode, &paths, &n, &err) == 0 && has_suffix(paths, "/libc.so.6"),
          "a 6 MiB dynamic string table (NodeSource's node has 5.3 MB) is read (%s)",
          n ? "" : err.message);
    free_paths(paths, n);
    free(bignode);
    Elf64_Dyn bad_needed[] = {
        {DT_STRTAB, {1024}}, {DT_STRSZ, {sizeof(strtab)}}, {DT_NEEDED, {4000}}, {DT_NULL, {0}}};
    char *badneed = make_elf("bad-needed", 2, bad_needed, 4, strtab, sizeof(strtab));
    CHECK(resolve(badneed, &paths, &n, &err) == 125 && strstr(err.message, "outside"),
          "a DT_NEEDED past its string table is refused");
    free_paths(paths, n);
    char *manyph = make_elf("many-phdrs", 60000, dyn, 4, strtab, sizeof(strtab));
    CHECK(resolve(manyph, &paths, &n, &err) == 125, "60000 program headers: refused, not read");
    free_paths(paths, n);
    Elf64_Dyn none[] = {{DT_NULL, {0}}};
    char *stat_ = make_elf("static", 1, none, 1, "", 1);
    CHECK(resolve(stat_, &paths, &n, &err) == 0 && n == 1, "a static ELF: itself only");
    free_paths(paths, n);

    char *cmd = xasprintf("rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleaned up");
    free(cmd);
    free(script), free(text), free(a), free(b), free(sa), free(sb), free(rel), free(nowhere);
    free(badstr), free(bigstr), free(badneed), free(manyph), free(stat_);
    return test_done();
}
