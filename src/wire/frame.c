/*
 * Datagram frames (layout in frame.h).  The parser takes hostile input:
 * every field is judged as soon as it has arrived, so a stream that has
 * gone wrong is noticed without waiting for up to 64 KiB that cannot help.
 */
#include "config.h"

#include "wire/frame.h"

#include <stdbool.h>
#include <string.h>

#include "core/addr.h"
#include "wire/wire.h"

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
	size_t	n = wire_addr_len(a);

	return n == 0 ? 0 : 2 + n;
}

ssize_t
frame_encode_hdr(uint8_t *out, size_t outlen, const struct proto_dest *a,
    size_t plen)
{
	size_t	hlen = frame_hdr_len(a);

	if (hlen == 0 || plen > FRAME_PAYLOAD_MAX || outlen < hlen)
		return -1;
	put16(out, (uint16_t)plen);
	(void)wire_addr_put(out + 2, a);
	return (ssize_t)hlen;
}

ssize_t
frame_encode(uint8_t *out, size_t outlen, const struct proto_dest *a,
    const void *payload, size_t plen)
{
	return wire_payload(out, outlen, frame_encode_hdr(out, outlen, a, plen),
	    payload, plen);
}

ssize_t
frame_parse(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen)
{
	size_t	n, hlen;
	ssize_t	f;

	if (len < 2)
		return 0;
	n = get16(in);
	if (n > FRAME_PAYLOAD_MAX)
		return -1;
	if ((f = wire_addr_scan(in + 2, len - 2)) <= 0)
		return f == WIRE_MORE ? 0 : -1;
	hlen = 2 + (size_t)f;
	if (len < hlen + n)
		return 0;
	(void)wire_addr_get(in + 2, a);
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
