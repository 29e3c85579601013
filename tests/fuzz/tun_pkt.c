/*
 * The packet side of fuzz_tun (see tun_pkt.h): connections by their
 * addresses and ports, with lwIP's ISN and the MSS the app announced.
 */
#include "tun_pkt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/vnet.h"
#include "wire/pkt.h"

#define TP_MAX_CONN	64
#define TP_MSS_DEFAULT	536		/* no MSS option: RFC 9293 3.7.1 */
#define TP_MSS_ANY	0xffffffffu	/* an option of 0: the MTU bounds */

struct tp_conn {
	uint8_t		 local[16], remote[16];	/* IPv4 in the first 4 */
	uint16_t	 lport, rport;
	uint32_t	 isn;
	bool		 isn_known;
	/* The largest MSS announced by the SYNs fed for these ports (a later
	 * SYN may start a new connection on them); 0 when none was seen. */
	uint32_t	 mss;
	bool		 used;
};

/* A TCP segment inside an IP packet, bounds checked as lwIP does. */
struct tp_seg {
	const uint8_t	*ip, *th;
	uint8_t		 src[16], dst[16];
	size_t		 len;		/* IP packet, as its header states */
	size_t		 thl, seglen;	/* TCP header, TCP segment */
	bool		 v6;
};

static struct tp_conn	 tp_conns[TP_MAX_CONN];
static unsigned		 tp_next;
static unsigned		 tp_mtu;
/* A TCP segment came in a way this file does not parse (fragments, IPv6
 * extension headers): a SYN's MSS may have gone unseen. */
static bool		 tp_blind;
static uint64_t		 tp_bytes, tp_furthest;

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void
tun_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz_tun: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

uint8_t
tun_pattern(uint64_t off)
{
	uint32_t x = (uint32_t)(off ^ (off >> 32)) * 0x9e3779b1u;

	return (uint8_t)(x >> 24 ^ x >> 11);
}

void
tun_pattern_fill(uint8_t *b, size_t n, uint64_t off)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = tun_pattern(off + i);
}

void
tun_pkt_reset(unsigned mtu)
{
	memset(tp_conns, 0, sizeof(tp_conns));
	tp_next = 0;
	tp_mtu = mtu;
	tp_blind = false;
	tp_bytes = tp_furthest = 0;
}

void
tun_pkt_counts(uint64_t *bytes, uint64_t *furthest)
{
	*bytes = tp_bytes;
	*furthest = tp_furthest;
}

/* An unfragmented TCP segment with a whole header, within the length its
 * IP header states (shorter packets lwIP drops; longer ones it trims). */
static bool
tp_tcp(const uint8_t *p, size_t n, struct tp_seg *s)
{
	size_t ihl;

	memset(s, 0, sizeof(*s));
	s->ip = p;
	if (n >= 20 && p[0] >> 4 == 4) {
		ihl = (size_t)(p[0] & 0x0f) * 4;
		s->len = get16(p + 2);
		if (ihl < 20 || s->len > n || s->len < ihl + 20 || p[9] != 6 ||
		    (get16(p + 6) & 0x3fff) != 0)
			return false;
		memcpy(s->src, p + 12, 4);
		memcpy(s->dst, p + 16, 4);
	} else if (n >= 60 && p[0] >> 4 == 6 && p[6] == 6) {
		ihl = 40;
		s->len = (size_t)get16(p + 4) + 40;
		if (s->len > n || s->len < 60)
			return false;
		memcpy(s->src, p + 8, 16);
		memcpy(s->dst, p + 24, 16);
		s->v6 = true;
	} else
		return false;
	s->th = p + ihl;
	s->seglen = s->len - ihl;
	s->thl = (size_t)(s->th[12] >> 4) * 4;
	return s->thl >= 20 && s->thl <= s->seglen;
}

