/* escape_addon: the native addon of the escape matrix's Node spoke (escape_spoke.mjs),
 * as a hostile npm package would ship one (a prebuilt .node file is an ordinary
 * shared library that node loads into its own process). It gives JavaScript the
 * system calls JavaScript cannot make, so that the Node spoke tries the kernel
 * interfaces too, under the node runtime's profile and seccomp preset:
 *
 *   sys(name, ...args)  one raw system call by name (arch-neutral), each argument a
 *                       number, a BigInt, a Buffer (its bytes' address), a string (a
 *                       NUL-terminated copy) or null; returns {ret: BigInt, errno: ""|"EPERM"...}
 *   forkExit(flags)     clone(flags | SIGCHLD) whose child _exits at once (a child of a
 *                       JavaScript process cannot run JavaScript); {ret, errno}, and
 *                       the parent has reaped the child
 *   forkSpin(ms, gateR, gateW)  clone(SIGCHLD) whose child waits until the gate pipe
 *                       is closed, spins for ms and _exits; {ret, errno}, not reaped
 *                       (sys("wait4", pid, ...) does)
 *   fill(addr, byte, len)  memset at an address a call returned (shmat's)
 *
 * N-API only (ABI-stable across Node versions); built without sanitizers, since it
 * runs inside node. */
#include <node_api.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARGS_MAX 7 /* a name and six arguments */
#define STR_MAX 4096

static const struct {
    const char *name;
    long nr;
} calls[] = {
    {"mount", SYS_mount},
    {"umount2", SYS_umount2},
    {"setns", SYS_setns},
    {"unshare", SYS_unshare},
    {"finit_module", SYS_finit_module},
    {"bpf", SYS_bpf},
    {"perf_event_open", SYS_perf_event_open},
    {"keyctl", SYS_keyctl},
    {"ptrace", SYS_ptrace},
    {"wait4", SYS_wait4},
    {"shmget", SYS_shmget},
    {"shmat", SYS_shmat},
    {"shmdt", SYS_shmdt},
    {"shmctl", SYS_shmctl},
    {"memfd_create", SYS_memfd_create},
    {"close", SYS_close},
    {"pipe2", SYS_pipe2},
    {"socket", SYS_socket},
    {"connect", SYS_connect},
    {"geteuid", SYS_geteuid},
};

static napi_value result(napi_env env, long ret, int err)
{
    napi_value obj, r, e;
    const char *name = err ? strerrorname_np(err) : "";
    napi_create_object(env, &obj);
    napi_create_bigint_int64(env, ret, &r);
    napi_create_string_utf8(env, name ? name : "?", NAPI_AUTO_LENGTH, &e);
    napi_set_named_property(env, obj, "ret", r);
    napi_set_named_property(env, obj, "errno", e);
    return obj;
}

static napi_value fail(napi_env env, const char *msg)
{
    napi_throw_type_error(env, NULL, msg);
    return NULL;
}

/* One JavaScript value as a system call argument; strings are copied into *owned. */
static int to_word(napi_env env, napi_value v, long *word, char **owned)
{
    napi_valuetype t;
    napi_typeof(env, v, &t);
    bool lossless;
    int64_t i64;
    double d;
    void *data;
    size_t len;
    bool is_buffer = false;
    switch (t) {
    case napi_null:
    case napi_undefined:
        *word = 0;
        return 0;
    case napi_number:
        napi_get_value_double(env, v, &d);
        *word = (long)d;
        return 0;
    case napi_bigint:
        napi_get_value_bigint_int64(env, v, &i64, &lossless);
        *word = (long)i64;
        return 0;
    case napi_string:
        napi_get_value_string_utf8(env, v, NULL, 0, &len);
        if (len >= STR_MAX)
            return -1;
        *owned = malloc(len + 1);
        if (!*owned)
            return -1;
        napi_get_value_string_utf8(env, v, *owned, len + 1, &len);
        *word = (long)(uintptr_t)*owned;
        return 0;
    case napi_object:
        napi_is_buffer(env, v, &is_buffer);
        if (!is_buffer)
            return -1;
        napi_get_buffer_info(env, v, &data, &len);
        *word = (long)(uintptr_t)data;
        return 0;
    default:
        return -1;
    }
}

