/* The assistant's line editor (see lineedit.h). */
#include "lineedit.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

struct lineedit {
    int in, out;
    bool tty;
    char **hist;
    size_t n_hist;
    unsigned char rbuf[4096]; /* bytes read but not used yet */
    size_t rpos, rlen;
    bool eof;
};

/* The terminal's settings while a line is edited, to restore at exit whatever
 * happens (a fatal error must not leave the user's terminal raw). */
static struct termios saved_termios;
static int raw_fd = -1;

/* The settings before le_quiet(), likewise. */
static struct termios quiet_termios;
static int quiet_fd = -1;

static void restore_terminal(void)
{
    if (raw_fd >= 0) {
        tcsetattr(raw_fd, TCSAFLUSH, &saved_termios);
        raw_fd = -1;
    }
}

static void restore_quiet(void)
{
    if (quiet_fd >= 0) {
        /* TCSAFLUSH: what was typed while quiet is dropped, as promised. */
        tcsetattr(quiet_fd, TCSAFLUSH, &quiet_termios);
        quiet_fd = -1;
    }
}

/* At exit: a line being edited inside a quiet spell (a question during a request)
 * goes back to quiet first, then to what the user had. */
static void restore_all(void)
{
    restore_terminal();
    restore_quiet();
}

static void register_restore(void)
{
    static bool registered;
    if (!registered) {
        atexit(restore_all);
        registered = true;
    }
}

void le_quiet(struct lineedit *le, bool on)
{
    if (!le->tty)
        return;
    if (!on) {
        restore_quiet();
        return;
    }
    if (quiet_fd >= 0 || tcgetattr(le->in, &quiet_termios) < 0)
        return;
    register_restore();
    struct termios q = quiet_termios;
    /* No echo (type-ahead would land where the hub writes next) and no "^C" echo; ISIG
     * stays, so that Ctrl-C is still SIGINT, which cancels the request. */
    q.c_lflag &= ~(tcflag_t)(ECHO | ECHOCTL | ECHONL | ICANON);
    q.c_cc[VMIN] = 1;
    q.c_cc[VTIME] = 0;
    if (tcsetattr(le->in, TCSANOW, &q) == 0)
        quiet_fd = le->in;
}

static bool enter_raw(int fd)
{
    if (tcgetattr(fd, &saved_termios) < 0)
        return false;
    register_restore();
    struct termios raw = saved_termios;
    raw.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSAFLUSH, &raw) < 0)
        return false;
    raw_fd = fd;
    return true;
}

struct lineedit *le_new(int in_fd, int out_fd)
{
    struct lineedit *le = xcalloc(1, sizeof(*le));
    le->in = in_fd;
    le->out = out_fd;
    le->tty = isatty(in_fd) && isatty(out_fd);
    le->hist = xcalloc(LE_HISTORY_MAX + 1, sizeof(char *));
    return le;
}

void le_free(struct lineedit *le)
{
    if (!le)
        return;
    for (size_t i = 0; i < le->n_hist; i++)
        free(le->hist[i]);
    free(le->hist);
    free(le);
}

bool le_is_tty(const struct lineedit *le)
{
    return le->tty;
}

void le_history_add(struct lineedit *le, const char *line)
{
    if (!line[0] || (le->n_hist && strcmp(le->hist[le->n_hist - 1], line) == 0))
        return;
    if (le->n_hist == LE_HISTORY_MAX) {
        free(le->hist[0]);
        memmove(le->hist, le->hist + 1, (LE_HISTORY_MAX - 1) * sizeof(char *));
        le->n_hist--;
    }
    le->hist[le->n_hist++] = xstrndup(line, LE_MAX_LINE);
}

void le_discard_input(struct lineedit *le)
{
    le->rpos = le->rlen = 0;
    if (le->tty)
        tcflush(le->in, TCIFLUSH);
}