static struct tp_conn *
tp_find(const uint8_t local[16], const uint8_t remote[16], uint16_t lport,
    uint16_t rport, bool make)
{
	struct tp_conn *c;
	unsigned i;

	for (i = 0; i < TP_MAX_CONN; i++) {
		c = &tp_conns[i];
		if (c->used && c->lport == lport && c->rport == rport &&
		    memcmp(c->local, local, 16) == 0 &&
		    memcmp(c->remote, remote, 16) == 0)
			return c;
	}
	if (!make)
		return NULL;
	c = &tp_conns[tp_next++ % TP_MAX_CONN];
	memset(c, 0, sizeof(*c));
	memcpy(c->local, local, 16);
	memcpy(c->remote, remote, 16);
	c->lport = lport;
	c->rport = rport;
	c->used = true;
	return c;
}

/* Option byte i of a segment as lwIP reads it: past the packet, the
 * zeroed slack tsnetif_input leaves there. */
static uint8_t
tp_opt(const struct tp_seg *s, size_t i)
{
	return 20 + i < s->seglen ? s->th[20 + i] : 0;
}

/*
 * The MSS lwIP takes from a SYN's options, parsed as lwIP 2.1's
 * tcp_parseopt does (the last MSS option counts; a bad length ends the
 * parse): TP_MSS_DEFAULT without one, TP_MSS_ANY for 0 (read as TCP_MSS).
 */
static uint32_t
tp_syn_mss(const struct tp_seg *s)
{
	size_t optlen = s->thl - 20, i = 0;
	uint32_t mss = TP_MSS_DEFAULT;
	uint8_t kind, len;

	while (i < optlen) {
		kind = tp_opt(s, i++);
		if (kind == 0)
			break;
		if (kind == 1)
			continue;
		len = tp_opt(s, i++);
		if (kind == 2) {
			if (len != 4 || i + 2 > optlen)
				break;
			mss = (uint32_t)tp_opt(s, i) << 8 | tp_opt(s, i + 1);
			if (mss == 0)
				mss = TP_MSS_ANY;
			i += 2;
		} else if (kind == 3) {		/* window scale */
			if (len != 3 || i + 1 > optlen)
				break;
			i++;
		} else if (kind == 4) {		/* SACK permitted */
			if (len != 2 || i > optlen)
				break;
		} else {
			if (len < 2)
				break;
			i += len - 2;
		}
	}
	return mss;
}

/* ---- what goes in ----------------------------------------------------- */

/* Upper-layer checksum with the pseudo header (al: address length) into
 * l4[off]; verify: 0 when the one there is right. */
static uint16_t
tp_l4_sum(const uint8_t *addrs, size_t al, uint8_t proto, const uint8_t *l4,
    size_t len, size_t off, bool verify)
{
	uint8_t pseudo[40], zero[2] = { 0, 0 };
	uint64_t sum = 0;

	memset(pseudo, 0, sizeof(pseudo));
	memcpy(pseudo, addrs, 2 * al);
	if (al == 4) {
		pseudo[9] = proto;
		pseudo[10] = (uint8_t)(len >> 8);
		pseudo[11] = (uint8_t)len;
	} else {
		put32(pseudo + 32, (uint32_t)len);
		pseudo[39] = proto;
	}
	if (proto != PKT_PROTO_ICMP)
		sum = pkt_csum_add(0, pseudo, al == 4 ? 12 : 40);
	if (verify)
		return pkt_csum_fold(pkt_csum_add(sum, l4, len));
	sum = pkt_csum_add(sum, l4, off);
	sum = pkt_csum_add(sum, zero, 2);
	sum = pkt_csum_add(sum, l4 + off + 2, len - off - 2);
	return pkt_csum_fold(sum);
}

static void
tp_l4_fix(const uint8_t *addrs, size_t al, uint8_t proto, uint8_t *l4,
    size_t len, size_t off)
{
	uint16_t c;

	if (len < off + 2)
		return;
	c = tp_l4_sum(addrs, al, proto, l4, len, off, false);
	if (c == 0 && proto == PKT_PROTO_UDP)
		c = 0xffff;
	memcpy(l4 + off, &c, 2);
}

/*
 * Input packet: correct the IPv4 header checksum and the UDP, ICMP and
 * ICMPv6 checksums of unfragmented packets, which the client verifies
 * (lwIP does not check TCP's): the fuzzer explores what lies behind
 * them instead of failing the checksum every time.
 */
