/*
 * duration.c - Go durations (include/meshscaler/duration.h).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "meshscaler/duration.h"

bool ms_duration_parse(const char *text, double *seconds)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {
        /* longest first, so "ms" is not read as "m" */
        {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"\xce\xbcs", 1e-6},
        {"ms", 1e-3}, {"s", 1},     {"m", 60},           {"h", 3600},
    };
    const char *p = text;
    double total = 0;

    if (*p == '+')
        p++;
    if (strcmp(p, "0") == 0) {
        *seconds = 0;
        return true;
    }
    if (*p == '\0')
        return false;
    while (*p) {
        double v = 0, scale = 0.1;
        bool digits = false;
        size_t u;

        for (; *p >= '0' && *p <= '9'; p++, digits = true)
            v = v * 10 + (*p - '0');
        if (*p == '.')
            for (p++; *p >= '0' && *p <= '9'; p++, digits = true, scale /= 10)
                v += (*p - '0') * scale;
        if (!digits)
            return false;
        for (u = 0; u < sizeof units / sizeof units[0]; u++)
            if (strncmp(p, units[u].unit, strlen(units[u].unit)) == 0)
                break;
        if (u == sizeof units / sizeof units[0])
            return false; /* no unit, or an unknown one */
        p += strlen(units[u].unit);
        total += v * units[u].scale;
    }
    if (!isfinite(total))
        return false;
    *seconds = total;
    return true;
}
