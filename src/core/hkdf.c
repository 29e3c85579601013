/* HKDF and TLS 1.3's HKDF-Expand-Label (core/hkdf.h). */
#include "config.h"

#include "core/hkdf.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

static int
hkdf_run(int mode, const char *digest, const uint8_t *key, size_t keylen,
    const uint8_t *salt, size_t saltlen, const uint8_t *info,
    size_t infolen, uint8_t *out, size_t outlen)
{
	OSSL_PARAM	 params[6], *pp = params;
	EVP_KDF		*kdf;
	EVP_KDF_CTX	*kctx = NULL;
	int		 rc = -1;

	if ((kdf = EVP_KDF_fetch(NULL, "HKDF", NULL)) == NULL)
		return -1;
	if ((kctx = EVP_KDF_CTX_new(kdf)) == NULL)
		goto fail;
	*pp++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
	*pp++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
	    (char *)(uintptr_t)digest, 0);
	*pp++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	    (void *)(uintptr_t)key, keylen);
	if (salt != NULL)
		*pp++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
		    (void *)(uintptr_t)salt, saltlen);
	if (info != NULL)
		*pp++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
		    (void *)(uintptr_t)info, infolen);
	*pp = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kctx, out, outlen, params) == 1)
		rc = 0;
fail:
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	return rc;
}

int
hkdf_extract(const char *digest, const uint8_t *salt, size_t saltlen,
    const uint8_t *key, size_t keylen, uint8_t *out, size_t outlen)
{
	return hkdf_run(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, digest, key, keylen,
	    salt, saltlen, NULL, 0, out, outlen);
}

int
hkdf_expand_label(const char *digest, const uint8_t *secret,
    size_t secretlen, const char *label, uint8_t *out, size_t outlen)
{
	uint8_t	info[2 + 1 + 255 + 1];
	size_t	l = strlen(label), n = 0;

	if (6 + l > 255 || outlen > 0xffff)
		return -1;
	info[n++] = (uint8_t)(outlen >> 8);
	info[n++] = (uint8_t)outlen;
	info[n++] = (uint8_t)(6 + l);
	memcpy(info + n, "tls13 ", 6);
	memcpy(info + n + 6, label, l);
	n += 6 + l;
	info[n++] = 0;			/* the context: empty */
	return hkdf_run(EVP_KDF_HKDF_MODE_EXPAND_ONLY, digest, secret,
	    secretlen, NULL, 0, info, n, out, outlen);
}
