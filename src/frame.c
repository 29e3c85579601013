/*
 * Datagram frames (layout in frame.h).  The parser takes hostile input:
 * every field is judged as soon as it has arrived, so a stream that has
 * gone wrong is noticed without waiting for up to 64 KiB that cannot help.
 */
#include "config.h"

#include "frame.h"

#include <stdbool.h>
#include <string.h>

#include "addr.h"

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

size_t
frame_hdr_len(const struct proto_dest *a)
{
	size_t	n;

	switch (a->atyp) {
	case PROTO_ATYP_IPV4:
		return 2 + 1 + 4 + 2;
	case PROTO_ATYP_IPV6:
		return 2 + 1 + 16 + 2;
	case PROTO_ATYP_DOMAIN:
		n = strnlen(a->domain, sizeof(a->domain));
		if (n == 0 || n > 255)
			return 0;
		return 2 + 1 + 1 + n + 2;
	default:
		return 0;
	}
}

ssize_t
frame_encode_hdr(uint8_t *out, size_t outlen, const struct proto_dest *a,
    size_t plen)
{
	size_t	hlen = frame_hdr_len(a), off = 3, n;

	if (hlen == 0 || plen > FRAME_PAYLOAD_MAX || outlen < hlen)
		return -1;
	put16(out, (uint16_t)plen);
	out[2] = a->atyp;
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
		n = hlen - 6;
		out[off++] = (uint8_t)n;
		memcpy(out + off, a->domain, n);
		off += n;
		break;
	}
	put16(out + off, a->port);
	return (ssize_t)hlen;
}

ssize_t
frame_encode(uint8_t *out, size_t outlen, const struct proto_dest *a,
    const void *payload, size_t plen)
{
	ssize_t	h;

	if ((h = frame_encode_hdr(out, outlen, a, plen)) < 0 ||
	    outlen - (size_t)h < plen)
		return -1;
	if (plen > 0)
		memcpy(out + h, payload, plen);
	return h + (ssize_t)plen;
}

ssize_t
frame_parse(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen)
{
	size_t	n, alen, hlen;

	if (len < 2)
		return 0;
	n = get16(in);
	if (n > FRAME_PAYLOAD_MAX)
		return -1;
	if (len < 3)
		return 0;
	switch (in[2]) {
	case PROTO_ATYP_IPV4:
		alen = 4;
		break;
	case PROTO_ATYP_IPV6:
		alen = 16;
		break;
	case PROTO_ATYP_DOMAIN:
		if (len < 4)
			return 0;
		if (in[3] == 0)
			return -1;
		alen = 1 + (size_t)in[3];
		if (memchr(in + 4, '\0', (len < 3 + alen ? len : 3 + alen) - 4)
		    != NULL)
			return -1;
		break;
	default:
		return -1;
	}
	hlen = 3 + alen + 2;
	if (len < hlen + n)
		return 0;
	memset(a, 0, sizeof(*a));
	a->atyp = in[2];
	if (a->atyp == PROTO_ATYP_DOMAIN)
		memcpy(a->domain, in + 4, alen - 1);
	else
		memcpy(a->ip, in + 3, alen);
	a->port = get16(in + 3 + alen);
	*payload = in + hlen;
	*plen = n;
	return (ssize_t)(hlen + n);
}

void
frame_dest_from_ip(struct proto_dest *a, int family, const void *ip,
    uint16_t port)
{
	memset(a, 0, sizeof(*a));
	if (family == AF_INET) {
		a->atyp = PROTO_ATYP_IPV4;
		memcpy(a->ip, ip, 4);
	} else {
		a->atyp = PROTO_ATYP_IPV6;
		memcpy(a->ip, ip, 16);
	}
	a->port = port;
}

void
frame_dest_from_addr(struct proto_dest *a, const struct addr *sa)
{
	size_t	len;

	frame_dest_from_ip(a, addr_family(sa), addr_ip(sa, &len),
	    addr_port(sa));
}

int
frame_dest_to_addr(const struct proto_dest *a, struct addr *sa)
{
	switch (a->atyp) {
	case PROTO_ATYP_IPV4:
		addr_from_raw(sa, AF_INET, a->ip, a->port);
		return 0;
	case PROTO_ATYP_IPV6:
		addr_from_raw(sa, AF_INET6, a->ip, a->port);
		return 0;
	default:
		return -1;
	}
}
