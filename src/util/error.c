/* error.c - names and messages of ms_err_t, and the detail-buffer writer. */
#include <stdarg.h>
#include <stdio.h>

#include "meshscaler/error.h"

static const char *const err_names[] = {
#define MS__ERR_NAME(name, msg) "MS_ERR_" #name,
    MS_ERRNO_MAP(MS__ERR_NAME)
#undef MS__ERR_NAME
};

static const char *const err_messages[] = {
#define MS__ERR_MSG(name, msg) msg,
    MS_ERRNO_MAP(MS__ERR_MSG)
#undef MS__ERR_MSG
};

const char *ms_err_name(ms_err_t err)
{
    if ((unsigned)err >= MS_ERR__COUNT)
        return "MS_ERR_UNKNOWN";
    return err_names[err];
}

const char *ms_strerror(ms_err_t err)
{
    if ((unsigned)err >= MS_ERR__COUNT)
        return "unknown error";
    return err_messages[err];
}

ms_err_t ms_errf(char *buf, size_t len, ms_err_t err, const char *fmt, ...)
{
    va_list ap;

    if (buf == NULL || len == 0)
        return err;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    /* A detail message is one line, whatever the input it quotes. */
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return err;
}
