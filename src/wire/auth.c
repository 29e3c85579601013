/*
 * Keys and user ids of the native protocol: a user's key in base64, a new
 * random key, and the user id the request header carries in the clear.
 * The server's user table and replay cache are in server/users.c.
 */
#include "config.h"

#include "wire/auth.h"

#include <string.h>

#include <sodium.h>

#include "core/log.h"

#define AUTH_ID_INFO		"tunsplit user id"

int
auth_key_parse(const char *b64, uint8_t key[PROTO_KEY_LEN])
{
	uint8_t		 tmp[PROTO_KEY_LEN];
	const char	*end = NULL;
	size_t		 n, binlen = 0;
	int		 rc = -1;

	if (b64 == NULL || key == NULL)
		return -1;
	n = strlen(b64);
	if (n != AUTH_KEY_B64_LEN - 1)
		return -1;
	/* b64_end lets trailing garbage be seen and rejected, instead of
	 * silently ending the key early. */
	if (sodium_base642bin(tmp, sizeof(tmp), b64, n, NULL, &binlen, &end,
	    sodium_base64_VARIANT_ORIGINAL) != 0)
		goto out;
	if (binlen != PROTO_KEY_LEN || end != b64 + n)
		goto out;
	memcpy(key, tmp, PROTO_KEY_LEN);
	rc = 0;
out:
	sodium_memzero(tmp, sizeof(tmp));
	return rc;
}

void
auth_key_generate(char out[AUTH_KEY_B64_LEN])
{
	uint8_t	key[PROTO_KEY_LEN];

	if (sodium_init() < 0)
		fatalx("libsodium initialisation failed");
	randombytes_buf(key, sizeof(key));
	sodium_bin2base64(out, AUTH_KEY_B64_LEN, key, sizeof(key),
	    sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(key, sizeof(key));
}

void
auth_user_id(const uint8_t key[PROTO_KEY_LEN], uint8_t id[PROTO_USER_ID_LEN])
{
	uint8_t	h[crypto_generichash_BYTES];

	/* BLAKE2b-256 truncated; the digest length is a BLAKE2b parameter,
	 * so "first 8 bytes" is not the same as an 8-byte digest. */
	crypto_generichash(h, sizeof(h), (const uint8_t *)AUTH_ID_INFO,
	    sizeof(AUTH_ID_INFO) - 1, key, PROTO_KEY_LEN);
	memcpy(id, h, PROTO_USER_ID_LEN);
	sodium_memzero(h, sizeof(h));
}
