/*
 * Raw IP packets (see pkt.h).  Everything arriving here comes from the TUN,
 * i.e. from any local process: bounds first, then checksums.
 *
 * Checksums are summed in the byte order of the data (RFC 1071 sec. 2(B)):
 * loads and stores go through memcpy in host order, so no byte swapping is
 * needed and the result is stored back the same way.
 */
#include "config.h"

#include "wire/pkt.h"

#include <string.h>
#include <sys/socket.h>

#define IP6_HBH		0
#define IP6_ROUTING	43
#define IP6_FRAGMENT	44
#define IP6_DSTOPTS	60
#define IP6_EXT_MAX	8	/* extension headers we walk before giving up */

#define ICMP_ECHO_REPLY		0
#define ICMP_ECHO_REQUEST	8
#define ICMP6_PACKET_TOO_BIG	2
#define ICMP6_ECHO_REQUEST	128
#define ICMP6_ECHO_REPLY	129

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* ---- checksums ---------------------------------------------------- */

/* Segments summed one after another must all have even lengths but the
 * last. */
uint64_t
pkt_csum_add(uint64_t sum, const void *data, size_t len)
{
	const uint8_t	*p = data;
	uint32_t	 w4;
	uint16_t	 w2 = 0;

	while (len >= 4) {
		memcpy(&w4, p, 4);
		sum += w4;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w2, p, 2);
		sum += w2;
		p += 2;
		len -= 2;
	}
	if (len > 0) {
		w2 = 0;
		memcpy(&w2, p, 1);
		sum += w2;
	}
	return sum;
}

/* Folds to 16 bits with end-around carry and inverts: the value to store,
 * or 0 when a sum over data including a correct checksum is checked. */
