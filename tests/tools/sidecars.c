/*
 * sidecars.c - see sidecars.h.
 */
#define _GNU_SOURCE /* accept4, pipe2 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sidecars.h"

static void die(const char *what)
{
    perror(what);
    abort();
}

static int listen_on(const char *ip, unsigned port, int backlog)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        die("socket");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    inet_pton(AF_INET, ip, &sa.sin_addr);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        die("bind");
    if (backlog > 0 && listen(fd, backlog) != 0)
        die("listen");
    return fd;
}

static unsigned port_of(int fd)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        die("getsockname");
    return ntohs(sa.sin_port);
}

unsigned sc_free_port(void)
{
    int fd = listen_on("127.0.0.1", 0, 0);
    unsigned port = port_of(fd);

    close(fd);
    return port;
}

/* Bound but never listening: the kernel refuses connections (RST), and
 * holding the port keeps anyone else from taking it during the test. */
unsigned sc_refused_port(void)
{
    return port_of(listen_on("127.0.0.1", 0, 0));
}

static bool connects(const char *ip, unsigned port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok;

    inet_pton(AF_INET, ip, &sa.sin_addr);
    ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

static void write_cfg(const sc_haproxy_t *h, const char *name, const char *const *addrs,
                      size_t naddrs, unsigned backend_port, unsigned smax)
{
    FILE *f = fopen(h->cfg, "w");

    if (f == NULL)
        die(h->cfg);
    fprintf(f, "global\n  maxconn 2000\ndefaults\n  mode http\n  timeout connect 5s\n"
               "  timeout client 60s\n  timeout server 60s\n  timeout queue 60s\n"
               "frontend exporter\n");
    for (size_t i = 0; i < (naddrs ? naddrs : 1); i++)
        fprintf(f, "  bind %s:%u\n", naddrs ? addrs[i] : "127.0.0.1", h->exporter_port);
    fprintf(f,
            "  http-request use-service prometheus-exporter if { path /metrics }\n"
            "frontend %s\n  bind 127.0.0.1:%u\n  maxconn 500\n  default_backend app\n"
            "backend app\n  server app1 127.0.0.1:%u maxconn %u\n",
            name, h->frontend_port, backend_port, smax);
    fclose(f);
}

static pid_t spawn_haproxy(const char *cfg, const char *log)
{
    pid_t pid = fork();

    if (pid < 0)
        die("fork");
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("haproxy", "haproxy", "-db", "-f", cfg, (char *)NULL);
        _exit(127);
    }
    return pid;
}

bool sc_haproxy_start(sc_haproxy_t *h, const char *dir, const char *name, const char *const *addrs,
                      size_t naddrs, unsigned backend_port, unsigned smax)
{
    char log[300];
    struct timespec nap = {0, 20 * 1000 * 1000};

    memset(h, 0, sizeof *h);
    h->exporter_port = sc_free_port();
    h->frontend_port = sc_free_port();
    snprintf(h->cfg, sizeof h->cfg, "%s/%s.cfg", dir, name);
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    write_cfg(h, name, addrs, naddrs, backend_port, smax);
    h->pid = spawn_haproxy(h->cfg, log);
    for (int i = 0; i < 250; i++) {
        bool all = true;
        for (size_t a = 0; a < (naddrs ? naddrs : 1) && all; a++)
            all = connects(naddrs ? addrs[a] : "127.0.0.1", h->exporter_port);
        if (all && connects("127.0.0.1", h->frontend_port))
            return true;
        if (waitpid(h->pid, NULL, WNOHANG) == h->pid) {
            h->pid = 0; /* exited: see the log */
            return false;
        }
        nanosleep(&nap, NULL);
    }
    sc_haproxy_stop(h);
    return false;
}

void sc_haproxy_stop(sc_haproxy_t *h)
{
    if (h->pid <= 0)
        return;
    kill(h->pid, SIGTERM);
    waitpid(h->pid, NULL, 0);
    h->pid = 0;
}

#define MAX_HELD 64

