/*
 * cred.c - bearer tokens that change at run time: a token file re-read
 * periodically (bound ServiceAccount tokens rotate) and exec credential
 * plugins (client.authentication.k8s.io ExecCredential), cached until their
 * expirationTimestamp and re-run after a 401.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kube_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/kubeconfig.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

extern char **environ;

#define MAX_TOKEN 16384
#define EXEC_TIMEOUT_SECONDS 60.0
#define EXEC_MAX_OUTPUT (1u << 20)

struct ms_kube_cred {
    pthread_mutex_t lock;
    char *static_token;
    char *token_file;
    double reload;
    ms_kube_exec_config_t exec; /* command NULL when no plugin */
    char *server;               /* for the plugin's cluster info */
    char *token;                /* current token from file or plugin; NULL: must fetch */
    double read_at;             /* monotonic time the file was read */
    double expires;             /* wall time the plugin's token expires; 0: never */
    atomic_uint exec_runs;
};

static char **dup_list(char *const *v, size_t n)
{
    char **d = ms_xcalloc(n + 1, sizeof *d);

    for (size_t i = 0; i < n; i++)
        d[i] = ms_xstrdup_opt(v[i]);
    return d;
}

ms_kube_cred_t *ms_kube_cred_new(const ms_kube_config_t *cfg, double token_reload_seconds)
{
    ms_kube_cred_t *c = calloc(1, sizeof *c);

    if (c == NULL)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    c->static_token = ms_xstrdup_opt(cfg->token);
    c->token_file = ms_xstrdup_opt(cfg->token_file);
    c->reload = token_reload_seconds > 0 ? token_reload_seconds : 60;
    c->server = ms_xstrdup_opt(cfg->server);
    if (cfg->exec != NULL) {
        c->exec.command = ms_xstrdup_opt(cfg->exec->command);
        c->exec.api_version = ms_xstrdup_opt(cfg->exec->api_version);
        c->exec.args = dup_list(cfg->exec->args, cfg->exec->nargs);
        c->exec.nargs = cfg->exec->nargs;
        c->exec.env = dup_list(cfg->exec->env, cfg->exec->nenv);
        c->exec.nenv = cfg->exec->nenv;
    }
    return c;
}

void ms_kube_cred_free(ms_kube_cred_t *c)
{
    if (c == NULL)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c->static_token);
    free(c->token_file);
    free(c->server);
    free(c->exec.command);
    free(c->exec.api_version);
    for (size_t i = 0; i < c->exec.nargs; i++)
        free(c->exec.args[i]);
    for (size_t i = 0; i < c->exec.nenv; i++)
        free(c->exec.env[i]);
    free(c->exec.args);
    free(c->exec.env);
    if (c->token != NULL)
        explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    free(c);
}

bool ms_kube_cred_has_token(const ms_kube_cred_t *c)
{
    return c->static_token != NULL || c->token_file != NULL || c->exec.command != NULL;
}

bool ms_kube_cred_refreshable(const ms_kube_cred_t *c)
{
    return c->token_file != NULL || c->exec.command != NULL;
}

unsigned ms_kube_cred_exec_runs(const ms_kube_cred_t *c)
{
    return atomic_load(&c->exec_runs);
}

void ms_kube_cred_invalidate(ms_kube_cred_t *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->token != NULL)
        explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    c->token = NULL;
    pthread_mutex_unlock(&c->lock);
}

static void set_token(ms_kube_cred_t *c, const char *t, size_t len)
{
    if (c->token != NULL)
        explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    c->token = ms_xmalloc(len + 1);
    memcpy(c->token, t, len);
    c->token[len] = '\0';
}

static ms_err_t read_token_file(ms_kube_cred_t *c, double now, char *errbuf, size_t errlen)
{
    char why[MS_ERRBUF_SIZE];
    ms_buf_t b;
    size_t start = 0, len;
    ms_err_t err = ms__kube_read_file(c->token_file, &b, why, sizeof why);

    if (err != MS_OK)
        return ms_errf(errbuf, errlen, err, "token file: %s", why);
    len = b.len;
    while (start < len && (b.data[start] == ' ' || b.data[start] == '\n' || b.data[start] == '\r'))
        start++;
    while (len > start &&
           (b.data[len - 1] == ' ' || b.data[len - 1] == '\n' || b.data[len - 1] == '\r'))
        len--;
    if (len == start || len - start > MAX_TOKEN ||
        memchr(b.data + start, '\n', len - start) != NULL) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "token file \"%s\": %s", c->token_file,
                      len == start ? "empty" : "not one token");
    } else {
        set_token(c, b.data + start, len - start);
        c->read_at = now;
    }
    explicit_bzero(b.data, b.len);
    ms_buf_cleanup(&b);
    return err;
}

/* ---- exec plugins ---- */

/* argv and envp for the plugin: the kubeconfig's command and args; the
 * inherited environment, in which the kubeconfig's env entries override
 * those of their name, and KUBERNETES_EXEC_INFO (written into info). The
 * caller frees the two arrays; their strings are borrowed from c, environ
 * and info. */
