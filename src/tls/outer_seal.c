/*
 * Sealing a server stream's TLS 1.3 records ourselves, from the caller's
 * bytes straight into the batch queue (outer.c).
 *
 * OpenSSL 3.0 encrypts a record by copying its plaintext into its own
 * write buffer and encrypting that in place; the BIO then copies the
 * record into our queue: two passes over every byte besides the
 * encryption, and a 17 KiB buffer to allocate for each batch
 * (SSL_MODE_RELEASE_BUFFERS).  With SSL_OP_ENABLE_KTLS, once the
 * application traffic key of the write side is set, OpenSSL hands the
 * key, IV and record sequence to the write BIO (the kernel TLS
 * interface, BIO_CTRL_SET_KTLS) and from then on writes each record's
 * plaintext to the BIO, the caller's bytes themselves, with its content
 * type given beforehand when it is not application data.  Our BIO
 * takes that role (this kernel has no TLS, and the records go through
 * our queue anyway): it seals each record with the key it was given,
 * encrypting from the caller's bytes into the queue -- the same records
 * on the wire, one pass.  OpenSSL still reads, does the handshake and
 * writes tickets and alerts (sealed here too); padding is ours then
 * (OpenSSL will not hand the key over with a padding callback set).
 *
 * Only where OpenSSL 3.0 or 3.1's record layer does exactly this (the
 * BIO controls outer.c answers are the library's internal ones), for
 * AES-GCM in TLS 1.3, and never for a KeyUpdate (OpenSSL would change
 * the key without telling the BIO: the write fails instead).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/tls.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <sodium.h>

#include "core/log.h"
#include "tls/outer_int.h"

#define SEAL_TAG	16
#define SEAL_HDR	5
#define SEAL_KEY_MAX	32

struct outer_seal {
	const EVP_CIPHER *cipher;
	EVP_CIPHER_CTX	*ctx;		/* keyed; freed while idle */
	uint8_t		 key[SEAL_KEY_MAX];
	uint8_t		 iv[12];
	uint64_t	 seq;
	uint8_t		 type;		/* the next record's, 0: data */
	bool		 dead;		/* refused a KeyUpdate */
};

bool
outer_seal_supported(void)
{
	unsigned long	v = OpenSSL_version_num();

	/* The 3.0 and 3.1 record layer (rewritten in 3.2). */
	return v >> 28 == 3 && ((v >> 20) & 0xff) <= 1;
}

/* BIO_CTRL_SET_KTLS: crypto_info is OpenSSL's tls_crypto_info_all,
 * whose union of the kernel's structures comes first.  1 taken, 0 not
 * (OpenSSL then encrypts itself, as without). */
int
outer_seal_start(struct outer *o, const void *crypto_info)
{
	const struct tls_crypto_info *ci = crypto_info;
	const struct tls12_crypto_info_aes_gcm_128 *g128 = crypto_info;
	const struct tls12_crypto_info_aes_gcm_256 *g256 = crypto_info;
	struct outer_seal *s;
	const uint8_t *salt, *iv, *key, *seq;
	size_t	keylen, i;

	if (o->seal != NULL || ci == NULL || ci->version != TLS_1_3_VERSION)
		return 0;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return 0;
	switch (ci->cipher_type) {
	case TLS_CIPHER_AES_GCM_128:
		s->cipher = EVP_aes_128_gcm();
		salt = g128->salt, iv = g128->iv, key = g128->key;
		seq = g128->rec_seq, keylen = sizeof(g128->key);
		break;
	case TLS_CIPHER_AES_GCM_256:
		s->cipher = EVP_aes_256_gcm();
		salt = g256->salt, iv = g256->iv, key = g256->key;
		seq = g256->rec_seq, keylen = sizeof(g256->key);
		break;
	default:
		free(s);
		return 0;
	}
	memcpy(s->iv, salt, 4);
	memcpy(s->iv + 4, iv, 8);
	memcpy(s->key, key, keylen);
	for (i = 0; i < 8; i++)
		s->seq = s->seq << 8 | seq[i];
	o->seal = s;
	return 1;
}

