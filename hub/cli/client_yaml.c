#include "client_yaml.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lines of the text, as offsets. */
struct lines {
    size_t *start, *len; /* len with its newline */
    size_t n;
};

static void split_lines(const char *text, struct lines *l)
{
    memset(l, 0, sizeof(*l));
    for (size_t off = 0; text[off];) {
        const char *nl = strchr(text + off, '\n');
        size_t n = nl ? (size_t)(nl - (text + off)) + 1 : strlen(text + off);
        l->start = xrealloc(l->start, (l->n + 1) * sizeof(size_t));
        l->len = xrealloc(l->len, (l->n + 1) * sizeof(size_t));
        l->start[l->n] = off;
        l->len[l->n++] = n;
        off += n;
    }
}

static void lines_free(struct lines *l)
{
    free(l->start);
    free(l->len);
}

static size_t indent_of(const char *line)
{
    size_t i = 0;
    while (line[i] == ' ')
        i++;
    return i;
}

/* Blank or a comment: no part of the structure. */
static bool is_blank(const char *line)
{
    const char *p = line + indent_of(line);
    return *p == '\n' || *p == '\0' || *p == '#' || *p == '\r';
}

/* The key of a "KEY:" line at its indentation (quotes removed), else false. */
static bool line_key(const char *line, char *key, size_t keylen)
{
    const char *p = line + indent_of(line);
    char q = (*p == '"' || *p == '\'') ? *p : 0;
    const char *s = p + (q ? 1 : 0);
    size_t n = q ? strcspn(s, q == '"' ? "\"\n" : "'\n") : strcspn(s, ":\n");
    const char *after = s + n + (q ? 1 : 0);
    if (n == 0 || n >= keylen || (q && s[n] != q) || *after != ':')
        return false;
    memcpy(key, s, n);
    key[n] = '\0';
    return true;
}

/* Where the container's block is: its header line, the lines after it that belong to
 * it [first, end), the indentation of its entries (0: none yet). header -1: absent.
 * False with err when the container is there but not a block mapping (a flow one other
 * than "{}", a scalar, or at an indentation). */
struct block {
    long header;
    size_t first, end, indent;
    bool empty_flow; /* "extensions: {}" */
};

static bool find_block(const struct client_kind *k, const char *file, const char *text,
                       const struct lines *l, struct block *b, char *err, size_t errlen)
{
    memset(b, 0, sizeof(*b));
    b->header = -1;
    size_t clen = strlen(k->container);
    for (size_t i = 0; i < l->n; i++) {
        const char *line = text + l->start[i];
        if (strncmp(line, k->container, clen) != 0 || line[clen] != ':')
            continue;
        const char *rest = line + clen + 1;
        rest += strspn(rest, " ");
        if (strncmp(rest, "{}", 2) == 0) {
            const char *after = rest + 2 + strspn(rest + 2, " ");
            if (*after == '\n' || *after == '\0' || *after == '#' || *after == '\r')
                b->empty_flow = true;
        }
        if (!b->empty_flow && *rest != '\n' && *rest != '\0' && *rest != '#' && *rest != '\r') {
            snprintf(err, errlen,
                     "%s: \"%s\" is not a block mapping (one entry a line): not changed; "
                     "edit it by hand",
                     file, k->container);
            return false;
        }
        b->header = (long)i;
        b->first = b->end = i + 1;
        for (size_t j = i + 1; j < l->n; j++) {
            const char *lj = text + l->start[j];
            if (is_blank(lj))
                continue;
            if (indent_of(lj) == 0)
                break;
            if (!b->indent)
                b->indent = indent_of(lj);
            b->end = j + 1;
        }
        if (b->empty_flow && b->end > b->first) {
            snprintf(err, errlen, "%s: \"%s: {}\" followed by entries: not changed", file,
                     k->container);
            return false;
        }
        return true;
    }
    return true;
}

/* The lines [from, to) of the entry name in the block, when there. */
static bool find_entry(const char *text, const struct lines *l, const struct block *b,
                       const char *name, size_t *from, size_t *to)
{
    for (size_t i = b->first; i < b->end; i++) {
        const char *line = text + l->start[i];
        char key[256];
        if (is_blank(line) || indent_of(line) != b->indent || !line_key(line, key, sizeof(key)) ||
            strcmp(key, name) != 0)
            continue;
        size_t j = i + 1;
        while (j < b->end) {
            const char *lj = text + l->start[j];
            if (!is_blank(lj) && indent_of(lj) <= b->indent)
                break;
            j++;
        }
        *from = i;
        *to = j;
        return true;
    }
    return false;
}

