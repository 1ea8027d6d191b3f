/* lib/util: close_fds_except leaves stdio and exactly the listed descriptors open. */
#include "test.h"
#include "util.h"

#include <fcntl.h>
#include <stdbool.h>
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
    return test_done();
}
