#include "cli_logtail.h"
#include "termtext.h"

#include <stdio.h>

void cli_show_log_tail(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char buf[CLI_LOG_TAIL + 1];
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    size_t n = fseek(f, size > CLI_LOG_TAIL ? size - CLI_LOG_TAIL : 0, SEEK_SET) == 0
                   ? fread(buf, 1, CLI_LOG_TAIL, f)
                   : 0;
    fclose(f);
    struct tt_stream ts;
    tt_stream_init(&ts, stderr, "  | ", 0);
    tt_stream_write(&ts, buf, n);
    tt_stream_end(&ts);
}
