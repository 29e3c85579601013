/*
 * The trojan request and UDP packets: encoding and parsing for our client
 * and our server.  No I/O and no state, so the unit tests, the fuzzer and
 * both roles share one codec.
 */
#include "config.h"

#include "wire/proto_trojan.h"

#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "wire/wire.h"

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
	/* hash, CRLF, cmd, ATYP ADDR PORT, CRLF */
	if ((alen = wire_addr_len(dest)) == 0)
		return -1;
	need = PROTO_TROJAN_HEX_LEN + 2 + 1 + alen + 2;
	if (outlen < need)
		return -1;
	memcpy(out, hex, PROTO_TROJAN_HEX_LEN);
	n = PROTO_TROJAN_HEX_LEN;
	out[n++] = '\r';
	out[n++] = '\n';
	out[n++] = cmd;
	n += wire_addr_put(out + n, dest);
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
	size_t	 i, n;
	ssize_t	 alen;

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
	/* A NUL in the name is judged once the whole request is in. */
	if ((alen = wire_addr_size(in + n, len - n)) <= 0)
		return alen == WIRE_MORE ? 0 : -1;
	if (len < n + (size_t)alen + 2) {
		/* The CRLF is checked as soon as it is there. */
		if (len >= n + (size_t)alen + 1 && in[n + (size_t)alen] != '\r')
			return -1;
		return 0;
	}
	if (wire_addr_get(in + n, &r->dest) < 0)
		return -1;
	n += (size_t)alen;
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
	size_t	n = wire_addr_len(a);

	/* ATYP ADDR PORT, length, CRLF */
	return n == 0 ? 0 : n + 2 + 2;
}

ssize_t
proto_trojan_udp_encode_hdr(uint8_t *out, size_t outlen,
    const struct proto_dest *a, size_t plen)
{
	size_t	hlen = proto_trojan_udp_hdr_len(a), off;

	if (hlen == 0 || plen > PROTO_TROJAN_UDP_PAYLOAD_MAX || outlen < hlen)
		return -1;
	off = wire_addr_put(out, a);
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
	return wire_payload(out, outlen,
	    proto_trojan_udp_encode_hdr(out, outlen, a, plen), payload, plen);
}

ssize_t
proto_trojan_udp_parse(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen)
{
	ssize_t	h;
	size_t	off, n;

	/* Address and port: any value. */
	if ((h = wire_addr_scan(in, len)) <= 0)
		return h == WIRE_MORE ? 0 : -1;
	off = (size_t)h;
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
	(void)wire_addr_get(in, a);
	*payload = in + off;
	*plen = n;
	return (ssize_t)(off + n);
}
