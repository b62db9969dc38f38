/*
 * itest.h - what the Kubernetes client's integration tests share: the
 * environment the runner (run.sh) sets, checks that print one line each,
 * kubectl for setting up and cross-checking, and client construction.
 *
 * A test run without its environment exits 77 (ctest: skipped).
 */
#ifndef MS_KUBE_ITEST_H
#define MS_KUBE_ITEST_H

#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/kube.h"

typedef struct {
    const char *state;      /* MESHSCALER_E2E_STATE */
    const char *admin;      /* admin kubeconfig (client certificate, system:masters) */
    const char *restricted; /* the controller's identity (ServiceAccount token + ClusterRole) */
    const char *kubectl;
    const char *apiserver_sh; /* tests/integration/kube/apiserver.sh */
    const char *bindir;       /* where the test binaries are */
    const char *srcdir;       /* tests/integration/kube */
} it_env_t;

extern it_env_t it;

/* Read the environment; exit 77 when it is not there. Sets up logging. */
void it_init(const char *name);
/* Print "ok - what" or "FAIL - what: detail"; returns cond. */
bool it_check(bool cond, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Print "# text" (a figure or a note). */
void it_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the tally "N passed, N failed" and return the exit code. */
int it_done(void);

/* Run kubectl --kubeconfig <admin> ARGS (a shell string); output into out
 * (may be NULL). Returns the exit status. */
int it_kubectl(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Run a shell command; output into out (may be NULL). */
int it_sh(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A client for a kubeconfig file; aborts the test on failure. */
ms_kube_client_t *it_client(const char *kubeconfig, const ms_kube_client_options_t *o);
/* The user name the server sees for this client (SelfSubjectReview), or
 * the error message. */
const char *it_whoami(ms_kube_client_t *c, char *buf, size_t cap);
double it_now(void);
void it_sleep(double s);
/* Fresh namespace "<prefix>-<random>", created with kubectl; name in buf. */
void it_namespace(const char *prefix, char *buf, size_t cap);

#endif
