/*
 * kubeconfig.h - where the Kubernetes API is and how to authenticate to it:
 * kubeconfig files (merged like kubectl), in-cluster ServiceAccount files, and
 * credentials that change while the program runs (token files, exec plugins).
 *
 * Resolution order (controller-runtime's): an explicit --kubeconfig file;
 * else the files in $KUBECONFIG (":"-separated, merged: for every cluster,
 * user and context name, and for current-context, the first file that sets it
 * wins; missing files are skipped); else in-cluster when
 * KUBERNETES_SERVICE_HOST is set; else ~/.kube/config. Relative paths inside a
 * file are relative to that file's directory.
 *
 * Errors name the file and the field: "/x/config: users[0].user.client-key:
 * cannot read \"/x/k.pem\": No such file or directory". Refused outright
 * (with such a message): auth-provider and username/password users, token
 * together with exec, a certificate without its key, a *-data field that is
 * not base64, a file field whose file cannot be read. When token and
 * tokenFile are both set, the file wins (it is re-read as it rotates).
 *
 * Ownership: ms_kube_config_load() returns a config the caller frees with
 * ms_kube_config_free(); it owns every string in it. A loaded config is
 * read-only and may be shared by threads. A credential source (ms_kube_cred_t)
 * is thread-safe: it serialises token refreshes under its own lock.
 *
 * Implemented in src/kube/ by config.c (the resolution order, in-cluster
 * files, freeing a configuration), kubeconfig.c (kubeconfig files) and
 * cred.c (credentials that change: token files, exec plugins).
 */
#ifndef MESHSCALER_KUBECONFIG_H
#define MESHSCALER_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/error.h"

/* Cap on any file the loader reads (kubeconfig, token, CA, certificate). */
#define MS_KUBE_MAX_FILE (4u * 1024u * 1024u)

typedef struct {
    char *command; /* run through PATH when it has no '/' */
    char **args;   /* args[0..nargs) after the command */
    size_t nargs;
    char **env; /* "NAME=value" added to the environment */
    size_t nenv;
    char *api_version; /* client.authentication.k8s.io/v1 (or v1beta1) */
} ms_kube_exec_config_t;

typedef struct {
    char *server; /* "https://host:port", no trailing '/' */
    /* TLS: a file path, or PEM bytes decoded from *-data. Never both set. */
    char *ca_file;
    char *ca_pem;
    size_t ca_pem_len;
    char *cert_file;
    char *cert_pem;
    size_t cert_pem_len;
    char *key_file;
    char *key_pem;
    size_t key_pem_len;
    bool insecure_skip_tls_verify; /* the loader logs a warning when set */
    char *tls_server_name;
    char *proxy_url;
    /* Credentials: a fixed token, a token file (re-read), or an exec plugin. */
    char *token;
    char *token_file;
    ms_kube_exec_config_t *exec; /* NULL when none */
    char *namespace_;            /* the context's namespace (or in-cluster's); "default" */
    char *context;               /* context name used; "in-cluster" for in-cluster */
    char *source;                /* the file(s) the settings came from, for messages */
    bool in_cluster;
} ms_kube_config_t;

typedef struct {
    const char *kubeconfig; /* --kubeconfig; NULL: not given */
    const char *context;    /* --context; NULL: current-context */
    /* For tests; NULL means the real thing. */
    const char *kubeconfig_env; /* value of $KUBECONFIG ("" = unset) */
    const char *home;           /* $HOME */
    const char *sa_dir;         /* /var/run/secrets/kubernetes.io/serviceaccount */
    bool no_in_cluster;         /* skip the in-cluster step */
} ms_kube_config_options_t;

/* Resolve and load the configuration. On success *out is the caller's;
 * on failure *out is NULL and errbuf says which file and field are wrong
 * (MS_ERR_INVALID, MS_ERR_NOTFOUND when there is no configuration at all,
 * MS_ERR_IO, MS_ERR_TOOLARGE, MS_ERR_PARSE for YAML syntax). */
ms_err_t ms_kube_config_load(const ms_kube_config_options_t *opts, ms_kube_config_t **out,
                             char *errbuf, size_t errlen);

/* Load from kubeconfig files only: paths[0..n) merged as for $KUBECONFIG.
 * required: a missing file is an error (the --kubeconfig case) rather than
 * skipped. Same ownership and errors as ms_kube_config_load. */
ms_err_t ms_kube_config_load_files(const char *const *paths, size_t n, bool required,
                                   const char *context, ms_kube_config_t **out, char *errbuf,
                                   size_t errlen);

/* Parse one kubeconfig document held in memory (what the fuzzer drives);
 * name is used in messages and dir resolves relative paths ("" = cwd).
 * Files the document names are checked for readability. */
ms_err_t ms_kube_config_parse(const char *text, size_t len, const char *name, const char *dir,
                              const char *context, ms_kube_config_t **out, char *errbuf,
                              size_t errlen);

/* In-cluster configuration from KUBERNETES_SERVICE_HOST/PORT and the files in
 * sa_dir (NULL: the standard directory). */
ms_err_t ms_kube_config_in_cluster(const char *sa_dir, ms_kube_config_t **out, char *errbuf,
                                   size_t errlen);

/* NULL does nothing. */
void ms_kube_config_free(ms_kube_config_t *cfg);

/* ---- credentials that change at run time ---- */

typedef struct ms_kube_cred ms_kube_cred_t;

/* A credential source for cfg's token, token file or exec plugin; borrows
 * nothing from cfg (copies what it needs). token_reload_seconds: how old a
 * token read from a file may get before it is read again (0: 60 s, as
 * client-go). Returns NULL only on allocation failure. */
ms_kube_cred_t *ms_kube_cred_new(const ms_kube_config_t *cfg, double token_reload_seconds);
/* NULL does nothing. */
void ms_kube_cred_free(ms_kube_cred_t *cred);

/* True when the source has any bearer token to offer. */
bool ms_kube_cred_has_token(const ms_kube_cred_t *cred);
/* True when a refused token can be replaced (a token file or exec plugin),
 * so a 401 is worth one retry. */
bool ms_kube_cred_refreshable(const ms_kube_cred_t *cred);

/* Write "Authorization: Bearer <token>" into header[cap] (or "" when the
 * source has no token). now is monotonic seconds. Re-reads a token file older
 * than the reload period; runs the exec plugin when its token is missing or
 * expired. Errors (MS_ERR_IO, MS_ERR_INVALID, MS_ERR_TIMEOUT) name the file
 * or the plugin command. */
ms_err_t ms_kube_cred_header(ms_kube_cred_t *cred, double now, char *header, size_t cap,
                             char *errbuf, size_t errlen);

/* The server refused the token (401): forget it, so the next header re-reads
 * the file or re-runs the plugin. */
void ms_kube_cred_invalidate(ms_kube_cred_t *cred);

/* Number of times the exec plugin has run (tests and figures). */
unsigned ms_kube_cred_exec_runs(const ms_kube_cred_t *cred);

#endif