static void plugin_argv_envp(const ms_kube_cred_t *c, char ***argv_out, char ***envp_out,
                             char *info, size_t infolen)
{
    char **argv, **envp;
    size_t nenv = 0, i;

    for (char **e = environ; e && *e; e++)
        nenv++;
    argv = ms_xcalloc(c->exec.nargs + 2, sizeof *argv);
    envp = ms_xcalloc(nenv + c->exec.nenv + 2, sizeof *envp);
    argv[0] = c->exec.command;
    for (i = 0; i < c->exec.nargs; i++)
        argv[i + 1] = c->exec.args[i];
    /* The kubeconfig's env entries override the inherited ones of that name. */
    nenv = 0;
    for (char **e = environ; e && *e; e++) {
        bool overridden = strncmp(*e, "KUBERNETES_EXEC_INFO=", 21) == 0;
        for (i = 0; i < c->exec.nenv && !overridden; i++) {
            size_t klen = (size_t)(strchr(c->exec.env[i], '=') - c->exec.env[i]);
            overridden = strncmp(*e, c->exec.env[i], klen + 1) == 0;
        }
        if (!overridden)
            envp[nenv++] = *e;
    }
    for (i = 0; i < c->exec.nenv; i++)
        envp[nenv++] = c->exec.env[i];
    snprintf(info, infolen,
             "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
             "\"spec\":{\"interactive\":false}}",
             c->exec.api_version);
    envp[nenv++] = info;
    *argv_out = argv;
    *envp_out = envp;
}

/* Start the plugin with stdin from /dev/null and stdout into a pipe. On
 * success *pid is the child and *fd the pipe's read end (the caller's to
 * close); on error nothing is left open. */
static ms_err_t spawn_plugin(const ms_kube_cred_t *c, char **argv, char **envp, pid_t *pid, int *fd,
                             char *errbuf, size_t errlen)
{
    posix_spawn_file_actions_t fa;
    int fds[2], rc;
    ms_err_t err = MS_OK;

    *pid = -1;
    *fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return ms_errf(errbuf, errlen, MS_ERR_IO, "exec plugin %s: pipe: %s", c->exec.command,
                       strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    rc = posix_spawnp(pid, c->exec.command, &fa, NULL, argv, envp);
    if (rc != 0) { /* posix_spawnp returns the error; errno is not set */
        err = ms_errf(errbuf, errlen, MS_ERR_IO, "exec plugin %s: cannot run it: %s",
                      c->exec.command, strerror(rc));
        *pid = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err == MS_OK)
        *fd = fds[0];
    else
        close(fds[0]);
    return err;
}

/* Read the plugin's stdout from fd into out until end of file, out's cap or
 * the monotonic deadline. */
static ms_err_t read_plugin_output(const ms_kube_cred_t *c, int fd, double deadline, ms_buf_t *out,
                                   char *errbuf, size_t errlen)
{
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        double left = deadline - ms_clock_monotonic();
        char chunk[4096];
        ssize_t n;

        if (left <= 0)
            return ms_errf(errbuf, errlen, MS_ERR_TIMEOUT, "exec plugin %s: no answer after %.0f s",
                           c->exec.command, EXEC_TIMEOUT_SECONDS);
        if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
            return ms_errf(errbuf, errlen, MS_ERR_IO, "exec plugin %s: poll: %s", c->exec.command,
                           strerror(errno));
        n = read(fd, chunk, sizeof chunk);
        if (n == 0)
            return MS_OK;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return ms_errf(errbuf, errlen, MS_ERR_IO, "exec plugin %s: read: %s", c->exec.command,
                           strerror(errno));
        }
        if (ms_buf_append(out, chunk, (size_t)n) != MS_OK)
            return ms_errf(errbuf, errlen, MS_ERR_TOOLARGE,
                           "exec plugin %s: output larger than %u bytes", c->exec.command,
                           EXEC_MAX_OUTPUT);
    }
}

/* Wait for the plugin, killing it first when err says the run failed; a
 * run that read well but exited badly becomes an error. Returns the
 * run's result. */
