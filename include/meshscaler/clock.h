/*
 * clock.h - the two clocks, read in one place (curl's TIME-KEEPING lesson):
 * monotonic seconds for windows, periods and timeouts; wall-clock seconds
 * since the epoch only for timestamps people and the API server read.
 * Callers read a clock once per tick and pass the value down. Timed waits
 * and sleeps go through here too, on the monotonic clock, so a step of the
 * wall clock neither cuts nor stretches them. Thread-safe.
 */
#ifndef MESHSCALER_CLOCK_H
#define MESHSCALER_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

double ms_clock_monotonic(void);
double ms_clock_wall(void);

/* Initialize c (caller's storage; pthread_cond_destroy it) for
 * ms_clock_cond_wait_until. */
void ms_clock_cond_init(pthread_cond_t *c);
/* pthread_cond_timedwait on c (from ms_clock_cond_init, m locked) until the
 * monotonic time `deadline` (ms_clock_monotonic seconds), waiting at most a
 * day at once. False when that time passed; else true (woken, perhaps
 * spuriously, or a day went by): callers loop on their condition. */
bool ms_clock_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, double deadline);
/* Sleep about `seconds` (<= 0: return at once). */
void ms_clock_sleep(double seconds);

/* wall as RFC 3339 in UTC: "2026-12-01T04:05:06Z", or with micro
 * "2026-12-01T04:05:06.123456Z" (metav1.MicroTime). */
void ms_time_rfc3339(double wall, bool micro, char *buf, size_t cap);
/* An RFC 3339 timestamp (fraction and offset optional as the format allows)
 * into wall-clock seconds; false (and *out untouched) on anything else. */
bool ms_time_parse_rfc3339(const char *s, double *out);

#endif
