/*
 * The shared address field (layout in wire.h).  The parsers take hostile
 * input and never read past len.
 */
#include "config.h"

#include "wire/wire.h"

#include <string.h>

size_t
wire_addr_len(const struct proto_dest *a)
{
	size_t	n;

	switch (a->atyp) {
	case PROTO_ATYP_IPV4:
		return 1 + 4 + 2;
	case PROTO_ATYP_IPV6:
		return 1 + 16 + 2;
	case PROTO_ATYP_DOMAIN:
		n = strnlen(a->domain, sizeof(a->domain));
		if (n == 0 || n > 255)
			return 0;
		return 1 + 1 + n + 2;
	default:
		return 0;
	}
}

size_t
wire_addr_put(uint8_t *out, const struct proto_dest *a)
{
	size_t	n = 0, alen;

	out[n++] = a->atyp;
	if (a->atyp == PROTO_ATYP_DOMAIN) {
		alen = strlen(a->domain);
		out[n++] = (uint8_t)alen;
		memcpy(out + n, a->domain, alen);
	} else {
		alen = a->atyp == PROTO_ATYP_IPV4 ? 4 : 16;
		memcpy(out + n, a->ip, alen);
	}
	n += alen;
	out[n++] = (uint8_t)(a->port >> 8);
	out[n++] = (uint8_t)a->port;
	return n;
}

ssize_t
wire_addr_size(const uint8_t *in, size_t len)
{
	if (len < 1)
		return WIRE_MORE;
	switch (in[0]) {
	case PROTO_ATYP_IPV4:
		return 1 + 4 + 2;
	case PROTO_ATYP_IPV6:
		return 1 + 16 + 2;
	case PROTO_ATYP_DOMAIN:
		if (len < 2)
			return WIRE_MORE;
		if (in[1] == 0)
			return WIRE_BAD;
		return 1 + 1 + (ssize_t)in[1] + 2;
	default:
		return WIRE_BAD;
	}
}

ssize_t
wire_addr_scan(const uint8_t *in, size_t len)
{
	ssize_t	n;
	size_t	name;

	if ((n = wire_addr_size(in, len)) <= 0)
		return n;
	if (in[0] == PROTO_ATYP_DOMAIN) {
		name = len - 2 < in[1] ? len - 2 : in[1];
		if (memchr(in + 2, '\0', name) != NULL)
			return WIRE_BAD;
	}
	return len < (size_t)n ? WIRE_MORE : n;
}

ssize_t
wire_addr_get(const uint8_t *in, struct proto_dest *a)
{
	size_t	n = 1, alen;

	memset(a, 0, sizeof(*a));
	a->atyp = in[0];
	if (a->atyp == PROTO_ATYP_DOMAIN) {
		alen = in[n++];
		if (memchr(in + n, '\0', alen) != NULL)
			return WIRE_BAD;
		memcpy(a->domain, in + n, alen);
	} else {
		alen = a->atyp == PROTO_ATYP_IPV4 ? 4 : 16;
		memcpy(a->ip, in + n, alen);
	}
	n += alen;
	a->port = (uint16_t)(in[n] << 8 | in[n + 1]);
	return (ssize_t)(n + 2);
}

ssize_t
wire_payload(uint8_t *out, size_t outlen, ssize_t h, const void *payload,
    size_t plen)
{
	if (h < 0 || outlen - (size_t)h < plen)
		return -1;
	if (plen > 0)
		memcpy(out + h, payload, plen);
	return h + (ssize_t)plen;
}