uint16_t
pkt_csum_fold(uint64_t sum)
{
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The pseudo header of UDP and ICMPv6. */
static uint64_t
pkt_pseudo(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto,
    size_t len)
{
	uint8_t	ph[40];

	if (family == AF_INET) {
		memcpy(ph, src, 4);
		memcpy(ph + 4, dst, 4);
		ph[8] = 0;
		ph[9] = proto;
		put16(ph + 10, (uint16_t)len);
		return pkt_csum_add(0, ph, 12);
	}
	memcpy(ph, src, 16);
	memcpy(ph + 16, dst, 16);
	put32(ph + 32, (uint32_t)len);
	ph[36] = ph[37] = ph[38] = 0;
	ph[39] = proto;
	return pkt_csum_add(0, ph, 40);
}

/* ---- parsing ------------------------------------------------------ */

static int
pkt_parse4(const uint8_t *p, size_t len, struct pkt_ip *ip)
{
	size_t		ihl;
	uint16_t	frag;

	if (len < 20)
		return PKT_MALFORMED;
	ihl = (size_t)(p[0] & 0x0f) * 4;
	if (ihl < 20 || get16(p + 2) != len || len < ihl)
		return PKT_MALFORMED;
	if (pkt_csum_fold(pkt_csum_add(0, p, ihl)) != 0)
		return PKT_BADSUM;
	ip->family = AF_INET;
	memcpy(ip->src, p + 12, 4);
	memcpy(ip->dst, p + 16, 4);
	ip->proto = p[9];
	ip->l4 = p + ihl;
	ip->l4_len = len - ihl;
	frag = get16(p + 6);
	ip->frag_more = (frag & 0x2000) != 0;
	ip->frag_off = (size_t)(frag & 0x1fff) * 8;
	ip->frag = ip->frag_more || ip->frag_off != 0;
	ip->frag_id = get16(p + 4);
	if (ip->frag && ip->frag_off + ip->l4_len > 0xffff - ihl)
		return PKT_MALFORMED;
	return PKT_OK;
}

int
pkt_parse_ext6(struct pkt_ip *ip, uint8_t nh, const uint8_t *p, size_t len)
{
	size_t		off = 0, hl;
	uint16_t	fo;
	int		i;

	for (i = 0; i < IP6_EXT_MAX; i++) {
		switch (nh) {
		case IP6_HBH:
		case IP6_ROUTING:
		case IP6_DSTOPTS:
			if (len - off < 8)
				return PKT_MALFORMED;
			hl = ((size_t)p[off + 1] + 1) * 8;
			if (len - off < hl)
				return PKT_MALFORMED;
			nh = p[off];
			off += hl;
			break;
		case IP6_FRAGMENT:
			/* A second fragment header (after reassembly, or two
			 * in one packet) is not something a host sends. */
			if (ip->frag || len - off < 8)
				return PKT_MALFORMED;
			fo = get16(p + off + 2);
			ip->frag_off = fo & 0xfff8;
			ip->frag_more = (fo & 1) != 0;
			ip->frag_id = get32(p + off + 4);
			nh = p[off];
			off += 8;
			if (ip->frag_off == 0 && !ip->frag_more)
				break;		/* atomic: a whole datagram */
			ip->frag = true;
			ip->proto = nh;
			ip->l4 = p + off;
			ip->l4_len = len - off;
			if (ip->frag_off + ip->l4_len > 0xffff)
				return PKT_MALFORMED;
			return PKT_OK;
		default:
			ip->proto = nh;
			ip->l4 = p + off;
			ip->l4_len = len - off;
			return PKT_OK;
		}
	}
	return PKT_MALFORMED;
}

static int
pkt_parse6(const uint8_t *p, size_t len, struct pkt_ip *ip)
{
	if (len < 40 || (size_t)get16(p + 4) + 40 != len)
		return PKT_MALFORMED;
	ip->family = AF_INET6;
	memcpy(ip->src, p + 8, 16);
	memcpy(ip->dst, p + 24, 16);
	return pkt_parse_ext6(ip, p[6], p + 40, len - 40);
}

int
pkt_parse(const uint8_t *p, size_t len, struct pkt_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (len < 1)
		return PKT_MALFORMED;
	switch (p[0] >> 4) {
	case 4:
		return pkt_parse4(p, len, ip);
	case 6:
		return pkt_parse6(p, len, ip);
	default:
		return PKT_MALFORMED;
	}
}

int
pkt_udp_parse(const struct pkt_ip *ip, struct pkt_udp *u)
{
	const uint8_t	*h = ip->l4;
	size_t		 ulen;
	uint16_t	 sum;

	if (ip->proto != PKT_PROTO_UDP || ip->frag || ip->l4_len < 8)
		return PKT_MALFORMED;
	ulen = get16(h + 4);
	/* Over IPv4 bytes past the UDP length are padding; over IPv6 the
	 * lengths must agree (a zero length would be a jumbogram). */
	if (ulen < 8 || ulen > ip->l4_len ||
	    (ip->family == AF_INET6 && ulen != ip->l4_len))
		return PKT_MALFORMED;
	memcpy(&sum, h + 6, 2);
	if (sum == 0) {
		if (ip->family == AF_INET6)
			return PKT_BADSUM;
	} else if (pkt_csum_fold(pkt_csum_add(pkt_pseudo(ip->family, ip->src,
	    ip->dst, PKT_PROTO_UDP, ulen), h, ulen)) != 0)
		return PKT_BADSUM;
	u->sport = get16(h);
	u->dport = get16(h + 2);
	u->data = h + 8;
	u->len = ulen - 8;
	return PKT_OK;
}

int
pkt_echo_parse(const struct pkt_ip *ip, struct pkt_echo *e)
{
	const uint8_t	*h = ip->l4;
	uint64_t	 sum;
	bool		 v6 = ip->family == AF_INET6;

	if (ip->proto != (v6 ? PKT_PROTO_ICMP6 : PKT_PROTO_ICMP) || ip->frag ||
	    ip->l4_len < PKT_ECHO_HDR)
		return PKT_MALFORMED;
	sum = v6 ? pkt_pseudo(AF_INET6, ip->src, ip->dst, PKT_PROTO_ICMP6,
	    ip->l4_len) : 0;
	if (pkt_csum_fold(pkt_csum_add(sum, h, ip->l4_len)) != 0)
		return PKT_BADSUM;
	if (h[0] != (v6 ? ICMP6_ECHO_REQUEST : ICMP_ECHO_REQUEST) || h[1] != 0)
		return PKT_OTHER;
	e->id = get16(h + 4);
	e->seq = get16(h + 6);
	e->data = h + PKT_ECHO_HDR;
	e->len = ip->l4_len - PKT_ECHO_HDR;
	return PKT_OK;
}

int
pkt_ptb6_parse(const struct pkt_ip *ip, unsigned *mtu, const uint8_t **quote,
    size_t *qlen)
{
	const uint8_t	*h = ip->l4;

	/* Type, code, checksum, MTU, then as much of our packet as fits:
	 * its fixed header at least. */
	if (ip->family != AF_INET6 || ip->proto != PKT_PROTO_ICMP6 ||
	    ip->frag || ip->l4_len < 8 + 40 || h[0] != ICMP6_PACKET_TOO_BIG ||
	    h[1] != 0 || (h[8] >> 4) != 6)
		return PKT_OTHER;
	if (pkt_csum_fold(pkt_csum_add(pkt_pseudo(AF_INET6, ip->src, ip->dst,
	    PKT_PROTO_ICMP6, ip->l4_len), h, ip->l4_len)) != 0)
		return PKT_BADSUM;
	*mtu = get32(h + 4);
	*quote = h + 8;
	*qlen = ip->l4_len - 8;
	return PKT_OK;
}

/* ---- building ----------------------------------------------------- */

/* IP header for an upper-layer message of l4len bytes; returns its length
 * (where the message starts), 0 when too long. */
static size_t
pkt_ip_hdr(uint8_t *out, int family, const uint8_t *src, const uint8_t *dst,
    uint8_t proto, size_t l4len, uint16_t ipid)
{
	uint16_t	sum;

	if (family == AF_INET) {
		if (l4len > 0xffff - 20)
			return 0;
		out[0] = 0x45;
		out[1] = 0;
		put16(out + 2, (uint16_t)(20 + l4len));
		put16(out + 4, ipid);
		put16(out + 6, 0);
		out[8] = 64;
		out[9] = proto;
		out[10] = out[11] = 0;
		memcpy(out + 12, src, 4);
		memcpy(out + 16, dst, 4);
		sum = pkt_csum_fold(pkt_csum_add(0, out, 20));
		memcpy(out + 10, &sum, 2);
		return 20;
	}
	if (l4len > 0xffff)
		return 0;
	put32(out, 0x60000000u);
	put16(out + 4, (uint16_t)l4len);
	out[6] = proto;
	out[7] = 64;
	memcpy(out + 8, src, 16);
	memcpy(out + 24, dst, 16);
	return 40;
}

size_t
pkt_build_udp(uint8_t *out, int family, const uint8_t *src, uint16_t sport,
    const uint8_t *dst, uint16_t dport, const void *data, size_t len,
    uint16_t ipid)
{
	size_t		 hl, ulen = 8 + len;
	uint8_t		*u;
	uint16_t	 sum;

	if ((hl = pkt_ip_hdr(out, family, src, dst, PKT_PROTO_UDP, ulen,
	    ipid)) == 0)
		return 0;
	u = out + hl;
	put16(u, sport);
	put16(u + 2, dport);
	put16(u + 4, (uint16_t)ulen);
	u[6] = u[7] = 0;
	if (len > 0)
		memcpy(u + 8, data, len);
	sum = pkt_csum_fold(pkt_csum_add(pkt_pseudo(family, src, dst,
	    PKT_PROTO_UDP, ulen), u, ulen));
	if (sum == 0)
		sum = 0xffff;	/* 0 would mean "no checksum" */
	memcpy(u + 6, &sum, 2);
	return hl + ulen;
}

size_t
pkt_build_echo_reply(uint8_t *out, int family, const uint8_t *src,
    const uint8_t *dst, uint16_t id, uint16_t seq, const void *data,
    size_t len, uint16_t ipid)
{
	size_t		 hl, mlen = PKT_ECHO_HDR + len;
	uint8_t		*m, proto;
	uint64_t	 sum = 0;
	uint16_t	 cs;

	proto = family == AF_INET ? PKT_PROTO_ICMP : PKT_PROTO_ICMP6;
	if ((hl = pkt_ip_hdr(out, family, src, dst, proto, mlen, ipid)) == 0)
		return 0;
	m = out + hl;
	m[0] = family == AF_INET ? ICMP_ECHO_REPLY : ICMP6_ECHO_REPLY;
	m[1] = 0;
	m[2] = m[3] = 0;
	put16(m + 4, id);
	put16(m + 6, seq);
	if (len > 0)
		memcpy(m + PKT_ECHO_HDR, data, len);
	if (family == AF_INET6)
		sum = pkt_pseudo(family, src, dst, proto, mlen);
	cs = pkt_csum_fold(pkt_csum_add(sum, m, mlen));
	memcpy(m + 2, &cs, 2);
	return hl + mlen;
}

/* RFC 792 asks for the IP header and 8 bytes; RFC 1812 and RFC 4443
 * allow as much as fits in the minimum MTU. */
size_t
pkt_build_unreach(uint8_t *out, int family, const uint8_t *src,
    const uint8_t *dst, uint8_t code, const void *quote, size_t qlen,
    uint16_t ipid)
{
	size_t		 hl = family == AF_INET ? 20 : 40, mlen;
	size_t		 room = (family == AF_INET ? 576 : 1280) - hl - 8;
	uint8_t		*m, proto;
	uint64_t	 sum = 0;
	uint16_t	 cs;

	if (qlen > room)
		qlen = room;
	mlen = 8 + qlen;
	proto = family == AF_INET ? PKT_PROTO_ICMP : PKT_PROTO_ICMP6;
	if ((hl = pkt_ip_hdr(out, family, src, dst, proto, mlen, ipid)) == 0)
		return 0;
	m = out + hl;
	m[0] = family == AF_INET ? 3 : 1;	/* destination unreachable */
	m[1] = code;
	memset(m + 2, 0, 6);
	if (qlen > 0)
		memcpy(m + 8, quote, qlen);
	if (family == AF_INET6)
		sum = pkt_pseudo(family, src, dst, proto, mlen);
	cs = pkt_csum_fold(pkt_csum_add(sum, m, mlen));
	memcpy(m + 2, &cs, 2);
	return hl + mlen;
}

/* ---- fragmenting -------------------------------------------------- */

static int
pkt_fragment4(const uint8_t *p, size_t len, unsigned mtu, uint8_t *out,
    int (*emit)(void *, const uint8_t *, size_t), void *arg)
{
	size_t		hl = (size_t)(p[0] & 0x0f) * 4, chunk, off, n;
	uint16_t	sum;

	chunk = (mtu - hl) & ~(size_t)7;
	for (off = 0; off < len - hl; off += n) {
		n = len - hl - off;
		if (n > chunk)
			n = chunk;
		memcpy(out, p, hl);
		memcpy(out + hl, p + hl + off, n);
		put16(out + 2, (uint16_t)(hl + n));
		put16(out + 6, (uint16_t)((off / 8) |
		    (off + n < len - hl ? 0x2000 : 0)));
		out[10] = out[11] = 0;
		sum = pkt_csum_fold(pkt_csum_add(0, out, hl));
		memcpy(out + 10, &sum, 2);
		if (emit(arg, out, hl + n) == -1)
			return -1;
	}
	return 0;
}

/* Our own IPv6 packets have no extension headers: the fragment header
 * goes right after the fixed header. */
static int
pkt_fragment6(const uint8_t *p, size_t len, unsigned mtu, uint32_t id,
    uint8_t *out, int (*emit)(void *, const uint8_t *, size_t), void *arg)
{
	size_t	chunk, off, n;

	chunk = (mtu - 48) & ~(size_t)7;
	for (off = 0; off < len - 40; off += n) {
		n = len - 40 - off;
		if (n > chunk)
			n = chunk;
		memcpy(out, p, 40);
		put16(out + 4, (uint16_t)(8 + n));
		out[6] = IP6_FRAGMENT;
		out[40] = p[6];
		out[41] = 0;
		put16(out + 42, (uint16_t)(off | (off + n < len - 40 ? 1 : 0)));
		put32(out + 44, id);
		memcpy(out + 48, p + 40 + off, n);
		if (emit(arg, out, 48 + n) == -1)
			return -1;
	}
	return 0;
}

int
pkt_fragment(const uint8_t *p, size_t len, unsigned mtu, uint32_t id,
    uint8_t *out, int (*emit)(void *, const uint8_t *, size_t), void *arg)
{
	if (len <= mtu)
		return emit(arg, p, len);
	if (mtu < 128)
		return -1;
	if ((p[0] >> 4) == 4)
		return pkt_fragment4(p, len, mtu, out, emit, arg);
	return pkt_fragment6(p, len, mtu, id, out, emit, arg);
}
