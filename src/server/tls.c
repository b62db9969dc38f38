/*
 * tls.c - the metrics endpoint's certificate: a self-signed one made in
 * memory, or a pair of files checked before use. OpenSSL 3 (libcrypto).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "meshscaler/server.h"
#include "server_internal.h"

#define VALIDITY_SECONDS (365L * 24 * 3600)
#define BACKDATE_SECONDS 3600L /* tolerate clocks a little behind ours */

/* The oldest OpenSSL error as text, or "unknown error"; clears the queue. */
static const char *ssl_error(char *buf, size_t cap)
{
    unsigned long e = ERR_get_error();

    if (e == 0)
        snprintf(buf, cap, "unknown error");
    else
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
    return buf;
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    int ok;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL)
        return 0;
    ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

/* Append what bio holds to out. */
static ms_err_t drain(BIO *bio, ms_buf_t *out)
{
    char *data;
    long n = BIO_get_mem_data(bio, &data);

    if (n <= 0)
        return MS_ERR_TLS;
    if (ms_buf_append(out, data, (size_t)n) != MS_OK)
        return MS_ERR_NOMEM;
    return ms_buf_append(out, "", 0); /* NUL-terminated for PEM readers */
}

ms_err_t ms_server_self_signed_cert(ms_buf_t *cert_pem, ms_buf_t *key_pem, char *errbuf,
                                    size_t errlen)
{
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    BIGNUM *serial = NULL;
    BIO *cbio = NULL, *kbio = NULL;
    X509_NAME *name;
    char why[256];
    ms_err_t err = MS_ERR_TLS;

    ERR_clear_error();
    key = EVP_EC_gen("P-256");
    x = X509_new();
    serial = BN_new();
    cbio = BIO_new(BIO_s_mem());
    kbio = BIO_new(BIO_s_mem());
    if (key == NULL || x == NULL || serial == NULL || cbio == NULL || kbio == NULL)
        goto fail;
    if (!X509_set_version(x, 2) || !BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
        BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) == NULL ||
        X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_SECONDS) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(x), VALIDITY_SECONDS) == NULL ||
        !X509_set_pubkey(x, key))
        goto fail;
    name = X509_get_subject_name(x);
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost",
                                    -1, -1, 0) ||
        !X509_set_issuer_name(x, name))
        goto fail;
    if (!add_ext(x, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(x, NID_key_usage, "critical,digitalSignature") ||
        !add_ext(x, NID_ext_key_usage, "serverAuth") ||
        !add_ext(x, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1") ||
        X509_sign(x, key, EVP_sha256()) <= 0)
        goto fail;
    if (!PEM_write_bio_X509(cbio, x) ||
        !PEM_write_bio_PrivateKey_traditional(kbio, key, NULL, NULL, 0, NULL, NULL))
        goto fail;
    if ((err = drain(cbio, cert_pem)) != MS_OK || (err = drain(kbio, key_pem)) != MS_OK)
        goto fail;
    err = MS_OK;
    goto out;
fail:
    err = ms_errf(errbuf, errlen, err == MS_ERR_NOMEM ? MS_ERR_NOMEM : MS_ERR_TLS,
                  "cannot make a self-signed certificate: %s", ssl_error(why, sizeof why));
out:
    BIO_free(kbio); /* a memory BIO: its contents go with it */
    BIO_free(cbio);
    BN_free(serial);
    X509_free(x);
    EVP_PKEY_free(key);
    return err;
}

ms_err_t ms__server_tls_check_files(const char *cert_file, const char *key_file, char *errbuf,
                                    size_t errlen)
{
    BIO *cbio = NULL, *kbio = NULL;
    X509 *x = NULL;
    EVP_PKEY *key = NULL;
    char why[256];
    ms_err_t err = MS_ERR_TLS;

    ERR_clear_error();
    if ((cbio = BIO_new_file(cert_file, "r")) == NULL) {
        err = ms_errf(errbuf, errlen, MS_ERR_IO, "cannot read the certificate %s: %s", cert_file,
                      strerror(errno));
        goto out;
    }
    if ((x = PEM_read_bio_X509(cbio, NULL, NULL, NULL)) == NULL) {
        err = ms_errf(errbuf, errlen, MS_ERR_TLS, "%s holds no PEM certificate: %s", cert_file,
                      ssl_error(why, sizeof why));
        goto out;
    }
    if ((kbio = BIO_new_file(key_file, "r")) == NULL) {
        err = ms_errf(errbuf, errlen, MS_ERR_IO, "cannot read the key %s: %s", key_file,
                      strerror(errno));
        goto out;
    }
    if ((key = PEM_read_bio_PrivateKey(kbio, NULL, NULL, NULL)) == NULL) {
        err = ms_errf(errbuf, errlen, MS_ERR_TLS, "%s holds no unencrypted PEM private key: %s",
                      key_file, ssl_error(why, sizeof why));
        goto out;
    }
    if (X509_check_private_key(x, key) != 1) {
        ERR_clear_error();
        err = ms_errf(errbuf, errlen, MS_ERR_TLS,
                      "the key %s does not belong to the certificate %s", key_file, cert_file);
        goto out;
    }
    err = MS_OK;
out:
    EVP_PKEY_free(key);
    X509_free(x);
    BIO_free(kbio);
    BIO_free(cbio);
    return err;
}
