/* Internals shared by memory.c (the front: validation, entries, grant logic, the
 * in-process tier of once/session grants) and its back ends (memory_redis.c,
 * memory_local.c), which only store lists and hashes under keys. */
#ifndef HUB_MEMORY_IMPL_H
#define HUB_MEMORY_IMPL_H

#include "memory.h"

struct memory_ops {
    const char *kind;
    bool persistent;
    /* Appends entry to the list at key unless one of its last few entries is equal
     * (entries carry a unique id, so a resend after a lost reply is not doubled),
     * then trims the list to its last max entries. */
    int (*list_append)(struct memory *m, const char *key, const char *entry, size_t max, char *err,
                       size_t errlen);
    /* As list_append, but returns once the command is sent; its reply is read before
     * the next command or by sync (NULL: the front uses list_append). */
    int (*list_append_sent)(struct memory *m, const char *key, const char *entry, size_t max,
                            char *err, size_t errlen);
    /* Reads the replies to what list_append_sent sent, resending what was not
     * acknowledged: 0, or -1 and err when a write could not be stored. NULL: nothing
     * is ever pending. */
    int (*sync)(struct memory *m, char *err, size_t errlen);
    /* The last n items, oldest first; *items is a malloc'd array of malloc'd strings. */
    int (*list_last)(struct memory *m, const char *key, size_t n, char ***items, size_t *count,
                     char *err, size_t errlen);
    int (*del)(struct memory *m, const char *key, char *err, size_t errlen);
    int (*hash_set)(struct memory *m, const char *key, const char *field, const char *value,
                    char *err, size_t errlen);
    /* *value is NULL when the field does not exist. */
    int (*hash_get)(struct memory *m, const char *key, const char *field, char **value, char *err,
                    size_t errlen);
    int (*hash_all)(struct memory *m, const char *key, char ***fields, char ***values,
                    size_t *count, char *err, size_t errlen);
    /* Sets the field only if it does not exist: 1 set, 0 it was there, -1 error. */
    int (*hash_setnx)(struct memory *m, const char *key, const char *field, const char *value,
                      char *err, size_t errlen);
    /* Returns the number of fields removed (0 or 1). */
    int (*hash_del)(struct memory *m, const char *key, const char *field, char *err, size_t errlen);
    void (*destroy)(struct memory *m);
};

struct session_grant {
    char user[MEMORY_USER_MAX + 1];
    struct grant g;
};

struct memory {
    const struct memory_ops *ops;
    void *impl;
    struct memory_config cfg; /* strings point at copies owned by the back end or here */
    char *prefix;
    char *describe;
    struct session_grant *session; /* once and session grants: this hub process only */
    size_t n_session, cap_session;
    json_t *failed_writes;    /* messages, since memory_take_failed_writes() */
    unsigned failed_unlisted; /* past MEMORY_FAILED_WRITES_MAX */
    struct audit *audit;      /* borrowed; NULL: stderr only */
};

struct memory *memory_redis_open(const char *addr, const struct memory_config *cfg, char *err,
                                 size_t errlen);
/* path NULL: in the process only; else the hashes are kept in that file too. */
struct memory *memory_local_open(const struct memory_config *cfg, const char *path, char *err,
                                 size_t errlen);

void memory_strv_free(char **v, size_t n);

#endif
