/* lib/util: close_fds_except leaves stdio and exactly the listed descriptors open; hex
 * digits; host patterns; string vectors. */
#include "test.h"
#include "util.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

int main(void)
{
    int opened = 0;
    for (int fd = 10; fd <= 40; fd++)
        opened += dup2(0, fd) == fd;
    CHECK(opened == 31, "opened descriptors 10 to 40");

    /* Unsorted, with a duplicate, a stdio number and a number that is not open. */
    const int keep[] = {33, 12, 33, 1, 50};
    CHECK(close_fds_except(keep, ARRAY_LEN(keep)) == 0, "close_fds_except succeeds");
    CHECK(is_open(0) && is_open(1) && is_open(2), "stdio is left alone");
    CHECK(is_open(12) && is_open(33), "the kept descriptors are open");
    int stray = 0;
    for (int fd = 3; fd <= 64; fd++)
        if (fd != 12 && fd != 33 && fd != 50 && is_open(fd)) /* 50: kept, open if inherited */
            stray++;
    CHECK(stray == 0, "every other descriptor is closed (%d left)", stray);

    CHECK(close_fds_except(NULL, 0) == 0 && !is_open(12) && !is_open(33),
          "an empty list closes everything from 3 up");

    int many[65] = {0};
    CHECK(close_fds_except(many, ARRAY_LEN(many)) < 0, "more than 64 kept is refused");

    CHECK(hex_digit_value('0') == 0 && hex_digit_value('9') == 9 && hex_digit_value('a') == 10 &&
              hex_digit_value('F') == 15,
          "hex_digit_value: the digits of either case");
    CHECK(hex_digit_value('g') == -1 && hex_digit_value('/') == -1 && hex_digit_value('\0') == -1,
          "hex_digit_value: anything else is -1");
    char hex[9];
    const unsigned char raw[4] = {0x00, 0x0f, 0xa0, 0xff};
    hex_encode(raw, sizeof(raw), hex);
    CHECK(strcmp(hex, "000fa0ff") == 0, "hex_encode: two lowercase digits a byte (%s)", hex);
    hex_encode(raw, 0, hex);
    CHECK(hex[0] == '\0', "hex_encode: nothing is the empty string");

    CHECK(host_pattern_valid("api.example.com") && host_pattern_valid("*.example.com") &&
              host_pattern_valid("a-1.b.io"),
          "host_pattern_valid: names and *. patterns");
    const char *bad[] = {"",
                         "localhost",
                         "*.",
                         "*.com.",
                         ".example.com",
                         "-a.example.com",
                         "a..example.com",
                         "API.example.com",
                         "a_b.example.com",
                         "example.com:443",
                         "*.*.example.com",
                         "a.example.com."};
    int accepted = 0;
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        accepted += host_pattern_valid(bad[i]);
    char longname[300];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    longname[10] = '.';
    CHECK(accepted == 0 && !host_pattern_valid(longname),
          "host_pattern_valid: one label, empty labels, upper case, ports and 254+ characters "
          "are refused (%d accepted)",
          accepted);

    char *const words[] = {"one", "two", NULL};
    char **copy = strv_dup(words);
    CHECK(copy[0] && strcmp(copy[0], "one") == 0 && copy[0] != words[0] && copy[1] &&
              strcmp(copy[1], "two") == 0 && copy[2] == NULL,
          "strv_dup: each string copied, NULL at the end");
    for (size_t i = 0; copy[i]; i++)
        free(copy[i]);
    free(copy);
    char **none = strv_dup(NULL);
    CHECK(none && none[0] == NULL, "strv_dup(NULL): an empty vector");
    free(none);
    return test_done();
}
