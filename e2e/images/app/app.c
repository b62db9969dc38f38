/* app — the application container of the local cluster's test workload and of the
 * incident lab (e2e/lab).
 *
 * A small HTTP/1.1 server whose capacity per replica is fixed: WORKERS threads each
 * serve one connection at a time. Every request to /work burns CPU on the thread
 * (CPU_US microseconds, or CPU_MS milliseconds) and then waits HOLD_MS milliseconds
 * without CPU, holding its worker, as a real service waits on a database or another
 * service. So its CPU use tracks its load (what a CPU-based HPA sees) while a sidecar
 * in front of it limits how many requests reach it, and with HOLD_MS the sidecar's
 * limit can bind while the application reads a third of its CPU (on a 2-core machine a
 * request that is all CPU is a busy core).
 *
 * With POOL_ADDR it also keeps POOL_CONNS connections open to a downstream through a
 * load balancer, as a service keeps a pool to its database or its authentication path:
 * every replica it adds takes that many more entries of the balancer's flow table (the
 * lab's edge-flows scenario). Each pooled connection asks GET /pool every 2 s; one that
 * cannot connect or gets no answer within 3 s is closed and opened again after 1 s. With
 * POOL_REQUIRED=1 the app needs its downstream: /work answers 503 while none of its
 * pooled connections is open (a replica the balancer had no room for serves nothing).
 *
 *   GET /healthz   200 while the process runs (liveness)
 *   GET /readyz    200 once STARTUP_DELAY_SECONDS have passed, 503 before (readiness)
 *   GET /work      burns the CPU, holds HOLD_MS, then 200 with "done HOSTNAME" (tests
 *                  count the pods a Service reached); ?ms=N (CPU ms, at most 1000),
 *                  ?us=N (CPU us, at most 1000000) and ?hold=M (at most 60000 ms) override
 *   GET /sleep?ms=N  holds the request N ms (at most 60000) without CPU: in-flight
 *                  requests without load, for tests of concurrency
 *   GET /metrics   app_requests_total, app_in_flight, app_workers, app_pool_connections,
 *                  app_pool_connections_wanted (Prometheus text)
 *
 * Environment: PORT (8080), WORKERS (16), CPU_MS (5) or CPU_US (wins when set),
 * HOLD_MS (0), STARTUP_DELAY_SECONDS (0), POOL_ADDR (IPv4:PORT, off), POOL_CONNS (0),
 * POOL_REQUIRED (0).
 * It exits 0 on SIGTERM. */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
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

static long cpu_us = 5000;
static long hold_ms;
static long pool_conns;
static long pool_required;
static struct sockaddr_in pool_addr;
static atomic_long pool_up;
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
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
                     status,
                     status == 200   ? "OK"
                     : status == 404 ? "Not Found"
                                     : "Service Unavailable",
                     strlen(body), keep_alive ? "" : "Connection: close\r\n");
    if (write_all(fd, head, (size_t)n) != 0)
        return -1;
    return write_all(fd, body, strlen(body));
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* query_long reads NAME=N from a request target; def when absent or outside [0, max]. */
static long query_long(const char *target, const char *name, long def, long max)
{
    const char *q = strchr(target, '?');
    size_t n = strlen(name);

    while (q != NULL) {
        q++;
        if (strncmp(q, name, n) == 0 && q[n] == '=') {
            long v = strtol(q + n + 1, NULL, 10);
            return v >= 0 && v <= max ? v : def;
        }
        q = strchr(q, '&');
    }
    return def;
}

