/*
 * clock.h - the two clocks, read in one place (curl's TIME-KEEPING lesson):
 * monotonic seconds for windows, periods and timeouts; wall-clock seconds
 * since the epoch only for timestamps people and the API server read.
 * Callers read a clock once per tick and pass the value down.
 */
#ifndef MESHSCALER_CLOCK_H
#define MESHSCALER_CLOCK_H

#include <stdbool.h>
#include <stddef.h>

double ms_clock_monotonic(void);
double ms_clock_wall(void);

/* wall as RFC 3339 in UTC: "2026-12-01T04:05:06Z", or with micro
 * "2026-12-01T04:05:06.123456Z" (metav1.MicroTime). */
void ms_time_rfc3339(double wall, bool micro, char *buf, size_t cap);
/* An RFC 3339 timestamp (fraction and offset optional as the format allows)
 * into wall-clock seconds; false (and *out untouched) on anything else. */
bool ms_time_parse_rfc3339(const char *s, double *out);

#endif
