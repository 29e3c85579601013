/*
 * The ClientHello in a QUIC client's Initial packets (sniff.h).  Initial
 * packets are protected with keys anyone can derive from the
 * destination connection ID (RFC 9001 5.2), so a middlebox can read
 * them: derive, remove header protection (5.4), open the AEAD (5.3),
 * gather the CRYPTO frames' bytes by offset, and read the hello at
 * offset 0 with the TLS parser.
 */
#include "config.h"

#include "wire/sniff.h"

#include "core/hkdf.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* Hello bytes kept: Chrome's with an ML-KEM share is ~1.9 KB. */
#define SNIFF_QUIC_CRYPTO_MAX	8192
#define SNIFF_QUIC_RANGES	16	/* disjoint runs of CRYPTO bytes */
#define SNIFF_QUIC_DGRAMS_MAX	4	/* then give up */
#define SNIFF_QUIC_CID_MAX	20
#define SNIFF_QUIC_TAG		16

struct sniff_quic {
	uint32_t	version;	/* 0 until the first Initial */
	uint8_t		dcid[SNIFF_QUIC_CID_MAX];
	size_t		dcidlen;
	uint8_t		key[16], iv[12], hp[16];
	unsigned	dgrams;
	size_t		nruns;
	struct { size_t lo, hi; } run[SNIFF_QUIC_RANGES];
	uint8_t		crypto[SNIFF_QUIC_CRYPTO_MAX];
};

/* ---- keys ---------------------------------------------------------------- */

int
sniff_quic_keys(uint32_t version, const uint8_t *dcid, size_t dcidlen,
    uint8_t key[16], uint8_t iv[12], uint8_t hp[16])
{
	static const uint8_t salt_v1[20] = {
		0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
		0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
	};
	static const uint8_t salt_v2[20] = {	/* RFC 9369 3.3.1 */
		0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
		0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
	};
	uint8_t	initial[32], client[32];
	int	v2 = version == SNIFF_QUIC_V2, rc = -1;

	if (version != SNIFF_QUIC_V1 && !v2)
		return -1;
	/* HKDF-Extract with an empty DCID needs a non-NULL key. */
	if (hkdf_extract("SHA256", v2 ? salt_v2 : salt_v1, 20, dcidlen ?
	    dcid : (const uint8_t *)"", dcidlen, initial, sizeof(initial)) != 0 ||
	    hkdf_expand_label("SHA256", initial, 32, "client in", client,
	    32) != 0 ||
	    hkdf_expand_label("SHA256", client, 32, v2 ? "quicv2 key" :
	    "quic key", key, 16) != 0 ||
	    hkdf_expand_label("SHA256", client, 32, v2 ? "quicv2 iv" :
	    "quic iv", iv, 12) != 0 ||
	    hkdf_expand_label("SHA256", client, 32, v2 ? "quicv2 hp" :
	    "quic hp", hp, 16) != 0)
		goto fail;
	rc = 0;
fail:
	OPENSSL_cleanse(initial, sizeof(initial));
	OPENSSL_cleanse(client, sizeof(client));
	return rc;
}

int
sniff_quic_hp_mask(const uint8_t hp[16], const uint8_t sample[16],
    uint8_t mask[16])
{
	EVP_CIPHER_CTX	*ctx;
	int		 n = 0, rc = -1;

	if ((ctx = EVP_CIPHER_CTX_new()) == NULL)
		return -1;
	if (EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, hp, NULL) == 1 &&
	    EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
	    EVP_EncryptUpdate(ctx, mask, &n, sample, 16) == 1 && n == 16)
		rc = 0;
	EVP_CIPHER_CTX_free(ctx);
	return rc;
}

static int
sniff_open(const struct sniff_quic *q, uint64_t pn, const uint8_t *aad,
    size_t aadlen, const uint8_t *ct, size_t ctlen, uint8_t *pt)
{
	EVP_CIPHER_CTX	*ctx;
	uint8_t		 nonce[12];
	int		 n, i, rc = -1;

	memcpy(nonce, q->iv, sizeof(nonce));
	for (i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(pn >> (8 * i));
	if ((ctx = EVP_CIPHER_CTX_new()) == NULL)
		return -1;
	if (EVP_DecryptInit_ex(ctx, EVP_aes_128_gcm(), NULL, q->key,
	    nonce) != 1 ||
	    EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1 ||
	    EVP_DecryptUpdate(ctx, pt, &n, ct, (int)(ctlen -
	    SNIFF_QUIC_TAG)) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SNIFF_QUIC_TAG,
	    (void *)(uintptr_t)(ct + ctlen - SNIFF_QUIC_TAG)) != 1 ||
	    EVP_DecryptFinal_ex(ctx, pt + n, &n) != 1)
		goto fail;
	rc = 0;
fail:
	EVP_CIPHER_CTX_free(ctx);
	return rc;
}