static void yaml_scalar(FILE *f, const char *s)
{
    /* A JSON string is a YAML double-quoted scalar, escapes and all. */
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(t ? t : "\"\"", f);
    free(t);
    json_decref(j);
}

static void write_entry(FILE *f, const struct client_kind *k, size_t indent, const char *name,
                        const struct client_entry *e)
{
    const char *pad = "                ";
    int in = (int)indent, in2 = (int)indent + 2;
    fprintf(f, "%.*s%s:\n", in, pad, name);
    fprintf(f, "%.*sname: ", in2, pad);
    yaml_scalar(f, name);
    fprintf(f, "\n%.*stype: %s\n", in2, pad, e->url ? k->http_type : k->stdio_type);
    fprintf(f, "%.*senabled: true\n", in2, pad);
    if (e->url) {
        fprintf(f, "%.*s%s: ", in2, pad, k->url_key);
        yaml_scalar(f, e->url);
        fputc('\n', f);
        if (e->token) {
            char *bearer = xasprintf("Bearer %s", e->token);
            fprintf(f, "%.*sheaders: {\"Authorization\": ", in2, pad);
            yaml_scalar(f, bearer);
            fputs("}\n", f);
            free(bearer);
        }
    } else {
        fprintf(f, "%.*scmd: ", in2, pad);
        yaml_scalar(f, e->command);
        fprintf(f, "\n%.*sargs: [", in2, pad);
        for (const char *const *a = e->args; a && *a; a++) {
            if (a != e->args)
                fputs(", ", f);
            yaml_scalar(f, *a);
        }
        fputs("]\n", f);
    }
    fprintf(f, "%.*senvs: {}\n%.*senv_keys: []\n%.*stimeout: 300\n%.*sbundled: null\n", in2, pad,
            in2, pad, in2, pad, in2, pad);
    fprintf(f, "%.*sdescription: \"IsolateGPT hub: sandboxed MCP apps\"\n", in2, pad);
}

/* The lines of text and the block of k's servers among them: false, with nothing left
 * to free, and err when the file cannot be edited safely. */
static bool read_servers(const struct client_kind *k, const char *file, const char *text,
                         struct lines *l, struct block *b, char *err, size_t errlen)
{
    split_lines(text, l);
    if (find_block(k, file, text, l, b, err, errlen))
        return true;
    lines_free(l);
    return false;
}

char *yaml_edit(const struct client_kind *k, const char *file, const char *text, const char *name,
                const struct client_entry *e, bool *found, char *err, size_t errlen)
{
    text = text ? text : "";
    struct lines l;
    struct block b;
    if (!read_servers(k, file, text, &l, &b, err, errlen))
        return NULL;
    size_t from = 0, to = 0;
    bool there = b.header >= 0 && find_entry(text, &l, &b, name, &from, &to);
    if (found)
        *found = there;
    size_t insert = there ? from : b.end; /* the entry's place, else the block's end */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (size_t i = 0; i < l.n; i++) {
        if (e && b.header >= 0 && i == insert)
            write_entry(f, k, b.indent ? b.indent : 2, name, e);
        if (there && i >= from && i < to)
            continue;
        if ((long)i == b.header && b.empty_flow)
            fprintf(f, "%s:\n", k->container);
        else
            fwrite(text + l.start[i], 1, l.len[i], f);
        if (i + 1 == l.n && l.len[i] && text[l.start[i] + l.len[i] - 1] != '\n')
            fputc('\n', f);
    }
    if (e && b.header >= 0 && insert >= l.n)
        write_entry(f, k, b.indent ? b.indent : 2, name, e);
    if (e && b.header < 0) {
        fprintf(f, "%s:\n", k->container);
        write_entry(f, k, 2, name, e);
    }
    fclose(f);
    lines_free(&l);
    return buf;
}

json_t *yaml_list(const struct client_kind *k, const char *file, const char *text, char *err,
                  size_t errlen)
{
    struct lines l;
    struct block b;
    if (!read_servers(k, file, text, &l, &b, err, errlen))
        return NULL;
    json_t *out = json_object();
    for (size_t i = b.first; b.header >= 0 && i < b.end; i++) {
        const char *line = text + l.start[i];
        char key[256];
        if (!is_blank(line) && indent_of(line) == b.indent && line_key(line, key, sizeof(key)))
            json_object_set_new(out, key, json_string("(see the file)"));
    }
    lines_free(&l);
    return out;
}
