/*
 * The trojan request and UDP packets: encoding and parsing for our client
 * and our server.  No I/O and no state, so the unit tests, the fuzzer and
 * both roles share one codec.
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

/* ---- UDP packets ------------------------------------------------------ */

size_t
proto_trojan_udp_hdr_len(const struct proto_dest *a)
{
	size_t	n;

	switch (a->atyp) {
	case PROTO_ATYP_IPV4:
		return 1 + 4 + 2 + 2 + 2;
	case PROTO_ATYP_IPV6:
		return 1 + 16 + 2 + 2 + 2;
	case PROTO_ATYP_DOMAIN:
		n = strnlen(a->domain, sizeof(a->domain));
		if (n == 0 || n > 255)
			return 0;
		return 1 + 1 + n + 2 + 2 + 2;
	default:
		return 0;
	}
}

ssize_t
proto_trojan_udp_encode_hdr(uint8_t *out, size_t outlen,
    const struct proto_dest *a, size_t plen)
{
	size_t	hlen = proto_trojan_udp_hdr_len(a), off = 1, n;

	if (hlen == 0 || plen > PROTO_TROJAN_UDP_PAYLOAD_MAX || outlen < hlen)
		return -1;
	out[0] = a->atyp;
	switch (a->atyp) {
	case PROTO_ATYP_IPV4:
		memcpy(out + off, a->ip, 4);
		off += 4;
		break;
	case PROTO_ATYP_IPV6:
		memcpy(out + off, a->ip, 16);
		off += 16;
		break;
	default:
		n = hlen - 8;
		out[off++] = (uint8_t)n;
		memcpy(out + off, a->domain, n);
		off += n;
		break;
	}
	out[off++] = (uint8_t)(a->port >> 8);
	out[off++] = (uint8_t)a->port;
	out[off++] = (uint8_t)(plen >> 8);
	out[off++] = (uint8_t)plen;
	out[off++] = '\r';
	out[off++] = '\n';
	return (ssize_t)off;
}

ssize_t
proto_trojan_udp_encode(uint8_t *out, size_t outlen,
    const struct proto_dest *a, const void *payload, size_t plen)
{
	ssize_t	h;

	if ((h = proto_trojan_udp_encode_hdr(out, outlen, a, plen)) < 0 ||
	    outlen - (size_t)h < plen)
		return -1;
	if (plen > 0)
		memcpy(out + h, payload, plen);
	return h + (ssize_t)plen;
}

ssize_t
proto_trojan_udp_parse(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen)
{
	size_t	alen, off, n;

	if (len < 1)
		return 0;
	switch (in[0]) {
	case PROTO_ATYP_IPV4:
		alen = 4;
		off = 1;
		break;
	case PROTO_ATYP_IPV6:
		alen = 16;
		off = 1;
		break;
	case PROTO_ATYP_DOMAIN:
		if (len < 2)
			return 0;
		if ((alen = in[1]) == 0)
			return -1;
		off = 2;
		if (memchr(in + off, '\0', (len < off + alen ? len : off + alen)
		    - off) != NULL)
			return -1;
		break;
	default:
		return -1;
	}
	off += alen + 2;		/* address, port: any value */
	if (len < off + 2)
		return 0;
	n = (size_t)in[off] << 8 | in[off + 1];
	if (n > PROTO_TROJAN_UDP_PAYLOAD_MAX)
		return -1;
	off += 2;
	if (len > off && in[off] != '\r')
		return -1;
	if (len > off + 1 && in[off + 1] != '\n')
		return -1;
	off += 2;
	if (len < off + n)
		return 0;
	memset(a, 0, sizeof(*a));
	a->atyp = in[0];
	if (a->atyp == PROTO_ATYP_DOMAIN)
		memcpy(a->domain, in + 2, alen);
	else
		memcpy(a->ip, in + 1, alen);
	a->port = (uint16_t)(in[off - 6] << 8 | in[off - 5]);
	*payload = in + off;
	*plen = n;
	return (ssize_t)(off + n);
}
