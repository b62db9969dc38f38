/*
 * sidecars.h - stand-ins for pods' sidecars on this host, for the direct
 * reads' test (tests/unit/test_scrape_fetch.c) and bench (bench/scrape_fetch.c):
 *
 *   real HAProxy processes (the `haproxy` on PATH), each serving its
 *   Prometheus exporter (`http-request use-service prometheus-exporter`) on
 *   one or more loopback addresses, with a frontend whose backend server
 *   has a given maxconn (the pod's in-flight limit);
 *   hostile endpoints, one thread each: a socket that accepts and never
 *   answers, an endless answer, garbage, an HTTP 500.
 *
 * Test code: aborts on a system call that fails where nothing should.
 */
#ifndef MS_TEST_SIDECARS_H
#define MS_TEST_SIDECARS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A free TCP port on 127.0.0.1 (bound, read, closed). */
unsigned sc_free_port(void);
/* A port on 127.0.0.1 with no listener: connecting is refused. */
unsigned sc_refused_port(void);

typedef struct {
    pid_t pid;
    unsigned exporter_port; /* on every address of addrs */
    unsigned frontend_port; /* on 127.0.0.1 */
    char cfg[256];
} sc_haproxy_t;

/* Start HAProxy: exporter on addrs[0..naddrs) (IPv4 loopback addresses, NULL
 * naddrs 0: 127.0.0.1), frontend -> backend `app` with one server at
 * 127.0.0.1:backend_port with maxconn smax. Waits until every exporter
 * address answers (5 s). False when haproxy is missing or did not start. */
bool sc_haproxy_start(sc_haproxy_t *h, const char *dir, const char *name, const char *const *addrs,
                      size_t naddrs, unsigned backend_port, unsigned smax);
void sc_haproxy_stop(sc_haproxy_t *h);

typedef enum {
    SC_SILENT,  /* accepts, reads, never answers */
    SC_ENDLESS, /* 200, then valid lines without end */
    SC_GARBAGE, /* 200 with text that is not the format */
    SC_E500,    /* 500 with a small body */
} sc_mode_t;

typedef struct sc_hostile sc_hostile_t;

sc_hostile_t *sc_hostile_start(sc_mode_t mode);
unsigned sc_hostile_port(const sc_hostile_t *h);
/* Connections it accepted so far. */
size_t sc_hostile_accepted(const sc_hostile_t *h);
void sc_hostile_stop(sc_hostile_t *h);

/* Open n connections to 127.0.0.1:port, each sending one GET, and keep them
 * (fds[0..n)); close with sc_close_all. */
void sc_hold_requests(unsigned port, int *fds, size_t n);
void sc_close_all(int *fds, size_t n);

#endif
