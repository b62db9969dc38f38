/*
 * server_internal.h - what server.c and tls.c share inside src/server/.
 */
#ifndef MESHSCALER_SERVER_INTERNAL_H
#define MESHSCALER_SERVER_INTERNAL_H

#include <stddef.h>

#include "meshscaler/error.h"

/* Check that cert_file holds a PEM certificate and key_file a PEM private
 * key that belongs to it, before libwebsockets loads them (its own failure
 * says only that the vhost could not be made). MS_ERR_TLS or MS_ERR_IO with
 * one line in errbuf naming the file. Nothing is kept. */
ms_err_t ms__server_tls_check_files(const char *cert_file, const char *key_file, char *errbuf,
                                    size_t errlen);

#endif
