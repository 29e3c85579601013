/*
 * Raw IPv4/IPv6 packets as the TUN carries them: parsing (bounds and
 * checksums checked, IPv6 extension headers walked), UDP and ICMP echo
 * parsing, building UDP and echo-reply packets with correct checksums, and
 * fragmenting packets longer than the TUN MTU.  Pure functions over byte
 * buffers: no I/O, no state.  lwIP never sees these packets.
 */
#ifndef TUNSPLIT_PKT_H
#define TUNSPLIT_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PKT_PROTO_ICMP		1
#define PKT_PROTO_TCP		6
#define PKT_PROTO_UDP		17
#define PKT_PROTO_ICMP6		58

/* Largest packet we build: IPv6 header + UDP header + 65527 bytes. */
#define PKT_MAX			(40 + 8 + 65527)
#define PKT_ECHO_HDR		8

/* One IP packet, parsed.  l4 points into the packet. */
struct pkt_ip {
	int		 family;	/* AF_INET or AF_INET6 */
	uint8_t		 src[16], dst[16];	/* 4 or 16 bytes used */
	uint8_t		 proto;		/* upper layer (or the fragment's) */
	const uint8_t	*l4;		/* upper-layer bytes (or fragment data) */
	size_t		 l4_len;
	/* A real fragment (not an IPv6 atomic fragment): l4 is the part at
	 * frag_off of the datagram; more fragments follow when frag_more. */
	bool		 frag;
	bool		 frag_more;
	size_t		 frag_off;
	uint32_t	 frag_id;
};

struct pkt_udp {
	uint16_t	 sport, dport;
	const uint8_t	*data;
	size_t		 len;
};

struct pkt_echo {
	uint16_t	 id, seq;
	const uint8_t	*data;
	size_t		 len;
};

/* Results of the parsers. */
#define PKT_OK		0
#define PKT_MALFORMED	(-1)	/* bounds, lengths, versions */
#define PKT_BADSUM	(-2)	/* checksum wrong (or missing over IPv6) */
#define PKT_OTHER	1	/* well-formed but not handled (pkt_echo_parse) */

/* A whole IPv4 or IPv6 packet of exactly len bytes. */
int pkt_parse(const uint8_t *p, size_t len, struct pkt_ip *ip);
/* Walks IPv6 extension headers from next header nh over p (a reassembled
 * fragmentable part) and sets ip->proto/l4/l4_len. */
int pkt_parse_ext6(struct pkt_ip *ip, uint8_t nh, const uint8_t *p,
    size_t len);
/* UDP over a complete (not fragment) ip->l4.  An IPv4 checksum of 0 means
 * none; over IPv6 it is a bad checksum. */
int pkt_udp_parse(const struct pkt_ip *ip, struct pkt_udp *u);
/* ICMP (IPv4) or ICMPv6 message in ip->l4: PKT_OK for an echo request,
 * PKT_OTHER for any other well-formed message. */
int pkt_echo_parse(const struct pkt_ip *ip, struct pkt_echo *e);
/* An ICMPv6 Packet Too Big in ip->l4: PKT_OK with the MTU it names and
 * the qlen bytes it quotes of our packet (its IPv6 header at least);
 * PKT_OTHER for any other message, PKT_BADSUM. */
int pkt_ptb6_parse(const struct pkt_ip *ip, unsigned *mtu,
    const uint8_t **quote, size_t *qlen);

/* Build a complete packet into out (PKT_MAX bytes).  Addresses are 4 or
 * 16 bytes by family; ipid is the IPv4 identification.  Return the packet
 * length, 0 when len is too long for the family. */
size_t pkt_build_udp(uint8_t *out, int family, const uint8_t *src,
    uint16_t sport, const uint8_t *dst, uint16_t dport, const void *data,
    size_t len, uint16_t ipid);
size_t pkt_build_echo_reply(uint8_t *out, int family, const uint8_t *src,
    const uint8_t *dst, uint16_t id, uint16_t seq, const void *data,
    size_t len, uint16_t ipid);
/* Destination unreachable (ICMP type 3, ICMPv6 type 1) with code, from
 * src to dst, quoting the start of the packet that caused it (cut so that
 * the whole fits in 576 bytes for IPv4, 1280 for IPv6).  Codes for "an
 * administrator forbids it": PKT_UNREACH_ADMIN4 / PKT_UNREACH_ADMIN6. */
#define PKT_UNREACH_ADMIN4	13
#define PKT_UNREACH_ADMIN6	1
size_t pkt_build_unreach(uint8_t *out, int family, const uint8_t *src,
    const uint8_t *dst, uint8_t code, const void *quote, size_t qlen,
    uint16_t ipid);

/* Cuts a packet built above into fragments of at most mtu bytes, written
 * one at a time to out (mtu bytes) and passed to emit, which returns 0 or
 * -1 (stop).  A packet that fits is passed as it is.  Returns 0 or -1. */
int pkt_fragment(const uint8_t *p, size_t len, unsigned mtu, uint32_t id,
    uint8_t *out, int (*emit)(void *, const uint8_t *, size_t), void *arg);

/* Internet checksum helpers: a running 64-bit sum of the bytes (in their
 * byte order), folded and inverted by pkt_csum_fold. */
uint64_t pkt_csum_add(uint64_t sum, const void *p, size_t len);
uint16_t pkt_csum_fold(uint64_t sum);

#endif
