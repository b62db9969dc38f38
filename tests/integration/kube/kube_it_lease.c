/*
 * kube_it_lease.c - leader election between real processes on a real Lease,
 * with the production timings (15 s lease, 10 s renew deadline, 2 s retry)
 * and the restricted identity: exactly one leader at a time; a killed leader
 * (SIGKILL, no release) is replaced once its lease expires; a leader that
 * shuts down (SIGTERM) releases the lease and is replaced at once.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "meshscaler/clock.h"
#include "itest.h"
#include "kube/kube_internal.h"

#define MAXC 3

typedef struct {
    char id[32];
    pid_t pid;
    int fd;
    char buf[1024];
    size_t len;
    bool leader, alive;
    double leader_since;
} cand_t;

static cand_t cands[MAXC];
static int ncands, overlaps;
static char lease[64];

static void spawn(const char *id)
{
    cand_t *c = &cands[ncands++];
    char bin[600];
    int fds[2];

    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(bin, sizeof bin, "%s/kube_it_lease_candidate", it.bindir);
    if (pipe(fds) != 0)
        abort();
    c->pid = fork();
    if (c->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(bin, bin, it.restricted, "meshscaler-system", lease, id, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    c->fd = fds[0];
    c->alive = true;
}

static int leaders(void)
{
    int n = 0;
    for (int i = 0; i < ncands; i++)
        n += cands[i].alive && cands[i].leader;
    return n;
}

/* Read what the candidates say for up to secs, or until want(leader count)
 * holds. Returns the index of the current leader or -1. */
static int pump(double secs, int until_leader_not)
{
    double end = it_now() + secs;

    while (it_now() < end) {
        struct pollfd p[MAXC];
        for (int i = 0; i < ncands; i++)
            p[i] = (struct pollfd){cands[i].alive ? cands[i].fd : -1, POLLIN, 0};
        poll(p, (nfds_t)ncands, 100);
        for (int i = 0; i < ncands; i++) {
            cand_t *c = &cands[i];
            ssize_t n;
            char *nl;
            if (!(p[i].revents & (POLLIN | POLLHUP)))
                continue;
            n = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
            if (n <= 0) {
                c->alive = false;
                c->leader = false;
                continue;
            }
            c->len += (size_t)n;
            c->buf[c->len] = '\0';
            while ((nl = strchr(c->buf, '\n')) != NULL) {
                *nl = '\0';
                if (strncmp(c->buf, "LEADER ", 7) == 0) {
                    c->leader = true;
                    c->leader_since = it_now();
                } else if (strncmp(c->buf, "STOPPED ", 8) == 0) {
                    c->leader = false;
                }
                memmove(c->buf, nl + 1, strlen(nl + 1) + 1);
                c->len = strlen(c->buf);
            }
            if (leaders() > 1)
                overlaps++;
        }
        for (int i = 0; i < ncands; i++)
            if (cands[i].alive && cands[i].leader && i != until_leader_not)
                return i;
    }
    for (int i = 0; i < ncands; i++)
        if (cands[i].alive && cands[i].leader && i != until_leader_not)
            return i;
    return -1;
}

static void holder(char *buf, size_t cap)
{
    it_kubectl(buf, cap, "-n meshscaler-system get lease %s -o jsonpath='{.spec.holderIdentity}'",
               lease);
}

/* The restricted identity's ClusterRole has no Lease rights: the chart's Role
 * (manifests/20-rbac.yaml) lets it create leases in meshscaler-system and read
 * and renew only the Lease "meshscaler". Grant the same for this test's own
 * Lease name, so the test proves that shape is enough, and revoke it at exit. */
static void revoke_lease_role(void)
{
    it_kubectl(NULL, 0,
               "-n meshscaler-system delete role,rolebinding %s --ignore-not-found >/dev/null",
               lease);
}