static void
tp_sum_fix(uint8_t *p, size_t n)
{
	size_t ihl, tot, ulen, al;
	uint8_t *l4, proto;
	const uint8_t *addrs;
	uint16_t c;

	if (n >= 20 && p[0] >> 4 == 4) {
		ihl = (size_t)(p[0] & 0x0f) * 4;
		tot = get16(p + 2) < n ? get16(p + 2) : n;
		if (ihl < 20 || tot < ihl)
			return;
		p[10] = p[11] = 0;
		c = pkt_csum_fold(pkt_csum_add(0, p, ihl));
		memcpy(p + 10, &c, 2);
		if ((get16(p + 6) & 0x3fff) != 0)
			return;
		l4 = p + ihl;
		tot -= ihl;
		proto = p[9];
		addrs = p + 12;
		al = 4;
	} else if (n >= 40 && p[0] >> 4 == 6) {
		tot = (size_t)get16(p + 4) + 40 < n ? get16(p + 4) : n - 40;
		l4 = p + 40;
		proto = p[6];
		addrs = p + 8;
		al = 16;
	} else
		return;
	switch (proto) {
	case PKT_PROTO_UDP:
		if (tot < 8)
			return;
		ulen = get16(l4 + 4);
		if (ulen < 8 || ulen > tot)
			ulen = tot;
		tp_l4_fix(addrs, al, proto, l4, ulen, 6);
		break;
	case PKT_PROTO_ICMP:
	case PKT_PROTO_ICMP6:
		tp_l4_fix(addrs, al, proto, l4, tot, 2);
		break;
	default:
		break;
	}
}

void
tun_pkt_in(uint8_t *p, size_t n, bool raw)
{
	struct tp_seg s;
	struct tp_conn *c;
	uint32_t mss;
	uint8_t fl;

	if (n >= 20 && p[0] >> 4 == 4 && p[9] == 6 &&
	    (get16(p + 6) & 0x3fff) != 0)
		tp_blind = true;
	if (n >= 40 && p[0] >> 4 == 6 && p[6] != 6 && p[6] != PKT_PROTO_UDP &&
	    p[6] != PKT_PROTO_ICMP6)
		tp_blind = true;
	if (tp_tcp(p, n, &s)) {
		fl = s.th[13];
		if ((fl & 0x02) != 0 && (fl & 0x10) == 0) {
			c = tp_find(s.dst, s.src, get16(s.th + 2),
			    get16(s.th), true);
			mss = tp_syn_mss(&s);
			if (mss > c->mss)
				c->mss = mss;
		}
		/* Make the ACK number relative to lwIP's ISN. */
		if (!raw && (fl & 0x10) != 0 && (c = tp_find(s.dst, s.src,
		    get16(s.th + 2), get16(s.th), false)) != NULL &&
		    c->isn_known)
			put32((uint8_t *)(uintptr_t)s.th + 8,
			    c->isn + get32(s.th + 8));
	}
	if (!raw)
		tp_sum_fix(p, n);
}

/* ---- what comes out --------------------------------------------------- */

static void
tp_check_tcp(const struct tp_seg *s)
{
	struct tp_conn *c;
	uint32_t mss, seq, off;
	size_t i, data = s->seglen - s->thl, optlen = s->thl - 20;
	uint8_t fl = s->th[13];

	c = tp_find(s->src, s->dst, get16(s->th), get16(s->th + 2),
	    (fl & 0x12) == 0x12);
	if (c == NULL)
		return;
	seq = get32(s->th + 4);
	if ((fl & 0x12) == 0x12) {
		c->isn = seq;
		c->isn_known = true;
		return;
	}
	if (data == 0)
		return;
	/* lwIP's own bound: the MTU. */
	mss = tp_mtu - (s->v6 ? 60 : 40);
	if (data + optlen > mss)
		tun_fail("TCP segment of %zu bytes (options %zu) over the "
		    "MTU %u", data, optlen, tp_mtu);
	if (!tp_blind && c->mss != 0 && data + optlen > c->mss)
		tun_fail("TCP segment of %zu bytes (options %zu) over the "
		    "MSS %u the app announced (port %u)", data, optlen,
		    (unsigned)c->mss, (unsigned)c->rport);
	if (!c->isn_known)
		return;
	off = seq - c->isn - 1;
	tp_bytes += data;
	if (off + data > tp_furthest)
		tp_furthest = off + data;
	for (i = 0; i < data; i++)
		if (s->th[s->thl + i] != tun_pattern((uint64_t)off + i))
			tun_fail("TCP payload byte at stream offset %u is "
			    "%#x, the app sent %#x (port %u)",
			    (unsigned)(off + i), s->th[s->thl + i],
			    tun_pattern((uint64_t)off + i),
			    (unsigned)c->rport);
}

