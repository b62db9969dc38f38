/* clock.c - CLOCK_MONOTONIC and CLOCK_REALTIME as double seconds, waits and
 * sleeps on CLOCK_MONOTONIC, and RFC 3339 timestamps of wall-clock seconds. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "meshscaler/clock.h"

static double read_clock(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double ms_clock_monotonic(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

double ms_clock_wall(void)
{
    return read_clock(CLOCK_REALTIME);
}

/* seconds (clamped to 0 .. a day) as a timespec. */
static struct timespec span(double seconds)
{
    struct timespec ts;

    if (!(seconds > 0)) /* also NaN */
        seconds = 0;
    if (seconds > 86400)
        seconds = 86400;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - floor(seconds)) * 1e9);
    return ts;
}

void ms_clock_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
}

bool ms_clock_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, double deadline)
{
    struct timespec now, wait = span(deadline - ms_clock_monotonic());

    clock_gettime(CLOCK_MONOTONIC, &now);
    now.tv_sec += wait.tv_sec;
    now.tv_nsec += wait.tv_nsec;
    if (now.tv_nsec >= 1000000000L) {
        now.tv_sec++;
        now.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(c, m, &now) != ETIMEDOUT || ms_clock_monotonic() < deadline;
}

void ms_clock_sleep(double seconds)
{
    struct timespec ts = span(seconds);

    if (ts.tv_sec > 0 || ts.tv_nsec > 0)
        nanosleep(&ts, NULL);
}

void ms_time_rfc3339(double wall, bool micro, char *buf, size_t cap)
{
    time_t secs = (time_t)wall;
    struct tm tm;
    char base[32];

    gmtime_r(&secs, &tm);
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    if (micro) {
        long us = (long)((wall - (double)secs) * 1e6);
        if (us < 0)
            us = 0;
        if (us > 999999)
            us = 999999;
        snprintf(buf, cap, "%s.%06ldZ", base, us);
    } else {
        snprintf(buf, cap, "%sZ", base);
    }
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

bool ms_time_parse_rfc3339(const char *s, double *out)
{
    int y, mo, d, h, mi, sec, oh = 0, om = 0;
    struct tm tm;
    double frac = 0, scale = 0.1;
    const char *p;
    time_t t;

    if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &sec))
        return false;
    p = s + 19;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && digits(p + 1, 2, &oh) && p[3] == ':' &&
               digits(p + 4, 2, &om)) {
        int sign = *p == '-' ? -1 : 1;
        oh *= sign;
        om *= sign;
        p += 6;
    } else {
        return false;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    *out = (double)t + frac - (double)(oh * 3600 + om * 60);
    return true;
}