/* ---- packets and frames -------------------------------------------------- */

/* A variable-length integer (RFC 9000 16); -1 when it does not fit. */
static int
sniff_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
	size_t	n, i;

	if (*pos >= len)
		return -1;
	n = (size_t)1 << (p[*pos] >> 6);
	if (n > len - *pos)
		return -1;
	*v = p[*pos] & 0x3f;
	for (i = 1; i < n; i++)
		*v = *v << 8 | p[*pos + i];
	*pos += n;
	return 0;
}

/* Records CRYPTO bytes at [off, off + n), clipped to the buffer. */
static int
sniff_crypto_add(struct sniff_quic *q, uint64_t off, const uint8_t *d,
    size_t n)
{
	size_t	lo, hi, i, j;

	if (off >= SNIFF_QUIC_CRYPTO_MAX || n == 0)
		return 0;
	lo = (size_t)off;
	hi = n > SNIFF_QUIC_CRYPTO_MAX - lo ? SNIFF_QUIC_CRYPTO_MAX : lo + n;
	memcpy(q->crypto + lo, d, hi - lo);
	/* Merge with every run it touches; keep runs sorted. */
	for (i = 0; i < q->nruns && q->run[i].hi < lo; i++)
		;
	for (j = i; j < q->nruns && q->run[j].lo <= hi; j++) {
		if (q->run[j].lo < lo)
			lo = q->run[j].lo;
		if (q->run[j].hi > hi)
			hi = q->run[j].hi;
	}
	if (j == i) {			/* touches none: insert */
		if (q->nruns == SNIFF_QUIC_RANGES)
			return -1;
		memmove(&q->run[i + 1], &q->run[i],
		    (q->nruns - i) * sizeof(q->run[0]));
		q->nruns++;
	} else {			/* runs i..j-1 become one */
		memmove(&q->run[i + 1], &q->run[j],
		    (q->nruns - j) * sizeof(q->run[0]));
		q->nruns -= j - i - 1;
	}
	q->run[i].lo = lo;
	q->run[i].hi = hi;
	return 0;
}

/* The frames of one Initial's plaintext; -1 on any frame not allowed
 * there or cut short. */