static ms_err_t reap_plugin(const ms_kube_cred_t *c, pid_t pid, ms_err_t err, char *errbuf,
                            size_t errlen)
{
    int status = 0;

    if (err != MS_OK)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (err == MS_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        err = ms_errf(errbuf, errlen, MS_ERR_IO, "exec plugin %s: exited with %s %d",
                      c->exec.command, WIFEXITED(status) ? "status" : "signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return err;
}

/* Run the plugin, at most EXEC_TIMEOUT_SECONDS; its stdout (capped) lands
 * in out. */
static ms_err_t run_plugin(ms_kube_cred_t *c, ms_buf_t *out, char *errbuf, size_t errlen)
{
    double deadline = ms_clock_monotonic() + EXEC_TIMEOUT_SECONDS;
    char **argv, **envp, info[512];
    pid_t pid;
    int fd;
    ms_err_t err;

    plugin_argv_envp(c, &argv, &envp, info, sizeof info);
    err = spawn_plugin(c, argv, envp, &pid, &fd, errbuf, errlen);
    if (err == MS_OK) {
        err = read_plugin_output(c, fd, deadline, out, errbuf, errlen);
        close(fd);
        err = reap_plugin(c, pid, err, errbuf, errlen);
    }
    free(argv);
    free(envp);
    return err;
}

static ms_err_t run_exec(ms_kube_cred_t *c, char *errbuf, size_t errlen)
{
    ms_buf_t out;
    cJSON *doc = NULL, *status, *token = NULL, *exp, *av, *kind;
    ms_err_t err;
    const char *cmd = c->exec.command;

    ms_buf_init(&out, EXEC_MAX_OUTPUT);
    atomic_fetch_add(&c->exec_runs, 1);
    if ((err = run_plugin(c, &out, errbuf, errlen)) != MS_OK)
        goto out;
    doc = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
    if (doc == NULL || !cJSON_IsObject(doc)) {
        err = ms_errf(errbuf, errlen, MS_ERR_PARSE, "exec plugin %s: output is not a JSON object",
                      cmd);
        goto out;
    }
    av = cJSON_GetObjectItemCaseSensitive(doc, "apiVersion");
    kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
    if (!cJSON_IsString(av) || strcmp(av->valuestring, c->exec.api_version) != 0 ||
        !cJSON_IsString(kind) || strcmp(kind->valuestring, "ExecCredential") != 0) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID,
                      "exec plugin %s: output is not an ExecCredential of %s", cmd,
                      c->exec.api_version);
        goto out;
    }
    status = cJSON_GetObjectItemCaseSensitive(doc, "status");
    token = cJSON_GetObjectItemCaseSensitive(status, "token");
    exp = cJSON_GetObjectItemCaseSensitive(status, "expirationTimestamp");
    if (cJSON_GetObjectItemCaseSensitive(status, "clientCertificateData") != NULL) {
        err = ms_errf(
            errbuf, errlen, MS_ERR_INVALID,
            "exec plugin %s: status.clientCertificateData is not supported (return a token)", cmd);
        goto out;
    }
    if (!cJSON_IsString(token) || token->valuestring[0] == '\0' ||
        strlen(token->valuestring) > MAX_TOKEN || strpbrk(token->valuestring, "\r\n") != NULL) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID,
                      "exec plugin %s: status.token: missing or not a token", cmd);
        goto out;
    }
    c->expires = 0;
    if (exp != NULL && !cJSON_IsNull(exp)) {
        if (!cJSON_IsString(exp) || !ms_time_parse_rfc3339(exp->valuestring, &c->expires)) {
            err = ms_errf(errbuf, errlen, MS_ERR_INVALID,
                          "exec plugin %s: status.expirationTimestamp: not an RFC 3339 time", cmd);
            goto out;
        }
    }
    set_token(c, token->valuestring, strlen(token->valuestring));
    MS_LOG_DEBUG("exec credential plugin gave a token", MS_S("command", cmd),
                 MS_D("expires_in_s", c->expires > 0 ? c->expires - ms_clock_wall() : -1));
out:
    if (doc != NULL) {
        if (cJSON_IsString(token))
            explicit_bzero(token->valuestring, strlen(token->valuestring));
        cJSON_Delete(doc);
    }
    if (out.data != NULL)
        explicit_bzero(out.data, out.len);
    ms_buf_cleanup(&out);
    return err;
}

ms_err_t ms_kube_cred_header(ms_kube_cred_t *c, double now, char *header, size_t cap, char *errbuf,
                             size_t errlen)
{
    ms_err_t err = MS_OK;
    const char *tok = NULL;

    header[0] = '\0';
    pthread_mutex_lock(&c->lock);
    if (c->token_file != NULL) {
        if (c->token == NULL || now - c->read_at >= c->reload)
            err = read_token_file(c, now, errbuf, errlen);
        /* A failed re-read keeps the last good token, as client-go does. */
        if (err != MS_OK && c->token != NULL) {
            MS_LOG_WARN("cannot re-read the token file; keeping the last token",
                        MS_S("file", c->token_file));
            err = MS_OK;
        }
        tok = c->token;
    } else if (c->exec.command != NULL) {
        /* Renew a little before expiry so a request never carries a dead token. */
        if (c->token == NULL || (c->expires > 0 && ms_clock_wall() >= c->expires - 10))
            err = run_exec(c, errbuf, errlen);
        tok = c->token;
    } else {
        tok = c->static_token;
    }
    if (err == MS_OK && tok != NULL) {
        if ((size_t)snprintf(header, cap, "Authorization: Bearer %s", tok) >= cap) {
            header[0] = '\0';
            err = ms_errf(errbuf, errlen, MS_ERR_TOOLARGE, "bearer token too long");
        }
    }
    pthread_mutex_unlock(&c->lock);
    return err;
}