static napi_value js_sys(napi_env env, napi_callback_info info)
{
    size_t argc = ARGS_MAX;
    napi_value argv[ARGS_MAX];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    char name[32];
    size_t nl = 0;
    if (argc < 1 || napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &nl) != napi_ok)
        return fail(env, "sys(name, ...args): name must be a string");
    long nr = -1;
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
        if (strcmp(calls[i].name, name) == 0)
            nr = calls[i].nr;
    if (nr < 0)
        return fail(env, "sys: not a call this addon knows");
    long a[ARGS_MAX - 1] = {0};
    char *owned[ARGS_MAX - 1] = {NULL};
    for (size_t i = 1; i < argc; i++)
        if (to_word(env, argv[i], &a[i - 1], &owned[i - 1]) < 0) {
            for (size_t j = 0; j < ARGS_MAX - 1; j++)
                free(owned[j]);
            return fail(env, "sys: an argument must be a number, BigInt, Buffer, string or null");
        }
    errno = 0;
    long ret = syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    int err = ret < 0 ? errno : 0;
    for (size_t j = 0; j < ARGS_MAX - 1; j++)
        free(owned[j]);
    return result(env, ret, err);
}

static napi_value js_fork_exit(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    int64_t flags = 0;
    if (argc < 1 || napi_get_value_int64(env, argv[0], &flags) != napi_ok)
        return fail(env, "forkExit(flags): flags must be a number");
    long ret = syscall(SYS_clone, (long)flags | SIGCHLD, 0L, 0L, 0L, 0L);
    if (ret == 0)
        _exit(0);
    int err = ret < 0 ? errno : 0;
    if (ret > 0)
        waitpid((pid_t)ret, NULL, 0);
    return result(env, ret, err);
}

static napi_value js_fork_spin(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    int64_t ms = 0, gate_r = -1, gate_w = -1;
    if (argc < 3 || napi_get_value_int64(env, argv[0], &ms) != napi_ok || ms < 0 ||
        napi_get_value_int64(env, argv[1], &gate_r) != napi_ok ||
        napi_get_value_int64(env, argv[2], &gate_w) != napi_ok)
        return fail(env, "forkSpin(ms, gateR, gateW)");
    long ret = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
    if (ret == 0) {
        /* The crowd starts together: forking a large process while the first of its
         * children already spin would take longer than their spin. */
        char c;
        close((int)gate_w);
        while (read((int)gate_r, &c, 1) < 0 && errno == EINTR) {
        }
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do
            clock_gettime(CLOCK_MONOTONIC, &now);
        while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < ms);
        _exit(0);
    }
    return result(env, ret, ret < 0 ? errno : 0);
}

static napi_value js_fill(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    int64_t addr = 0, byte = 0, len = 0;
    bool lossless;
    if (argc < 3 || napi_get_value_bigint_int64(env, argv[0], &addr, &lossless) != napi_ok ||
        napi_get_value_int64(env, argv[1], &byte) != napi_ok ||
        napi_get_value_int64(env, argv[2], &len) != napi_ok || len < 0)
        return fail(env, "fill(addr: BigInt, byte, len)");
    memset((void *)(uintptr_t)addr, (int)byte, (size_t)len);
    return NULL;
}

/* What node calls when it loads the file (N-API's well-known entry point). */
NAPI_MODULE_EXPORT napi_value napi_register_module_v1(napi_env env, napi_value exports);

napi_value napi_register_module_v1(napi_env env, napi_value exports)
{
    const napi_property_descriptor props[] = {
        {"sys", NULL, js_sys, NULL, NULL, NULL, napi_enumerable, NULL},
        {"forkExit", NULL, js_fork_exit, NULL, NULL, NULL, napi_enumerable, NULL},
        {"forkSpin", NULL, js_fork_spin, NULL, NULL, NULL, napi_enumerable, NULL},
        {"fill", NULL, js_fill, NULL, NULL, NULL, napi_enumerable, NULL},
    };
    napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
    return exports;
}