/* One byte; -1 at end of input, -2 when timeout_ms (>= 0) passed first. */
static int get_byte(struct lineedit *le, int timeout_ms)
{
    if (le->rpos < le->rlen)
        return le->rbuf[le->rpos++];
    if (le->eof)
        return -1;
    if (timeout_ms >= 0) {
        struct pollfd p = {.fd = le->in, .events = POLLIN};
        int r = poll(&p, 1, timeout_ms);
        if (r == 0)
            return -2;
    }
    for (;;) {
        ssize_t n = read(le->in, le->rbuf, le->tty ? 1 : sizeof(le->rbuf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            le->eof = true;
            return -1;
        }
        le->rpos = 1;
        le->rlen = (size_t)n;
        return le->rbuf[0];
    }
}

/* A plain line from a pipe or file. */
static enum le_status read_plain(struct lineedit *le, char **line)
{
    size_t cap = 256, len = 0;
    char *buf = xmalloc(cap);
    int c;
    while ((c = get_byte(le, -1)) >= 0 && c != '\n') {
        if (len + 1 >= LE_MAX_LINE)
            continue; /* the rest of an over-long line is dropped */
        if (len + 2 > cap)
            buf = xrealloc(buf, cap *= 2);
        buf[len++] = (char)c;
    }
    if (c < 0 && len == 0) {
        free(buf);
        return LE_EOF;
    }
    if (len && buf[len - 1] == '\r')
        len--;
    buf[len] = '\0';
    *line = buf;
    return LE_LINE;
}

/* --- editing --------------------------------------------------------------------- */

struct edit {
    struct lineedit *le;
    const char *prompt;
    size_t prompt_cols;
    char buf[LE_MAX_LINE];
    size_t len, pos; /* bytes; pos is on a character boundary */
    size_t scroll;   /* first character shown */
};

static bool is_cont(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

static size_t chars_in(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += !is_cont((unsigned char)s[i]);
    return k;
}

/* Byte offset of the k-th character. */
static size_t byte_of(const struct edit *e, size_t k)
{
    size_t i = 0;
    while (i < e->len && k > 0) {
        i++;
        while (i < e->len && is_cont((unsigned char)e->buf[i]))
            i++;
        k--;
    }
    return i;
}

static size_t term_cols(const struct lineedit *le)
{
    struct winsize ws;
    if (ioctl(le->out, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
        return ws.ws_col;
    return 80;
}

static void refresh(struct edit *e)
{
    size_t cols = term_cols(e->le);
    size_t avail = cols > e->prompt_cols + 2 ? cols - e->prompt_cols - 1 : 1;
    size_t cur = chars_in(e->buf, e->pos);
    if (cur < e->scroll)
        e->scroll = cur;
    if (cur >= e->scroll + avail)
        e->scroll = cur - avail + 1;
    size_t from = byte_of(e, e->scroll);
    size_t to = byte_of(e, e->scroll + avail);
    char *out = xasprintf("\r%s%.*s\x1b[0K\r\x1b[%zuC", e->prompt, (int)(to - from), e->buf + from,
                          e->prompt_cols + (cur - e->scroll));
    write_all(e->le->out, out, strlen(out));
    free(out);
}

static void set_line(struct edit *e, const char *s)
{
    size_t n = strnlen(s, sizeof(e->buf) - 1);
    memcpy(e->buf, s, n);
    e->len = e->pos = n;
    e->scroll = 0;
}

static void insert(struct edit *e, const char *s, size_t n)
{
    if (e->len + n >= sizeof(e->buf))
        return;
    memmove(e->buf + e->pos + n, e->buf + e->pos, e->len - e->pos);
    memcpy(e->buf + e->pos, s, n);
    e->len += n;
    e->pos += n;
}

static void delete_range(struct edit *e, size_t from, size_t to)
{
    memmove(e->buf + from, e->buf + to, e->len - to);
    e->len -= to - from;
    e->pos = from;
}

static size_t prev_char(const struct edit *e, size_t i)
{
    if (i == 0)
        return 0;
    i--;
    while (i > 0 && is_cont((unsigned char)e->buf[i]))
        i--;
    return i;
}

static size_t next_char(const struct edit *e, size_t i)
{
    if (i >= e->len)
        return e->len;
    i++;
    while (i < e->len && is_cont((unsigned char)e->buf[i]))
        i++;
    return i;
}

enum key {
    K_NONE = 256,
    K_UP,
    K_DOWN,
    K_LEFT,
    K_RIGHT,
    K_HOME,
    K_END,
    K_DELETE,
};

/* An escape sequence after ESC; K_NONE for one that is not understood. */
static int read_escape(struct lineedit *le)
{
    int a = get_byte(le, 50);
    if (a < 0)
        return K_NONE;
    int b = get_byte(le, 50);
    if (b < 0)
        return K_NONE;
    if (a == 'O')
        return b == 'H' ? K_HOME : b == 'F' ? K_END : K_NONE;
    if (a != '[')
        return K_NONE;
    if (b >= '0' && b <= '9') {
        int c = get_byte(le, 50);
        while (c >= 0 && c != '~' && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z'))
            c = get_byte(le, 50); /* parameters we do not use */
        if (c != '~')
            return K_NONE;
        return b == '1' || b == '7'   ? K_HOME
               : b == '4' || b == '8' ? K_END
               : b == '3'             ? K_DELETE
                                      : K_NONE;
    }
    switch (b) {
    case 'A':
        return K_UP;
    case 'B':
        return K_DOWN;
    case 'C':
        return K_RIGHT;
    case 'D':
        return K_LEFT;
    case 'H':
        return K_HOME;
    case 'F':
        return K_END;
    }
    return K_NONE;
}

static enum le_status edit_loop(struct edit *e, char **line)
{
    struct lineedit *le = e->le;
    size_t hpos = le->n_hist;
    char *scratch = NULL;
    enum le_status st = LE_LINE;
    refresh(e);
    for (;;) {
        int c = get_byte(le, -1);
        if (c < 0) {
            st = e->len ? LE_LINE : LE_EOF;
            break;
        }
        if (c == 27)
            c = read_escape(le);
        if (c == '\r' || c == '\n')
            break;
        switch (c) {
        case 3: /* Ctrl-C */
            st = LE_INTERRUPT;
            goto done;
        case 4: /* Ctrl-D */
            if (e->len == 0) {
                st = LE_EOF;
                goto done;
            }
            /* fall through */
        case K_DELETE:
            if (e->pos < e->len)
                delete_range(e, e->pos, next_char(e, e->pos));
            break;
        case 127:
        case 8: /* Backspace, Ctrl-H */
            if (e->pos > 0)
                delete_range(e, prev_char(e, e->pos), e->pos);
            break;
        case 1: /* Ctrl-A */
        case K_HOME:
            e->pos = 0;
            break;
        case 5: /* Ctrl-E */
        case K_END:
            e->pos = e->len;
            break;
        case 2: /* Ctrl-B */
        case K_LEFT:
            e->pos = prev_char(e, e->pos);
            break;
        case 6: /* Ctrl-F */
        case K_RIGHT:
            e->pos = next_char(e, e->pos);
            break;
        case 11: /* Ctrl-K */
            e->len = e->pos;
            break;
        case 21: /* Ctrl-U */
            delete_range(e, 0, e->pos);
            break;
        case 23: { /* Ctrl-W */
            size_t p = e->pos;
            while (p > 0 && e->buf[p - 1] == ' ')
                p--;
            while (p > 0 && e->buf[p - 1] != ' ')
                p--;
            delete_range(e, p, e->pos);
            break;
        }
        case 16: /* Ctrl-P */
        case K_UP:
            if (hpos > 0) {
                if (hpos == le->n_hist) {
                    free(scratch);
                    scratch = xstrndup(e->buf, e->len);
                }
                set_line(e, le->hist[--hpos]);
            }
            break;
        case 14: /* Ctrl-N */
        case K_DOWN:
            if (hpos < le->n_hist) {
                hpos++;
                set_line(e, hpos == le->n_hist ? (scratch ? scratch : "") : le->hist[hpos]);
            }
            break;
        case 12: /* Ctrl-L */
            write_all(le->out, "\x1b[H\x1b[2J", 7);
            break;
        default:
            if (c >= 32 && c < 256 && c != 127) {
                /* A UTF-8 sequence arrives as its lead byte and continuation bytes. */
                char seq[4] = {(char)c};
                size_t n = 1, need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
                while (n < need) {
                    int d = get_byte(le, 50);
                    if (d < 0 || !is_cont((unsigned char)d))
                        break;
                    seq[n++] = (char)d;
                }
                if (n == need && !(c >= 0x80 && c < 0xc0))
                    insert(e, seq, n);
            }
            break;
        }
        refresh(e);
    }
done:
    e->pos = e->len;
    refresh(e);
    write_all(le->out, "\r\n", 2);
    free(scratch);
    if (st == LE_LINE) {
        e->buf[e->len] = '\0';
        *line = xstrdup(e->buf);
    }
    return st;
}

enum le_status le_read(struct lineedit *le, const char *prompt, size_t prompt_cols, char **line)
{
    *line = NULL;
    if (!le->tty || !enter_raw(le->in))
        return read_plain(le, line);
    struct edit *e = xcalloc(1, sizeof(*e));
    e->le = le;
    e->prompt = prompt;
    e->prompt_cols = prompt_cols;
    enum le_status st = edit_loop(e, line);
    free(e);
    restore_terminal();
    return st;
}