void
outer_seal_type(struct outer *o, uint8_t type)
{
	if (o->seal != NULL)
		o->seal->type = type;
}

/* The content type of the record(s) OpenSSL writes next (announced,
 * else application data); taken once. */
uint8_t
outer_seal_next(struct outer *o)
{
	uint8_t	type = o->seal->type != 0 ? o->seal->type : 23;

	o->seal->type = 0;
	return type;
}

/* Idle: the cipher context (about a kilobyte) goes, the key stays. */
void
outer_seal_idle(struct outer *o)
{
	if (o->seal == NULL)
		return;
	EVP_CIPHER_CTX_free(o->seal->ctx);
	o->seal->ctx = NULL;
}

void
outer_seal_free(struct outer *o)
{
	if (o->seal == NULL)
		return;
	EVP_CIPHER_CTX_free(o->seal->ctx);
	sodium_memzero(o->seal, sizeof(*o->seal));
	free(o->seal);
	o->seal = NULL;
}

size_t
outer_seal_size(size_t len, size_t pad)
{
	return SEAL_HDR + len + 1 + pad + SEAL_TAG;
}

/*
 * The record of len bytes of p, of content type type (outer_seal_next),
 * padded by pad zero bytes, into out (room for outer_seal_size(len,
 * pad)).  Its size, or -1 (errno EPROTO: a
 * KeyUpdate, or the cipher failed).
 */
ssize_t
outer_seal_record(struct outer *o, uint8_t type, const void *p, size_t len,
    size_t pad, uint8_t *out)
{
	static const uint8_t zeros[256];
	struct outer_seal *s = o->seal;
	uint8_t	 nonce[12];
	size_t	 n = len + 1 + pad + SEAL_TAG, k;
	int	 outl, i;

	/* Handshake type 24: KeyUpdate, after which OpenSSL would write
	 * with a key it does not hand over. */
	if (s->dead || (type == 22 && len > 0 && *(const uint8_t *)p == 24)) {
		if (!s->dead)
			log_warnx("outer fd %d: KeyUpdate on a sealed stream: "
			    "closing it", o->fd);
		s->dead = true;
		errno = EPROTO;
		return -1;
	}
	if (s->ctx == NULL && ((s->ctx = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_EncryptInit_ex(s->ctx, s->cipher, NULL, s->key, NULL) != 1)) {
		EVP_CIPHER_CTX_free(s->ctx);
		s->ctx = NULL;
		errno = EPROTO;
		return -1;
	}
	memcpy(nonce, s->iv, sizeof(nonce));
	for (i = 0; i < 8; i++)
		nonce[4 + i] ^= (uint8_t)(s->seq >> (56 - 8 * i));
	out[0] = 23;		/* opaque_type: application_data */
	out[1] = 3;
	out[2] = 3;
	out[3] = (uint8_t)(n >> 8);
	out[4] = (uint8_t)n;
	out += SEAL_HDR;
	if (EVP_EncryptInit_ex(s->ctx, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_EncryptUpdate(s->ctx, NULL, &outl, out - SEAL_HDR,
	    SEAL_HDR) != 1 ||
	    (len > 0 && EVP_EncryptUpdate(s->ctx, out, &outl, p,
	    (int)len) != 1) ||
	    EVP_EncryptUpdate(s->ctx, out + len, &outl, &type, 1) != 1)
		goto fail;
	for (out += len + 1; pad > 0; out += k, pad -= k) {
		k = pad < sizeof(zeros) ? pad : sizeof(zeros);
		if (EVP_EncryptUpdate(s->ctx, out, &outl, zeros, (int)k) != 1)
			goto fail;
	}
	if (EVP_EncryptFinal_ex(s->ctx, out, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_AEAD_GET_TAG, SEAL_TAG,
	    out) != 1)
		goto fail;
	s->seq++;
	return (ssize_t)(SEAL_HDR + n);
fail:
	errno = EPROTO;
	return -1;
}
