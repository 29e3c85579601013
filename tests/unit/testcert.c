/*
 * The unit tests' self-signed certificate (see testcert.h); built into each
 * test that uses it (Makefile.am).
 */
#include "testcert.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tls/outer.h"

void
testcert_make(struct testcert *tc, const char *name, const char *cn)
{
	EVP_PKEY	*key;
	X509		*x;
	FILE		*fp;

	snprintf(tc->dir, sizeof(tc->dir), "/tmp/%s.XXXXXX", name);
	assert_non_null(mkdtemp(tc->dir));
	snprintf(tc->cert_pem, sizeof(tc->cert_pem), "%s/cert.pem", tc->dir);
	snprintf(tc->key_pem, sizeof(tc->key_pem), "%s/key.pem", tc->dir);
	assert_non_null(key = EVP_EC_gen("P-256"));
	assert_non_null(x = X509_new());
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 1), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
	assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(x),
	    "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0), 1);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(x)), 1);
	assert_int_equal(X509_set_pubkey(x, key), 1);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	assert_non_null(fp = fopen(tc->cert_pem, "w"));
	assert_int_equal(PEM_write_X509(fp, x), 1);
	assert_int_equal(fclose(fp), 0);
	assert_non_null(fp = fopen(tc->key_pem, "w"));
	assert_int_equal(PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL,
	    NULL), 1);
	assert_int_equal(fclose(fp), 0);
	X509_free(x);
	EVP_PKEY_free(key);
	assert_non_null(tc->sctx = outer_ctx_server(tc->cert_pem, tc->key_pem));
	assert_non_null(tc->cctx = outer_ctx_client(NULL, true));
}

void
testcert_remove(struct testcert *tc)
{
	outer_ctx_free(tc->sctx);
	outer_ctx_free(tc->cctx);
	tc->sctx = tc->cctx = NULL;
	unlink(tc->cert_pem);
	unlink(tc->key_pem);
	rmdir(tc->dir);
}
