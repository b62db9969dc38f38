/*
 * version.h - the version meshscaler was built as.
 */
#ifndef MESHSCALER_VERSION_H
#define MESHSCALER_VERSION_H

/* "0.1.0" (static string, set by the build). */
const char *ms_version(void);

#endif
