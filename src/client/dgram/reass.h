/*
 * Reassembly of IPv4 and IPv6 fragments read from the TUN (non-TCP only:
 * lwIP reassembles TCP itself).  With a TUN MTU below 65 KB the kernel
 * fragments every larger UDP datagram, so datagrams up to 65,507 (IPv4) /
 * 65,527 (IPv6) bytes need this to get through at all.
 *
 * Memory is bounded: at most REASS_MAX datagrams in progress, each holding
 * one 64 KiB buffer; a new datagram beyond that evicts the oldest, and a
 * datagram not complete within REASS_TIMEOUT_MS is dropped.  Overlapping
 * or inconsistent fragments drop the whole datagram (RFC 5722; there is no
 * legitimate reason for a local host to send them).  Everything dropped is
 * counted.
 */
#ifndef TUNSPLIT_REASS_H
#define TUNSPLIT_REASS_H

#include <stddef.h>
#include <stdint.h>

#define REASS_MAX		32
#define REASS_TIMEOUT_MS	5000

struct pkt_ip;
struct reass;

struct reass_stats {
	uint64_t	 fragments;	/* accepted into a datagram */
	uint64_t	 completed;
	uint64_t	 timeouts;	/* datagrams dropped incomplete */
	uint64_t	 evicted;	/* datagrams dropped for room */
	uint64_t	 invalid;	/* datagrams dropped: overlap, bad length */
};

struct reass *reass_new(void);
void reass_free(struct reass *r);	/* accepts NULL */

/*
 * Adds the fragment in ip (ip->frag set).  Returns 1 when it completed its
 * datagram: ip->l4/l4_len then describe the whole upper-layer part (for
 * IPv6: the fragmentable part, which may start with more extension
 * headers; ip->proto is the next header), valid until the next call on r;
 * ip->frag is cleared.  Returns 0 when the fragment is held, -1 when it
 * was dropped (or made its datagram invalid).
 */
int  reass_add(struct reass *r, struct pkt_ip *ip, uint64_t now_ms);
/* Drops datagrams older than the timeout; returns how many remain. */
size_t reass_expire(struct reass *r, uint64_t now_ms);
const struct reass_stats *reass_stats(const struct reass *r);

#endif
