/*
 * The trojan request: encoding for our client, parsing for our server.
 * No I/O and no state, so the unit test and the server share one parser.
 */
#include "proto_trojan.h"

#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

static bool
trojan_is_hex(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

int
proto_trojan_hash(const char *pw, size_t len,
    char hex[PROTO_TROJAN_HEX_LEN + 1])
{
	static const char	 digits[] = "0123456789abcdef";
	uint8_t			 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen = 0;
	size_t			 i;

	if (EVP_Digest(pw, len, md, &mdlen, EVP_sha224(), NULL) != 1 ||
	    mdlen * 2 != PROTO_TROJAN_HEX_LEN)
		return -1;
	for (i = 0; i < mdlen; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[PROTO_TROJAN_HEX_LEN] = '\0';
	sodium_memzero(md, sizeof(md));
	return 0;
}

ssize_t
proto_trojan_encode(uint8_t *out, size_t outlen,
    const char hex[PROTO_TROJAN_HEX_LEN], uint8_t cmd,
    const struct proto_dest *dest)
{
	size_t	 n = 0, alen, need, i;

	if (cmd != PROTO_TROJAN_CMD_CONNECT && cmd != PROTO_TROJAN_CMD_UDP)
		return -1;
	for (i = 0; i < PROTO_TROJAN_HEX_LEN; i++)
		if (!trojan_is_hex((uint8_t)hex[i]))
			return -1;
	switch (dest->atyp) {
	case PROTO_ATYP_IPV4:
		alen = 4;
		break;
	case PROTO_ATYP_IPV6:
		alen = 16;
		break;
	case PROTO_ATYP_DOMAIN:
		alen = strnlen(dest->domain, sizeof(dest->domain));
		if (alen == 0 || alen > 255)
			return -1;
		alen++;
		break;
	default:
		return -1;
	}
	need = PROTO_TROJAN_HEX_LEN + 2 + 2 + alen + 2 + 2;
	if (outlen < need)
		return -1;
	memcpy(out, hex, PROTO_TROJAN_HEX_LEN);
	n = PROTO_TROJAN_HEX_LEN;
	out[n++] = '\r';
	out[n++] = '\n';
	out[n++] = cmd;
	out[n++] = dest->atyp;
	if (dest->atyp == PROTO_ATYP_DOMAIN) {
		out[n++] = (uint8_t)(alen - 1);
		memcpy(out + n, dest->domain, alen - 1);
	} else
		memcpy(out + n, dest->ip, alen);
	n += dest->atyp == PROTO_ATYP_DOMAIN ? alen - 1 : alen;
	out[n++] = (uint8_t)(dest->port >> 8);
	out[n++] = (uint8_t)dest->port;
	out[n++] = '\r';
	out[n++] = '\n';
	return (ssize_t)n;
}

int
proto_trojan_detect(const uint8_t *in, size_t len)
{
	if (len == 0)
		return 0;
	return trojan_is_hex(in[0]) ? 1 : -1;
}

ssize_t
proto_trojan_parse(const uint8_t *in, size_t len, struct proto_trojan_req *r)
{
	size_t	 i, n, alen;

	memset(r, 0, sizeof(*r));
	/* Judge every byte we have, so garbage fails early, not at 56. */
	for (i = 0; i < len && i < PROTO_TROJAN_HEX_LEN; i++)
		if (!trojan_is_hex(in[i]))
			return -1;
	n = PROTO_TROJAN_HEX_LEN;
	if (len > n && in[n] != '\r')
		return -1;
	if (len > n + 1 && in[n + 1] != '\n')
		return -1;
	if (len < n + 4)
		return 0;
	memcpy(r->hex, in, PROTO_TROJAN_HEX_LEN);
	n += 2;
	r->cmd = in[n++];
	if (r->cmd != PROTO_TROJAN_CMD_CONNECT && r->cmd != PROTO_TROJAN_CMD_UDP)
		return -1;
	r->dest.atyp = in[n++];
	switch (r->dest.atyp) {
	case PROTO_ATYP_IPV4:
		alen = 4;
		break;
	case PROTO_ATYP_IPV6:
		alen = 16;
		break;
	case PROTO_ATYP_DOMAIN:
		if (len < n + 1)
			return 0;
		if ((alen = in[n++]) == 0)
			return -1;
		break;
	default:
		return -1;
	}
	if (len < n + alen + 2 + 2) {
		/* The CRLF is checked as soon as it is there. */
		if (len >= n + alen + 3 && in[n + alen + 2] != '\r')
			return -1;
		return 0;
	}
	if (r->dest.atyp == PROTO_ATYP_DOMAIN) {
		memcpy(r->dest.domain, in + n, alen);
		r->dest.domain[alen] = '\0';
		if (memchr(r->dest.domain, '\0', alen) != NULL)
			return -1;
	} else
		memcpy(r->dest.ip, in + n, alen);
	n += alen;
	r->dest.port = (uint16_t)(in[n] << 8 | in[n + 1]);
	n += 2;
	if (in[n] != '\r' || in[n + 1] != '\n')
		return -1;
	return (ssize_t)(n + 2);
}

int
proto_trojan_match(const char hex[PROTO_TROJAN_HEX_LEN],
    const char (*hashes)[PROTO_TROJAN_HEX_LEN + 1], size_t n)
{
	char	 low[PROTO_TROJAN_HEX_LEN];
	size_t	 i;
	int	 found = -1;

	/* Peers may send upper-case hex; ours is stored lower case. */
	for (i = 0; i < PROTO_TROJAN_HEX_LEN; i++)
		low[i] = (hex[i] >= 'A' && hex[i] <= 'F') ?
		    (char)(hex[i] - 'A' + 'a') : hex[i];
	for (i = 0; i < n; i++)
		if (sodium_memcmp(low, hashes[i], PROTO_TROJAN_HEX_LEN) == 0 &&
		    found == -1)
			found = (int)i;
	return found;
}
