/*
 * clock.h - the two clocks, read in one place (curl's TIME-KEEPING lesson):
 * monotonic seconds for windows, periods and timeouts; wall-clock seconds
 * since the epoch only for timestamps people and the API server read.
 * Callers read a clock once per tick and pass the value down.
 */
#ifndef MESHSCALER_CLOCK_H
#define MESHSCALER_CLOCK_H

double ms_clock_monotonic(void);
double ms_clock_wall(void);

#endif