void
tun_pkt_out(const uint8_t *p, size_t n)
{
	struct tp_seg s;
	const uint8_t *l4, *addrs;
	size_t ihl, len, al;
	uint8_t proto;

	if (n > tp_mtu)
		tun_fail("packet of %zu bytes over the MTU %u", n, tp_mtu);
	if (n >= 20 && p[0] >> 4 == 4) {
		ihl = (size_t)(p[0] & 0x0f) * 4;
		if (get16(p + 2) != n || ihl < 20 || ihl > n)
			tun_fail("IPv4 packet of %zu bytes states %u", n,
			    get16(p + 2));
		if (pkt_csum_fold(pkt_csum_add(0, p, ihl)) != 0)
			tun_fail("IPv4 header checksum");
		if ((get16(p + 6) & 0x3fff) != 0)
			return;		/* a fragment */
		l4 = p + ihl;
		len = n - ihl;
		proto = p[9];
		addrs = p + 12;
		al = 4;
	} else if (n >= 40 && p[0] >> 4 == 6) {
		if ((size_t)get16(p + 4) + 40 != n)
			tun_fail("IPv6 packet of %zu bytes states %u", n,
			    get16(p + 4));
		l4 = p + 40;
		len = n - 40;
		proto = p[6];
		addrs = p + 8;
		al = 16;
	} else
		tun_fail("packet of %zu bytes, not IPv4 nor IPv6", n);
	switch (proto) {
	case PKT_PROTO_TCP:
		if (!tp_tcp(p, n, &s))
			tun_fail("TCP segment of %zu bytes malformed", len);
		if (tp_l4_sum(addrs, al, proto, l4, len, 16, true) != 0)
			tun_fail("TCP checksum (%zu bytes)", len);
		tp_check_tcp(&s);
		break;
	case PKT_PROTO_UDP:
		if (len < 8 || get16(l4 + 4) < 8 || get16(l4 + 4) > len)
			tun_fail("UDP datagram of %zu bytes malformed", len);
		if ((al == 16 || get16(l4 + 6) != 0) &&
		    tp_l4_sum(addrs, al, proto, l4, get16(l4 + 4), 6,
		    true) != 0)
			tun_fail("UDP checksum (%u bytes)", get16(l4 + 4));
		break;
	case PKT_PROTO_ICMP:
	case PKT_PROTO_ICMP6:
		if (len < 8 || tp_l4_sum(addrs, al, proto, l4, len, 2,
		    true) != 0)
			tun_fail("ICMP checksum (%zu bytes)", len);
		break;
	default:
		break;
	}
}

/* ---- with offloads: what the kernel would make of a write -------------- */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Cuts super-packet p (checksum finished) at gso bytes of payload as the
 * kernel does, and checks every segment as a plain write. */
