/* lib/termtext: the characters a reader does not see, counted (tt_hidden_count, which
 * pinned descriptions are checked with) and made visible for an MCP client
 * (tt_visible_str, which a spoke's questions and sampling text go through). */
#include "termtext.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static struct tt_hidden count(const char *s)
{
    struct tt_hidden h;
    tt_hidden_count(s, strlen(s), &h);
    return h;
}

int main(void)
{
    struct tt_hidden h = count("Weather forecast.\nLine two,\ttabbed.\r\n\u00e9t\u00e9 \U0001F600 "
                               "\u200d \ufe0f");
    CHECK(!h.controls && !h.tags && !h.bidi && !h.invisible,
          "plain text, newlines, tabs, CRLF, accents, emoji and their joiners: nothing hidden");
    /* "<IMPORTANT>" as Unicode tags: invisible copies of ASCII. */
    h = count("Weather.\U000E003C\U000E0049\U000E004D\U000E0050");
    CHECK(h.tags == 4 && !h.bidi && !h.controls, "Unicode tags counted (%zu)", h.tags);
    h = count("abc\u202edrowssap\u202c\u2066x\u2069\u200f");
    CHECK(h.bidi == 5, "bidi overrides, isolates and marks counted (%zu)", h.bidi);
    h = count("a\u200bb\u2060c\ufeffd");
    CHECK(h.invisible == 3 && !h.bidi, "zero-width space, word joiner, BOM: invisible (%zu)",
          h.invisible);
    h = count("a\x1b[2Jb\x7f\xc2\x85");
    CHECK(h.controls == 3, "ESC, DEL and a C1 control counted (%zu)", h.controls);
    h = count("bad \xff\xfe utf-8 \xe2\x82");
    CHECK(h.controls == 4, "invalid UTF-8 counts as controls, a byte each (%zu)", h.controls);
    h = count("a real \xef\xbf\xbd replacement");
    CHECK(!h.controls, "a genuine U+FFFD is not");

    char *v = tt_visible_str("x\n\n\n\n\n\ny", 8, 100);
    CHECK(strcmp(v, "x\n\ny") == 0, "runs of newlines become one blank line (%s)", v);
    free(v);
    const char *s = "[hub] \u202eevil\U000E0041\x1b[31m\r\nok";
    v = tt_visible_str(s, strlen(s), 200);
    CHECK(strcmp(v, "[hub] \\u202eevil\\ue0041^[[31m\nok") == 0,
          "bidi, tags and ESC shown as escapes, CR dropped (%s)", v);
    free(v);
    v = tt_visible_str("\xff", 1, 100);
    CHECK(strcmp(v, "\xef\xbf\xbd") == 0, "invalid UTF-8 becomes U+FFFD");
    free(v);
    v = tt_visible_str("0123456789", 10, 4);
    CHECK(strcmp(v, "0123...") == 0, "cut at max_bytes with ... (%s)", v);
    free(v);
    v = tt_visible_str("\u00e9\u00e9\u00e9", 6, 3);
    CHECK(strcmp(v, "\u00e9...") == 0, "cut at a whole character (%s)", v);
    free(v);
    return test_done();
}
