/* fixture_file.h - the unit tests' one reader of recorded fixtures (header-only:
 * each test is a program of its own). Include it after cmocka.h. */
#ifndef MS_TEST_FIXTURE_FILE_H
#define MS_TEST_FIXTURE_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The whole of DIR/NAME, NUL-terminated, in a buffer the caller frees; its length in
 * *len. A fixture that cannot be read fails the test. */
static inline char *read_fixture_file(const char *dir, const char *name, size_t *len)
{
    char path[512];
    FILE *f;
    char *buf;
    long n = 0;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open fixture %s", path);
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        fail_msg("cannot size fixture %s", path);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

#endif
