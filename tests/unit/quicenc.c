#include "config.h"

#include "tests/unit/quicenc.h"

#include <string.h>

#include <openssl/evp.h>

#include "wire/sniff.h"

static size_t
put_varint2(uint8_t *out, uint32_t v)
{
	out[0] = (uint8_t)(0x40 | (v >> 8));
	out[1] = (uint8_t)v;
	return 2;
}

size_t
quicenc_crypto(uint8_t *out, uint32_t off, const uint8_t *data, size_t n)
{
	size_t k = 0;

	out[k++] = 0x06;
	k += put_varint2(out + k, off);
	k += put_varint2(out + k, (uint32_t)n);
	memcpy(out + k, data, n);
	return k + n;
}

size_t
quicenc_initial(uint32_t version, const uint8_t *dcid, size_t dcidlen,
    uint32_t pn, const uint8_t *frames, size_t flen, uint8_t *out,
    size_t outlen)
{
	static const uint8_t scid[4] = { 0xc1, 0x1e, 0x17, 0x00 };
	uint8_t		 key[16], iv[12], hp[16], mask[16], nonce[12];
	EVP_CIPHER_CTX	*ctx;
	size_t		 h = 0, pn_off, total, i;
	unsigned	 type = version == SNIFF_QUIC_V2 ? 1 : 0;
	int		 n, ok;

	if (2 + flen + 16 < 20 || flen > 0x3fff - 18 || dcidlen > 20)
		return 0;
	total = 1 + 4 + 1 + dcidlen + 1 + sizeof(scid) + 1 + 2 + 2 + flen + 16;
	if (total > outlen)
		return 0;
	if (sniff_quic_keys(version, dcid, dcidlen, key, iv, hp) != 0)
		return 0;
	out[h++] = (uint8_t)(0xc0 | type << 4 | 0x01);	/* pn length 2 */
	out[h++] = (uint8_t)(version >> 24);
	out[h++] = (uint8_t)(version >> 16);
	out[h++] = (uint8_t)(version >> 8);
	out[h++] = (uint8_t)version;
	out[h++] = (uint8_t)dcidlen;
	memcpy(out + h, dcid, dcidlen);
	h += dcidlen;
	out[h++] = sizeof(scid);
	memcpy(out + h, scid, sizeof(scid));
	h += sizeof(scid);
	out[h++] = 0;					/* no token */
	h += put_varint2(out + h, (uint32_t)(2 + flen + 16));
	pn_off = h;
	out[h++] = (uint8_t)(pn >> 8);
	out[h++] = (uint8_t)pn;
	memcpy(nonce, iv, sizeof(nonce));
	nonce[10] ^= (uint8_t)(pn >> 8);
	nonce[11] ^= (uint8_t)pn;
	if ((ctx = EVP_CIPHER_CTX_new()) == NULL)
		return 0;
	ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), NULL, key, nonce) == 1 &&
	    EVP_EncryptUpdate(ctx, NULL, &n, out, (int)h) == 1 &&
	    EVP_EncryptUpdate(ctx, out + h, &n, frames, (int)flen) == 1 &&
	    EVP_EncryptFinal_ex(ctx, out + h + n, &n) == 1 &&
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16,
	    out + h + flen) == 1;
	EVP_CIPHER_CTX_free(ctx);
	if (!ok || sniff_quic_hp_mask(hp, out + pn_off + 4, mask) != 0)
		return 0;
	out[0] ^= mask[0] & 0x0f;
	for (i = 0; i < 2; i++)
		out[pn_off + i] ^= mask[1 + i];
	return total;
}