/* handle answers one request line; returns the status it sent, or -1. */
static int handle(int fd, const char *target, int keep_alive)
{
    char body[512];

    if (strcmp(target, "/healthz") == 0)
        return respond(fd, 200, "ok\n", keep_alive) == 0 ? 200 : -1;
    if (strcmp(target, "/readyz") == 0) {
        int ready = now_mono() >= ready_at;
        return respond(fd, ready ? 200 : 503, ready ? "ready\n" : "starting\n", keep_alive) == 0
                   ? 200
                   : -1;
    }
    if (strcmp(target, "/metrics") == 0) {
        snprintf(body, sizeof body,
                 "# TYPE app_requests_total counter\napp_requests_total %lu\n"
                 "# TYPE app_in_flight gauge\napp_in_flight %ld\n"
                 "# TYPE app_workers gauge\napp_workers %ld\n"
                 "# TYPE app_pool_connections gauge\napp_pool_connections %ld\n"
                 "# TYPE app_pool_connections_wanted gauge\napp_pool_connections_wanted %ld\n",
                 atomic_load(&requests_total), atomic_load(&in_flight), workers,
                 atomic_load(&pool_up), pool_conns);
        return respond(fd, 200, body, keep_alive) == 0 ? 200 : -1;
    }
    if (strncmp(target, "/sleep", 6) == 0) {
        atomic_fetch_add(&in_flight, 1);
        sleep_ms(query_long(target, "ms", 0, 60000));
        atomic_fetch_sub(&in_flight, 1);
        atomic_fetch_add(&requests_total, 1);
        snprintf(body, sizeof body, "slept %s\n", hostname);
        return respond(fd, 200, body, keep_alive) == 0 ? 200 : -1;
    }
    if (strcmp(target, "/") == 0 || strncmp(target, "/work", 5) == 0) {
        if (pool_required && atomic_load(&pool_up) == 0)
            return respond(fd, 503, "no connection to the downstream\n", keep_alive) == 0 ? 503
                                                                                          : -1;
        long us = query_long(target, "ms", -1, 1000);
        us = us >= 0 ? us * 1000 : query_long(target, "us", cpu_us, 1000000);
        atomic_fetch_add(&in_flight, 1);
        burn_cpu_us(us);
        sleep_ms(query_long(target, "hold", hold_ms, 60000));
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
        if (sscanf(buf, "%15s %1023s %15s", method, target, version) != 3 ||
            strcmp(method, "GET") != 0 || strcasestr(buf, "\r\ncontent-length:") != NULL ||
            strcasestr(buf, "\r\ntransfer-encoding:") != NULL) {
            respond(fd, 404, "only GET without a body\n", 0);
            return;
        }
        int keep_alive =
            strcmp(version, "HTTP/1.1") == 0 && strcasestr(buf, "\r\nconnection: close") == NULL;
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

/* pool_ping asks GET /pool on an open pooled connection; 0 when a 200 came back. */
static int pool_ping(int fd)
{
    static const char ping[] = "GET /pool HTTP/1.1\r\nHost: pool\r\n\r\n";
    char buf[1024];
    size_t len = 0;
    char *end;

    if (write_all(fd, ping, sizeof ping - 1) != 0)
        return -1;
    while ((end = memmem(buf, len, "\r\n\r\n", 4)) == NULL) {
        ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (r <= 0 || (len += (size_t)r) == sizeof buf - 1)
            return -1;
    }
    buf[len] = '\0';
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
        return -1;
    /* Read the body too, so the next answer starts at its own head. */
    const char *cl = strcasestr(buf, "\r\ncontent-length:");
    size_t body = cl != NULL && cl < end ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
    size_t have = len - (size_t)(end + 4 - buf);
    while (have < body) {
        ssize_t r = recv(fd, buf, body - have < sizeof buf ? body - have : sizeof buf, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
    }
    return have == body ? 0 : -1;
}

/* pool_connection keeps one pooled connection open for the life of the process. */
static void *pool_connection(void *arg)
{
    struct timeval wait = {.tv_sec = 3};
    (void)arg;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
        }
        if (fd >= 0 && connect(fd, (struct sockaddr *)&pool_addr, sizeof pool_addr) == 0 &&
            pool_ping(fd) == 0) {
            atomic_fetch_add(&pool_up, 1);
            do
                sleep_ms(2000);
            while (pool_ping(fd) == 0);
            atomic_fetch_sub(&pool_up, 1);
        }
        if (fd >= 0)
            close(fd);
        sleep_ms(1000);
    }
    return NULL;
}

/* start_pool parses POOL_ADDR and starts POOL_CONNS pooled connections; 0 on success. */
static int start_pool(void)
{
    const char *spec = getenv("POOL_ADDR");
    char host[64];
    long port;
    pthread_attr_t attr;
    int rc = 0;

    pool_conns = env_long("POOL_CONNS", 0, 0, 1000);
    pool_required = env_long("POOL_REQUIRED", 0, 0, 1);
    if (spec == NULL || *spec == '\0' || pool_conns == 0)
        return 0;
    if (sscanf(spec, "%63[0-9.]:%ld", host, &port) != 2 || port < 1 || port > 65535 ||
        inet_pton(AF_INET, host, &pool_addr.sin_addr) != 1) {
        fprintf(stderr, "app: POOL_ADDR=%s is not IPv4:PORT\n", spec);
        return -1;
    }
    pool_addr.sin_family = AF_INET;
    pool_addr.sin_port = htons((uint16_t)port);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (long i = 0; i < pool_conns && rc == 0; i++) {
        pthread_t t;
        rc = pthread_create(&t, &attr, pool_connection, NULL);
    }
    pthread_attr_destroy(&attr);
    if (rc != 0)
        fprintf(stderr, "app: pthread_create: %s\n", strerror(rc));
    return rc == 0 ? 0 : -1;
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
    cpu_us = env_long("CPU_MS", 5, 0, 1000) * 1000;
    cpu_us = env_long("CPU_US", cpu_us, 0, 1000000);
    hold_ms = env_long("HOLD_MS", 0, 0, 60000);
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
    if (start_pool() != 0)
        return 2;
    fprintf(stderr,
            "app: listening on :%ld, %ld workers, %ld us CPU and %ld ms wait per request, pool of "
            "%ld\n",
            port, workers, cpu_us, hold_ms, pool_conns);

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