struct sc_hostile {
    sc_mode_t mode;
    int lfd;
    int stop_pipe[2];
    unsigned port;
    atomic_size_t accepted;
    int held[MAX_HELD]; /* SC_SILENT's connections, closed at stop */
    size_t nheld;
    pthread_t thread;
};

/* Read the request head (up to a blank line, or 2 s), so the answer does
 * not race the request. */
static void read_request(int fd)
{
    char buf[2048];
    size_t n = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};

    while (n < sizeof buf - 1 && poll(&p, 1, 2000) > 0) {
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            return;
        n += (size_t)r;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\n") != NULL)
            return;
    }
}

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Valid lines, 64 KiB at a time, until the reader goes away. */
static void endless(int fd)
{
    static const char head[] =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
    static char chunk[65536];
    const char *line = "haproxy_server_current_sessions{proxy=\"app\",server=\"s\"} 1\n";
    size_t ll = strlen(line), n = 0;

    while (n + ll <= sizeof chunk) {
        memcpy(chunk + n, line, ll);
        n += ll;
    }
    send_all(fd, head, sizeof head - 1);
    for (;;)
        if (send(fd, chunk, n, MSG_NOSIGNAL) <= 0)
            return;
}

static void serve(sc_hostile_t *h, int fd)
{
    static const char garbage[] =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 36\r\n\r\n"
        "<html><body>not metrics</body></html";
    /* A line the parser would refuse: only the status may decide. */
    static const char e500[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
                               "Content-Length: 20\r\n\r\nno healthy upstream\n";

    if (h->mode == SC_SILENT) {
        if (h->nheld < MAX_HELD) {
            h->held[h->nheld++] = fd; /* never answered, closed at stop */
            return;
        }
    } else {
        read_request(fd);
        if (h->mode == SC_ENDLESS)
            endless(fd);
        else if (h->mode == SC_GARBAGE)
            send_all(fd, garbage, sizeof garbage - 1);
        else
            send_all(fd, e500, sizeof e500 - 1);
        shutdown(fd, SHUT_WR);
        read_request(fd); /* let the client close first: no RST before it read */
    }
    close(fd);
}

static void *hostile_main(void *arg)
{
    sc_hostile_t *h = arg;

    for (;;) {
        struct pollfd p[2] = {{.fd = h->lfd, .events = POLLIN},
                              {.fd = h->stop_pipe[0], .events = POLLIN}};
        int fd;

        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents != 0)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        atomic_fetch_add(&h->accepted, 1);
        serve(h, fd);
    }
    return NULL;
}

sc_hostile_t *sc_hostile_start(sc_mode_t mode)
{
    sc_hostile_t *h = calloc(1, sizeof *h);

    if (h == NULL)
        die("calloc");
    h->mode = mode;
    h->lfd = listen_on("127.0.0.1", 0, 64);
    h->port = port_of(h->lfd);
    if (pipe2(h->stop_pipe, O_CLOEXEC) != 0)
        die("pipe");
    if (pthread_create(&h->thread, NULL, hostile_main, h) != 0)
        die("pthread_create");
    return h;
}

unsigned sc_hostile_port(const sc_hostile_t *h)
{
    return h->port;
}
size_t sc_hostile_accepted(const sc_hostile_t *h)
{
    return atomic_load(&h->accepted);
}

void sc_hostile_stop(sc_hostile_t *h)
{
    if (h == NULL)
        return;
    if (write(h->stop_pipe[1], "x", 1) != 1)
        die("write");
    pthread_join(h->thread, NULL);
    for (size_t i = 0; i < h->nheld; i++)
        close(h->held[i]);
    close(h->lfd);
    close(h->stop_pipe[0]);
    close(h->stop_pipe[1]);
    free(h);
}

void sc_hold_requests(unsigned port, int *fds, size_t n)
{
    static const char req[] = "GET /hold HTTP/1.1\r\nHost: pod\r\n\r\n";
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    for (size_t i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&sa, sizeof sa) != 0)
            die("connect");
        send_all(fds[i], req, sizeof req - 1);
    }
}

void sc_close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}