static int
sniff_frames(struct sniff_quic *q, const uint8_t *p, size_t len)
{
	size_t		pos = 0;
	uint64_t	type, v, off, n, count, k;

	while (pos < len) {
		if (sniff_varint(p, len, &pos, &type) != 0)
			return -1;
		switch (type) {
		case 0x00:			/* PADDING */
		case 0x01:			/* PING */
			break;
		case 0x02:			/* ACK */
		case 0x03:			/* ACK with ECN counts */
			if (sniff_varint(p, len, &pos, &v) != 0 ||
			    sniff_varint(p, len, &pos, &v) != 0 ||
			    sniff_varint(p, len, &pos, &count) != 0 ||
			    sniff_varint(p, len, &pos, &v) != 0)
				return -1;
			/* Each range is two varints: count is bounded by
			 * the bytes left. */
			for (k = 0; k < count; k++)
				if (sniff_varint(p, len, &pos, &v) != 0 ||
				    sniff_varint(p, len, &pos, &v) != 0)
					return -1;
			for (k = 0; type == 0x03 && k < 3; k++)
				if (sniff_varint(p, len, &pos, &v) != 0)
					return -1;
			break;
		case 0x06:			/* CRYPTO */
			if (sniff_varint(p, len, &pos, &off) != 0 ||
			    sniff_varint(p, len, &pos, &n) != 0 ||
			    n > len - pos)
				return -1;
			if (sniff_crypto_add(q, off, p + pos, (size_t)n) != 0)
				return -1;
			pos += (size_t)n;
			break;
		case 0x1c:			/* CONNECTION_CLOSE */
			if (sniff_varint(p, len, &pos, &v) != 0 ||
			    sniff_varint(p, len, &pos, &v) != 0 ||
			    sniff_varint(p, len, &pos, &n) != 0 ||
			    n > len - pos)
				return -1;
			pos += (size_t)n;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* One Initial packet at p[0..len) (header checked by the caller up to
 * pn_off): unprotect, open, read its frames. */
static int
sniff_initial(struct sniff_quic *q, const uint8_t *p, size_t len,
    size_t pn_off)
{
	uint8_t		 mask[16], *buf;
	uint64_t	 pn = 0;
	size_t		 pnlen, i, hdr;
	int		 rc = -1;

	if (pn_off + 4 + 16 > len)
		return -1;			/* no room for the sample */
	if (sniff_quic_hp_mask(q->hp, p + pn_off + 4, mask) != 0)
		return -1;
	pnlen = ((p[0] ^ (mask[0] & 0x0f)) & 0x03) + 1;
	hdr = pn_off + pnlen;
	if (len - hdr < SNIFF_QUIC_TAG)
		return -1;
	/* The unprotected header, then the plaintext. */
	if ((buf = malloc(len)) == NULL)
		return -1;
	memcpy(buf, p, hdr);
	buf[0] ^= mask[0] & 0x0f;
	for (i = 0; i < pnlen; i++) {
		buf[pn_off + i] ^= mask[1 + i];
		pn = pn << 8 | buf[pn_off + i];
	}
	if (sniff_open(q, pn, buf, hdr, p + hdr, len - hdr, buf + hdr) == 0)
		rc = sniff_frames(q, buf + hdr, len - hdr - SNIFF_QUIC_TAG);
	free(buf);
	return rc;
}

/* Every packet of one datagram; -1 when the first is no Initial of a
 * version we know or anything is malformed. */
static int
sniff_datagram(struct sniff_quic *q, const uint8_t *p, size_t len)
{
	size_t		pos = 0, h, dl, sl, end, initials = 0;
	uint64_t	v;
	uint32_t	version;
	unsigned	type;

	while (pos < len) {
		const uint8_t *d = p + pos;
		size_t dlen = len - pos;

		/* Long header with the fixed bit (RFC 9000 17.2). */
		if ((d[0] & 0xc0) != 0xc0 || dlen < 7)
			break;
		version = (uint32_t)d[1] << 24 | (uint32_t)d[2] << 16 |
		    (uint32_t)d[3] << 8 | d[4];
		if (version != SNIFF_QUIC_V1 && version != SNIFF_QUIC_V2)
			break;
		type = (d[0] >> 4) & 3;
		/* Initial is 0 in v1, 1 in v2; Retry (3 in v1, 0 in v2)
		 * has no length: nothing after it can be walked. */
		if (type == (version == SNIFF_QUIC_V1 ? 3u : 0u))
			break;
		h = 5;
		if ((dl = d[h++]) > SNIFF_QUIC_CID_MAX || dl + 1 > dlen - h)
			break;
		h += dl;
		if ((sl = d[h++]) > SNIFF_QUIC_CID_MAX || sl > dlen - h)
			break;
		h += sl;
		if (type == (version == SNIFF_QUIC_V1 ? 0u : 1u)) {
			if (sniff_varint(d, dlen, &h, &v) != 0 ||
			    v > dlen - h)
				break;
			h += (size_t)v;		/* token */
		} else
			type = 0xff;		/* 0-RTT or Handshake */
		if (sniff_varint(d, dlen, &h, &v) != 0 || v > dlen - h)
			break;
		end = h + (size_t)v;
		if (type != 0xff) {
			if (q->version == 0) {
				if (sniff_quic_keys(version, d + 6, dl, q->key,
				    q->iv, q->hp) != 0)
					return -1;
				q->version = version;
				q->dcidlen = dl;
				memcpy(q->dcid, d + 6, dl);
			}
			/* Another connection's Initial: not ours to read. */
			if (version != q->version || dl != q->dcidlen ||
			    memcmp(d + 6, q->dcid, dl) != 0)
				break;
			if (sniff_initial(q, d, end, h) != 0)
				return -1;
			initials++;
		}
		pos += end;
	}
	return initials > 0 ? 0 : -1;
}

/* ---- the API ------------------------------------------------------------- */

struct sniff_quic *
sniff_quic_new(void)
{
	return calloc(1, sizeof(struct sniff_quic));
}

void
sniff_quic_free(struct sniff_quic *q)
{
	if (q == NULL)
		return;
	OPENSSL_cleanse(q, sizeof(*q));
	free(q);
}

enum sniff_res
sniff_quic_feed(struct sniff_quic *q, const uint8_t *p, size_t len, char *out,
    size_t outlen)
{
	enum sniff_res	r;

	if (outlen <= SNIFF_NAME_MAX)
		return SNIFF_NOT;
	if (sniff_datagram(q, p, len) != 0)
		return q->version == 0 ? SNIFF_NOT : SNIFF_NONE;
	q->dgrams++;
	if (q->nruns == 0 || q->run[0].lo != 0)
		r = SNIFF_MORE;
	else
		r = sniff_hello_sni(q->crypto, q->run[0].hi, out, outlen);
	if (r == SNIFF_MORE && (q->dgrams >= SNIFF_QUIC_DGRAMS_MAX ||
	    (q->nruns > 0 && q->run[0].lo == 0 &&
	    q->run[0].hi >= SNIFF_QUIC_CRYPTO_MAX)))
		r = SNIFF_NONE;
	return r;
}

enum sniff_res
sniff_quic_sni(const uint8_t *p, size_t len, char *out, size_t outlen)
{
	struct sniff_quic	*q;
	enum sniff_res		 r;

	if ((q = sniff_quic_new()) == NULL)
		return SNIFF_NOT;
	r = sniff_quic_feed(q, p, len, out, outlen);
	sniff_quic_free(q);
	return r;
}