static bool grant_lease_role(void)
{
    if (it_kubectl(NULL, 0,
                   "-n meshscaler-system create role %s --verb=get,update,patch "
                   "--resource=leases.coordination.k8s.io --resource-name=%s >/dev/null",
                   lease, lease) != 0)
        return false;
    atexit(revoke_lease_role);
    return it_kubectl(NULL, 0,
                      "-n meshscaler-system create rolebinding %s --role=%s "
                      "--serviceaccount=meshscaler-system:meshscaler >/dev/null",
                      lease, lease) == 0;
}

int main(void)
{
    int first, second, third;
    double t, took;
    char h[128];

    it_init("kube_it_lease");
    if (it.bindir == NULL) {
        fprintf(stderr, "MS_IT_BINDIR not set; skipped\n");
        return 77;
    }
    snprintf(lease, sizeof lease, "it-lease-%ld", (long)getpid());
    if (!it_check(grant_lease_role(), "a Role for the test's Lease, like the chart's", NULL))
        return it_done();
    spawn("cand-a");
    spawn("cand-b");
    t = it_now();
    first = pump(20, -1);
    it_check(first >= 0, "one of two candidates becomes leader", NULL);
    if (first < 0)
        return it_done();
    it_note("first leader %s after %.1f s", cands[first].id, it_now() - t);
    pump(6, first); /* six more seconds: the other must stay a follower */
    it_check(leaders() == 1 && overlaps == 0, "exactly one leader while both run", "%d leaders",
             leaders());
    holder(h, sizeof h);
    it_check(strcmp(h, cands[first].id) == 0, "the Lease names the leader", "holderIdentity=%s", h);

    /* Kill the leader without a chance to release. */
    t = it_now();
    kill(cands[first].pid, SIGKILL);
    waitpid(cands[first].pid, NULL, 0);
    cands[first].alive = cands[first].leader = false;
    {
        char renew[64];
        double last_renew = 0, since_renew;
        it_kubectl(renew, sizeof renew,
                   "-n meshscaler-system get lease %s -o jsonpath='{.spec.renewTime}'", lease);
        ms_time_parse_rfc3339(renew, &last_renew);
        second = pump(30, first);
        took = it_now() - t;
        since_renew = ms_clock_wall() - last_renew;
        it_check(second >= 0, "after SIGKILL the other candidate takes over", NULL);
        it_note("takeover %.1f s after SIGKILL, %.1f s after the dead leader's last renewal (lease "
                "15 s, renew deadline 10 s)",
                took, since_renew);
        it_check(second >= 0 && took <= 15, "takeover within the lease duration of the kill",
                 "%.1f s", took);
        it_check(since_renew > 10,
                 "not before the old leader's renew deadline had passed (it had stopped acting)",
                 "%.1f s after its last renewal", since_renew);
    }
    if (second < 0)
        return it_done();

    /* A third candidate joins; the leader shuts down gracefully. */
    spawn("cand-c");
    pump(3, -1);
    t = it_now();
    kill(cands[second].pid, SIGTERM);
    third = pump(10, second);
    took = it_now() - t;
    it_check(third >= 0 && strcmp(cands[third].id, "cand-c") == 0,
             "after SIGTERM the leader released and cand-c took over", NULL);
    it_note("takeover %.1f s after SIGTERM (released lease)", took);
    it_check(took < 4, "a released lease is taken within a retry period", "%.1f s", took);
    waitpid(cands[second].pid, NULL, 0);
    it_check(overlaps == 0, "never two leaders at once", "%d overlaps", overlaps);
    holder(h, sizeof h);
    it_check(strcmp(h, "cand-c") == 0, "the Lease names the new leader", "holderIdentity=%s", h);
    for (int i = 0; i < ncands; i++)
        if (cands[i].alive) {
            kill(cands[i].pid, SIGTERM);
            waitpid(cands[i].pid, NULL, 0);
        }
    it_kubectl(NULL, 0, "-n meshscaler-system delete lease %s >/dev/null", lease);
    return it_done();
}
