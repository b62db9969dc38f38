/* version.c - MS_VERSION comes from CMake's project(VERSION). */
#include "meshscaler/version.h"

#ifndef MS_VERSION
#define MS_VERSION "0.0.0-unknown"
#endif

const char *ms_version(void)
{
    return MS_VERSION;
}
