/*
 * duration.h - Go durations ("300ms", "1.5h", "2h45m") as seconds, the form
 * every duration flag and option takes (the controller's flags, replay's
 * --step and "now-2h").
 *
 * Pure and reentrant.
 */
#ifndef MESHSCALER_DURATION_H
#define MESHSCALER_DURATION_H

#include <stdbool.h>

/* Parse a Go duration ("300ms", "1.5h", "2h45m", "0") into seconds. false
 * (and *seconds untouched) for anything else, negative ones included. */
bool ms_duration_parse(const char *text, double *seconds);

#endif
