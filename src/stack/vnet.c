/*
 * virtio-net headers on the TUN: checks on the way in, headers on the way
 * out.  The kernel is trusted with the data (its TCP checksums are not
 * verified, as without offloads), but not with the header's consistency:
 * anything that would make us read or write outside the packet, or take a
 * packet for what it is not, is refused.
 */
#include "config.h"

#include "stack/vnet.h"

#include <string.h>

#define VNET_PROTO_TCP	6
#define VNET_PROTO_UDP	17
#define VNET_TCP_CSUM	16	/* offset of the checksum in a TCP header */

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* One's complement sum of big-endian 16-bit words, not folded. */
static uint32_t
vnet_sum(uint32_t sum, const uint8_t *p, size_t n)
{
	while (n >= 2) {
		sum += rd16(p);
		p += 2;
		n -= 2;
	}
	if (n > 0)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t
vnet_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

void
vnet_hdr_get(struct vnet_hdr *h, const uint8_t b[VNET_HDR_LEN])
{
	h->flags = b[0];
	h->gso_type = b[1];
	memcpy(&h->hdr_len, b + 2, 2);
	memcpy(&h->gso_size, b + 4, 2);
	memcpy(&h->csum_start, b + 6, 2);
	memcpy(&h->csum_offset, b + 8, 2);
}

void
vnet_hdr_put(const struct vnet_hdr *h, uint8_t b[VNET_HDR_LEN])
{
	b[0] = h->flags;
	b[1] = h->gso_type;
	memcpy(b + 2, &h->hdr_len, 2);
	memcpy(b + 4, &h->gso_size, 2);
	memcpy(b + 6, &h->csum_start, 2);
	memcpy(b + 8, &h->csum_offset, 2);
}

/* The IP header's length and the protocol after it; -1 if not IP. */
static int
vnet_ip(const uint8_t *pkt, size_t len, size_t *l3, uint8_t *proto)
{
	if (len >= 20 && pkt[0] >> 4 == 4) {
		*l3 = (size_t)(pkt[0] & 0x0f) * 4;
		*proto = pkt[9];
		return *l3 >= 20 && *l3 <= len ? 4 : -1;
	}
	if (len >= 40 && pkt[0] >> 4 == 6) {
		*l3 = 40;
		*proto = pkt[6];
		return 6;
	}
	return -1;
}

static void
vnet_ip4_csum(uint8_t *pkt, size_t l3)
{
	wr16(pkt + 10, 0);
	wr16(pkt + 10, (uint16_t)~vnet_fold(vnet_sum(0, pkt, l3)));
}

/* A TCP super-packet: one flow's segments as one, headers once. */
static int
vnet_rx_gso(const struct vnet_hdr *h, uint8_t *pkt, size_t len)
{
	uint8_t gso = h->gso_type & (uint8_t)~VNET_GSO_ECN, proto;
	size_t l3, thl;
	int v;

	if ((v = vnet_ip(pkt, len, &l3, &proto)) == -1 ||
	    (gso == VNET_GSO_TCPV4 && v != 4) ||
	    (gso == VNET_GSO_TCPV6 && v != 6) ||
	    (gso != VNET_GSO_TCPV4 && gso != VNET_GSO_TCPV6))
		return -1;		/* UDP, unknown, or not the packet's */
	if (proto != VNET_PROTO_TCP || h->gso_size == 0 ||
	    h->hdr_len > len || !(h->flags & VNET_F_NEEDS_CSUM) ||
	    h->csum_start != l3 || h->csum_offset != VNET_TCP_CSUM ||
	    l3 + 20 > len)
		return -1;
	thl = (size_t)(pkt[l3 + 12] >> 4) * 4;
	if (thl < 20 || l3 + thl > len)
		return -1;
	if (v == 4) {
		if (len > 0xffff || (rd16(pkt + 6) & 0x3fff) != 0)
			return -1;	/* cannot be one datagram, a fragment */
		if (rd16(pkt + 2) != len) {
			wr16(pkt + 2, (uint16_t)len);
			vnet_ip4_csum(pkt, l3);
		}
	} else {
		if (len - 40 > 0xffff)
			return -1;
		wr16(pkt + 4, (uint16_t)(len - 40));
	}
	return 1;
}

int
vnet_rx(const struct vnet_hdr *h, uint8_t *pkt, size_t len)
{
	size_t l3, at;
	uint8_t proto;
	uint16_t sum;

	if ((h->flags & (uint8_t)~(VNET_F_NEEDS_CSUM | VNET_F_DATA_VALID)) != 0)
		return -1;
	if (h->gso_type != VNET_GSO_NONE)
		return vnet_rx_gso(h, pkt, len);
	if (!(h->flags & VNET_F_NEEDS_CSUM))
		return 0;
	at = (size_t)h->csum_start + h->csum_offset;
	if (vnet_ip(pkt, len, &l3, &proto) == -1 || h->csum_start < l3 ||
	    at + 2 > len)
		return -1;
	if (proto == VNET_PROTO_TCP && h->csum_start == l3)
		return 0;	/* trusted, as every TCP checksum from the TUN */
	/* UDP and the like: the field holds the pseudo-header's sum. */
	sum = (uint16_t)~vnet_fold(vnet_sum(0, pkt + h->csum_start,
	    len - h->csum_start));
	wr16(pkt + at, sum == 0 ? 0xffff : sum);
	return 0;
}

/* The UDP checksum of dgram (UDP header and payload) with the pseudo
 * header of IP packet ip, written into it. */
static void
vnet_udp_csum(const uint8_t *ip, int v, uint8_t *dgram, size_t dlen)
{
	uint32_t sum;
	uint16_t c;

	sum = v == 4 ? vnet_sum(0, ip + 12, 8) : vnet_sum(0, ip + 8, 32);
	sum += VNET_PROTO_UDP + (uint32_t)(dlen & 0xffff) +
	    (uint32_t)(dlen >> 16);
	wr16(dgram + 6, 0);
	c = (uint16_t)~vnet_fold(vnet_sum(sum, dgram, dlen));
	wr16(dgram + 6, c == 0 ? 0xffff : c);
}

int
vnet_rx_uso(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
    uint8_t *out, void (*emit)(void *, const uint8_t *, size_t), void *arg)
{
	size_t l3, hl, off, chunk;
	uint8_t proto;
	int v, n = 0;

	if ((h->flags & (uint8_t)~(VNET_F_NEEDS_CSUM | VNET_F_DATA_VALID)) !=
	    0 || h->gso_type != VNET_GSO_UDP_L4 ||
	    !(h->flags & VNET_F_NEEDS_CSUM) || h->gso_size == 0 ||
	    h->hdr_len > len ||
	    (v = vnet_ip(pkt, len, &l3, &proto)) == -1 ||
	    proto != VNET_PROTO_UDP || h->csum_start != l3 ||
	    h->csum_offset != 6 || l3 + 8 >= len ||
	    (v == 4 && (rd16(pkt + 6) & 0x3fff) != 0))
		return -1;
	hl = l3 + 8;
	for (off = hl; off < len; off += chunk) {
		chunk = len - off < h->gso_size ? len - off : h->gso_size;
		memcpy(out, pkt, hl);
		memcpy(out + hl, pkt + off, chunk);
		if (v == 4) {
			wr16(out + 2, (uint16_t)(hl + chunk));
			wr16(out + 4, (uint16_t)(rd16(pkt + 4) + n));
			vnet_ip4_csum(out, l3);
		} else
			wr16(out + 4, (uint16_t)(8 + chunk));
		wr16(out + l3 + 4, (uint16_t)(8 + chunk));
		vnet_udp_csum(out, v, out + l3, 8 + chunk);
		emit(arg, out, hl + chunk);
		n++;
	}
	return n;
}

int
vnet_tx(struct vnet_hdr *h, uint8_t *hdrs, size_t hdrs_len, size_t len,
    uint16_t mss)
{
	size_t l3, thl, tcplen;
	uint32_t sum;
	uint8_t proto;
	int v;

	memset(h, 0, sizeof(*h));
	if (hdrs_len > len)
		hdrs_len = len;
	if ((v = vnet_ip(hdrs, hdrs_len, &l3, &proto)) == -1 ||
	    proto != VNET_PROTO_TCP ||
	    (v == 4 && (rd16(hdrs + 6) & 0x3fff) != 0))
		return 0;	/* checksums complete: nothing to say */
	if (l3 + 20 > hdrs_len)
		return -1;
	thl = (size_t)(hdrs[l3 + 12] >> 4) * 4;
	if (thl < 20 || l3 + thl > hdrs_len)
		return -1;
	tcplen = len - l3;
	if (v == 4)
		sum = vnet_sum(0, hdrs + 12, 8);
	else
		sum = vnet_sum(0, hdrs + 8, 32);
	sum += VNET_PROTO_TCP + (uint32_t)(tcplen & 0xffff) +
	    (uint32_t)(tcplen >> 16);
	wr16(hdrs + l3 + VNET_TCP_CSUM, vnet_fold(sum));
	h->flags = VNET_F_NEEDS_CSUM;
	h->csum_start = (uint16_t)l3;
	h->csum_offset = VNET_TCP_CSUM;
	if (mss == 0 || tcplen - thl <= mss)
		return 0;
	h->gso_type = v == 4 ? VNET_GSO_TCPV4 : VNET_GSO_TCPV6;
	h->gso_size = mss;
	h->hdr_len = (uint16_t)(l3 + thl);
	return 1;
}
