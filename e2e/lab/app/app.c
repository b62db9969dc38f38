/* lab-app — the incident lab's application container: e2e/images/app/app.c with
 * two changes: a per-request wait that is not CPU, and CPU in microseconds.
 *
 * e2e/images/app's /work burns CPU for the whole of a request, so a request in
 * flight is a busy core: on a 2-core machine a sidecar's concurrency limit could
 * never bind while the application reads 36% of its CPU. A real service spends most
 * of a request waiting (a database, another service) and a little on CPU; this one
 * does the same. Each /work request burns CPU_US microseconds of CPU, then waits
 * HOLD_MS milliseconds without CPU, holding its worker. WORKERS threads each serve
 * one connection at a time, so the application's own capacity is
 * WORKERS / (HOLD_MS + CPU) requests per second, and its CPU use tracks its load
 * (what a CPU-based HPA sees) while the sidecar in front limits what reaches it.
 *
 *   GET /healthz   200 while the process runs (liveness)
 *   GET /readyz    200 once STARTUP_DELAY_SECONDS have passed, 503 before (readiness)
 *   GET /work      burns CPU_US us of CPU, holds HOLD_MS ms (or ?us=N&hold=M, at most
 *                  1000000 us and 60000 ms), then 200 with "done HOSTNAME"
 *   GET /sleep?ms=N  holds the request N ms (at most 60000) without CPU
 *   GET /metrics   app_requests_total, app_in_flight, app_workers (Prometheus text)
 *
 * Environment: PORT (8080), WORKERS (16), CPU_US (500), HOLD_MS (200),
 * STARTUP_DELAY_SECONDS (0). It exits 0 on SIGTERM. Built static by
 * e2e/lab/blind-vs-aware.sh into a one-layer image, without Docker. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_SIZE 1024
#define REQUEST_MAX 8192

static struct {
    pthread_mutex_t lock;
    pthread_cond_t nonempty;
    int fds[QUEUE_SIZE];
    size_t head, len;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};

static long cpu_us = 500;
static long hold_ms = 200;
static long workers = 16;
static double ready_at;
static char hostname[128] = "unknown";
static atomic_ulong requests_total;
static atomic_long in_flight;

static long env_long(const char *name, long def, long min, long max)
{
    const char *s = getenv(name);
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return def;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "app: %s=%s is not a number in [%ld, %ld]\n", name, s, min, max);
        exit(2);
    }
    return v;
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Burns us microseconds of this thread's CPU time (not wall time: a busy node
 * makes requests slower, as it would a real service). */
static void burn_cpu_us(long us)
{
    struct timespec ts;
    double start, t;
    volatile unsigned long sink = 0;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    do {
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long)i * 2654435761u;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    } while ((t - start) * 1e6 < (double)us);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int respond(int fd, int status, const char *body, int keep_alive)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n", status,
                     status == 200 ? "OK" : status == 404 ? "Not Found" : "Service Unavailable", strlen(body),
                     keep_alive ? "" : "Connection: close\r\n");
    if (write_all(fd, head, (size_t)n) != 0)
        return -1;
    return write_all(fd, body, strlen(body));
}

