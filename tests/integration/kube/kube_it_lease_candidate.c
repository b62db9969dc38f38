/*
 * kube_it_lease_candidate.c - one leader-election candidate process for
 * kube_it_lease: KUBECONFIG NAMESPACE LEASE IDENTITY. Prints
 * "LEADER <id>" when it starts leading and "STOPPED <id>" when it stops;
 * SIGTERM stops it gracefully (releasing the lease), SIGKILL does not.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "itest.h"
#include "meshscaler/lease.h"
#include "meshscaler/log.h"

static volatile sig_atomic_t stop;
static const char *id;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void started(void *ctx)
{
    (void)ctx;
    printf("LEADER %s\n", id);
    fflush(stdout);
}
static void stopped(void *ctx)
{
    (void)ctx;
    printf("STOPPED %s\n", id);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    ms_kube_lease_options_t o;
    ms_kube_elector_t *e;
    ms_kube_client_t *c;
    char err[MS_ERRBUF_SIZE];
    struct timespec ts = {0, 50 * 1000 * 1000};

    if (argc != 5) {
        fprintf(stderr, "usage: %s KUBECONFIG NAMESPACE LEASE IDENTITY\n", argv[0]);
        return 2;
    }
    id = argv[4];
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    ms_log_setup(MS_LOG_WARN, MS_LOG_TEXT, NULL);
    ms_http_global_init();
    c = it_client(argv[1], NULL);
    memset(&o, 0, sizeof o); /* the defaults: 15 s / 10 s / 2 s */
    o.namespace_ = argv[2];
    o.name = argv[3];
    o.identity = id;
    o.on_started_leading = started;
    o.on_stopped_leading = stopped;
    e = ms_kube_elector_new(c, &o, err, sizeof err);
    if (e == NULL || ms_kube_elector_start(e) != MS_OK) {
        fprintf(stderr, "%s: %s\n", id, err);
        return 1;
    }
    printf("CANDIDATE %s\n", id);
    fflush(stdout);
    while (!stop)
        nanosleep(&ts, NULL);
    ms_kube_elector_free(e); /* releases the lease if held */
    printf("EXIT %s\n", id);
    fflush(stdout);
    ms_kube_client_free(c);
    return 0;
}