static void
tp_gso_cut(const uint8_t *p, size_t n, size_t l3, size_t hl, uint16_t gso)
{
	static uint8_t seg[65536];
	size_t off, chunk, tcplen;
	uint8_t flags = p[l3 + 13];
	const uint8_t *addrs = p[0] >> 4 == 4 ? p + 12 : p + 8;
	size_t al = p[0] >> 4 == 4 ? 4 : 16;
	uint16_t c;

	for (off = hl; off < n; off += chunk) {
		chunk = n - off < gso ? n - off : gso;
		memcpy(seg, p, hl);
		memcpy(seg + hl, p + off, chunk);
		if (al == 4) {
			put16(seg + 2, (uint16_t)(hl + chunk));
			memset(seg + 10, 0, 2);
			c = pkt_csum_fold(pkt_csum_add(0, seg, l3));
			memcpy(seg + 10, &c, 2);
		} else
			put16(seg + 4, (uint16_t)(hl + chunk - 40));
		put32(seg + l3 + 4, get32(p + l3 + 4) + (uint32_t)(off - hl));
		if (off + chunk < n)	/* FIN and PSH on the last one only */
			seg[l3 + 13] = flags & (uint8_t)~0x09;
		tcplen = hl + chunk - l3;
		memset(seg + l3 + 16, 0, 2);
		c = tp_l4_sum(addrs, al, PKT_PROTO_TCP, seg + l3, tcplen, 16,
		    false);
		memcpy(seg + l3 + 16, &c, 2);
		tun_pkt_out(seg, hl + chunk);
	}
}

void
tun_pkt_out_vnet(const uint8_t *p, size_t n)
{
	static uint8_t q[65536 + 64];
	struct vnet_hdr h;
	size_t l3, hl, at, len;
	uint16_t c;

	if (n < VNET_HDR_LEN)
		tun_fail("write of %zu bytes: no virtio-net header", n);
	vnet_hdr_get(&h, p);
	len = n - VNET_HDR_LEN;
	if (len > sizeof(q))
		tun_fail("write of %zu bytes", n);
	memcpy(q, p + VNET_HDR_LEN, len);
	if (h.flags & ~VNET_F_NEEDS_CSUM)
		tun_fail("virtio-net flags 0x%x", h.flags);
	if (h.flags & VNET_F_NEEDS_CSUM) {
		/* Only TCP's is left to the kernel, at the TCP header. */
		l3 = len >= 20 && q[0] >> 4 == 4 ? (size_t)(q[0] & 0x0f) * 4 :
		    40;
		at = (size_t)h.csum_start + h.csum_offset;
		if (len < 20 || h.csum_start != l3 || h.csum_offset != 16 ||
		    at + 2 > len || q[q[0] >> 4 == 4 ? 9 : 6] != PKT_PROTO_TCP)
			tun_fail("virtio-net checksum at %u+%u in %zu bytes",
			    h.csum_start, h.csum_offset, len);
		c = pkt_csum_fold(pkt_csum_add(0, q + l3, len - l3));
		memcpy(q + at, &c, 2);
	}
	if (h.gso_type == VNET_GSO_NONE) {
		if (h.gso_size != 0 || h.hdr_len != 0)
			tun_fail("virtio-net header without GSO has sizes");
		tun_pkt_out(q, len);
		return;
	}
	if (!(h.flags & VNET_F_NEEDS_CSUM) ||
	    h.gso_type != (q[0] >> 4 == 4 ? VNET_GSO_TCPV4 : VNET_GSO_TCPV6))
		tun_fail("virtio-net GSO type %u", h.gso_type);
	l3 = h.csum_start;
	hl = l3 + (size_t)(q[l3 + 12] >> 4) * 4;
	if (h.hdr_len != hl || h.gso_size == 0 || hl + h.gso_size >= len)
		tun_fail("virtio-net GSO: hdr_len %u (headers %zu), gso_size "
		    "%u, %zu bytes", h.hdr_len, hl, h.gso_size, len);
	/* The super-packet itself: the lengths and the finished checksum
	 * (so the pseudo-header sum covered its full length). */
	if (q[0] >> 4 == 4 ? get16(q + 2) != len : get16(q + 4) + 40u != len)
		tun_fail("super-packet of %zu bytes states another length",
		    len);
	if (tp_l4_sum(q[0] >> 4 == 4 ? q + 12 : q + 8, q[0] >> 4 == 4 ? 4 :
	    16, PKT_PROTO_TCP, q + l3, len - l3, 16, true) != 0)
		tun_fail("super-packet TCP checksum (%zu bytes)", len);
	tp_gso_cut(q, len, l3, hl, h.gso_size);
}
