/* A small line editor for the assistant's terminal: raw mode, one line with
 * horizontal scrolling, UTF-8 aware cursor movement, and a history.
 *
 * Keys: printable text inserts; Left/Right (Ctrl-B/F) move; Home/End (Ctrl-A/E);
 * Backspace (Ctrl-H) and Delete (Ctrl-D on a non-empty line) delete; Ctrl-K, Ctrl-U,
 * Ctrl-W cut to the end, to the start, the word before; Up/Down (Ctrl-P/N) walk the
 * history; Ctrl-L redraws; Enter accepts; Ctrl-C abandons the line; Ctrl-D on an
 * empty line is the end of input.
 *
 * Written here rather than taken from libedit: the hub needs one line, a history and
 * a guarantee that nothing typed reaches the terminal unneutralised, and a new
 * library dependency in the trusted process for that is not worth it.
 *
 * When the input is not a terminal, le_read() reads a plain line (no echo, no
 * editing), so the same code serves pipes and scripts. */
#ifndef HUB_LINEEDIT_H
#define HUB_LINEEDIT_H

#include <stdbool.h>
#include <stddef.h>

#define LE_MAX_LINE 8192
#define LE_HISTORY_MAX 500

struct lineedit;

struct lineedit *le_new(int in_fd, int out_fd);
void le_free(struct lineedit *le);
bool le_is_tty(const struct lineedit *le);

/* Adds a line to the history (empty lines and repeats of the last one are skipped). */
void le_history_add(struct lineedit *le, const char *line);

enum le_status { LE_LINE, LE_EOF, LE_INTERRUPT };

/* Shows prompt (prompt_cols: its width on screen; it may hold colour sequences) and
 * reads a line. LE_LINE and *line (malloc'd), LE_EOF, or LE_INTERRUPT (Ctrl-C). */
enum le_status le_read(struct lineedit *le, const char *prompt, size_t prompt_cols, char **line);

/* Discards what was typed ahead (before a question, so that type-ahead cannot answer
 * it). */
void le_discard_input(struct lineedit *le);

/* While a request runs (on) the terminal echoes nothing, not even "^C" for Ctrl-C
 * (which stays a signal): type-ahead, which the hub discards, would otherwise appear
 * where the hub writes its next line. Off restores the settings and drops what was
 * typed. Questions asked meanwhile (le_read) work as usual. */
void le_quiet(struct lineedit *le, bool on);

#endif
