/*
 * server.h - the controller's HTTP endpoints on libwebsockets, in a thread
 * of their own: /metrics on the metrics address, /healthz and /readyz on
 * the health-probe address (controller-runtime's layout).
 *
 * Ownership: the server borrows the registry and the flags in its options;
 * they must outlive ms_server_stop(). Start and stop from one thread; the
 * flags may be changed from any thread.
 */
#ifndef MESHSCALER_SERVER_H
#define MESHSCALER_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/error.h"
#include "meshscaler/metrics.h"

typedef struct {
    /* "HOST:PORT" or ":PORT" (all interfaces); port 0 picks a free one;
     * "0" or NULL turns the endpoint off, as in controller-runtime. */
    const char *metrics_addr;
    const char *health_addr;
    ms_metrics_t *metrics;     /* rendered on /metrics; may be NULL */
    const atomic_bool *ready;  /* /readyz is 200 while true, else 503 */
    const atomic_bool *alive;  /* /healthz is 200 while true; NULL: always */
} ms_server_options_t;

typedef struct ms_server ms_server_t;

/* Bind both addresses and start serving. NULL with the reason in errbuf when
 * an address is malformed or cannot be bound (MS_ERR_INVALID / MS_ERR_IO). */
ms_server_t *ms_server_start(const ms_server_options_t *opts, char *errbuf, size_t errlen);

/* The bound ports (useful with port 0); -1 when that endpoint is off. */
int ms_server_metrics_port(const ms_server_t *s);
int ms_server_health_port(const ms_server_t *s);

/* Stop serving, join the thread, free. NULL does nothing. */
void ms_server_stop(ms_server_t *s);

#endif
