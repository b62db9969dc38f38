/* pause — the sandbox process of every pod on the local node (e2e/local).
 *
 * A pod's containers join the namespaces this process holds open. It sleeps
 * until a signal, reaps the zombies of processes that share its PID namespace,
 * and exits 0 on SIGTERM or SIGINT. Built with `gcc -static`, so its image is
 * this one file: no registry is reachable to pull the upstream pause image. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* SIGCHLD must not be ignored (then the kernel would reap children for us
 * only where it chooses to); an empty handler just ends the wait. */
static void on_child(int sig)
{
    (void)sig;
}

int main(void)
{
    struct sigaction sa = {0};
    sigset_t handled, during_wait;

    /* The handled signals stay blocked except inside sigsuspend(), so one that
     * arrives between the check of stop_requested and the wait is not lost. */
    sigemptyset(&handled);
    sigaddset(&handled, SIGTERM);
    sigaddset(&handled, SIGINT);
    sigaddset(&handled, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &handled, &during_wait) != 0)
        return 1;

    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop;
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        return 1;
    sa.sa_handler = on_child;
    sa.sa_flags = SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, NULL) != 0)
        return 1;

    while (!stop_requested) {
        sigsuspend(&during_wait);
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
    }
    return 0;
}