/* handle answers one request line; returns the status it sent, or -1. */
static int handle(int fd, const char *target, int keep_alive)
{
    char body[512];

    if (strcmp(target, "/healthz") == 0)
        return respond(fd, 200, "ok\n", keep_alive) == 0 ? 200 : -1;
    if (strcmp(target, "/readyz") == 0) {
        int ready = now_mono() >= ready_at;
        return respond(fd, ready ? 200 : 503, ready ? "ready\n" : "starting\n", keep_alive) == 0 ? 200 : -1;
    }
    if (strcmp(target, "/metrics") == 0) {
        snprintf(body, sizeof body,
                 "# TYPE app_requests_total counter\napp_requests_total %lu\n"
                 "# TYPE app_in_flight gauge\napp_in_flight %ld\n"
                 "# TYPE app_workers gauge\napp_workers %ld\n",
                 atomic_load(&requests_total), atomic_load(&in_flight), workers);
        return respond(fd, 200, body, keep_alive) == 0 ? 200 : -1;
    }
    if (strncmp(target, "/sleep", 6) == 0) {
        const char *q = strstr(target, "ms=");
        long ms = q != NULL ? strtol(q + 3, NULL, 10) : 0;
        struct timespec ts;
        if (ms < 0 || ms > 60000)
            ms = 0;
        ts.tv_sec = ms / 1000;
        ts.tv_nsec = (ms % 1000) * 1000000L;
        atomic_fetch_add(&in_flight, 1);
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        atomic_fetch_sub(&in_flight, 1);
        atomic_fetch_add(&requests_total, 1);
        snprintf(body, sizeof body, "slept %s\n", hostname);
        return respond(fd, 200, body, keep_alive) == 0 ? 200 : -1;
    }
    if (strcmp(target, "/") == 0 || strncmp(target, "/work", 5) == 0) {
        long us = cpu_us, hold = hold_ms;
        const char *q = strstr(target, "us=");
        if (q != NULL) {
            us = strtol(q + 3, NULL, 10);
            if (us < 0 || us > 1000000)
                us = cpu_us;
        }
        q = strstr(target, "hold=");
        if (q != NULL) {
            hold = strtol(q + 5, NULL, 10);
            if (hold < 0 || hold > 60000)
                hold = hold_ms;
        }
        atomic_fetch_add(&in_flight, 1);
        burn_cpu_us(us);
        struct timespec ts = {.tv_sec = hold / 1000, .tv_nsec = (hold % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        atomic_fetch_sub(&in_flight, 1);
        atomic_fetch_add(&requests_total, 1);
        snprintf(body, sizeof body, "done %s\n", hostname);
        return respond(fd, 200, body, keep_alive) == 0 ? 200 : -1;
    }
    return respond(fd, 404, "not found\n", keep_alive) == 0 ? 404 : -1;
}

/* serve reads requests on one connection until the peer closes it, asks to close,
 * or sends something this server does not take (a body, an oversized head). */
static void serve(int fd)
{
    char buf[REQUEST_MAX + 1];
    size_t len = 0;

    for (;;) {
        char *end = NULL;
        while ((end = memmem(buf, len, "\r\n\r\n", 4)) == NULL) {
            if (len == REQUEST_MAX)
                return;
            ssize_t r = recv(fd, buf + len, REQUEST_MAX - len, 0);
            if (r <= 0)
                return;
            len += (size_t)r;
        }
        *end = '\0';
        char method[16], target[1024], version[16];
        if (sscanf(buf, "%15s %1023s %15s", method, target, version) != 3 || strcmp(method, "GET") != 0 ||
            strcasestr(buf, "\r\ncontent-length:") != NULL || strcasestr(buf, "\r\ntransfer-encoding:") != NULL) {
            respond(fd, 404, "only GET without a body\n", 0);
            return;
        }
        int keep_alive = strcmp(version, "HTTP/1.1") == 0 && strcasestr(buf, "\r\nconnection: close") == NULL;
        if (handle(fd, target, keep_alive) < 0 || !keep_alive)
            return;
        size_t used = (size_t)(end + 4 - buf);
        memmove(buf, buf + used, len - used);
        len -= used;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&queue.lock);
        while (queue.len == 0)
            pthread_cond_wait(&queue.nonempty, &queue.lock);
        int fd = queue.fds[queue.head];
        queue.head = (queue.head + 1) % QUEUE_SIZE;
        queue.len--;
        pthread_mutex_unlock(&queue.lock);
        serve(fd);
        close(fd);
    }
    return NULL;
}

static void on_term(int sig)
{
    (void)sig;
    _exit(0);
}

int main(void)
{
    long port = env_long("PORT", 8080, 1, 65535);
    workers = env_long("WORKERS", 16, 1, 4096);
    cpu_us = env_long("CPU_US", 500, 0, 1000000);
    hold_ms = env_long("HOLD_MS", 200, 0, 60000);
    ready_at = now_mono() + (double)env_long("STARTUP_DELAY_SECONDS", 0, 0, 3600);

    gethostname(hostname, sizeof hostname - 1);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);

    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(ls, 1024) != 0) {
        perror("app: listen");
        return 1;
    }
    for (long i = 0; i < workers; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) {
            perror("app: pthread_create");
            return 1;
        }
        pthread_detach(t);
    }
    fprintf(stderr, "lab-app: listening on :%ld, %ld workers, %ld us CPU and %ld ms wait per request\n", port,
            workers, cpu_us, hold_ms);

    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            perror("app: accept");
            return 1;
        }
        /* An idle keep-alive connection must not hold a worker for ever. */
        struct timeval idle = {.tv_sec = 30};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_mutex_lock(&queue.lock);
        if (queue.len == QUEUE_SIZE) {
            pthread_mutex_unlock(&queue.lock);
            close(fd); /* over capacity: refuse rather than queue without bound */
            continue;
        }
        queue.fds[(queue.head + queue.len) % QUEUE_SIZE] = fd;
        queue.len++;
        pthread_cond_signal(&queue.nonempty);
        pthread_mutex_unlock(&queue.lock);
    }
}
