/*
 * Client UDP, and the entry for every non-TCP packet the TUN delivers
 * (tsnetif_ops.other): packets are parsed here without lwIP, checked
 * (bounds, checksums; bad ones counted and dropped), IPv4/IPv6 fragments
 * reassembled (reass.h), then UDP goes to its association (assoc.h) and
 * ICMP echo requests to flow_icmp.  Replies are written to the TUN as
 * UDP packets from their real source: full cone, a datagram from a peer
 * the app never sent to still reaches it.
 *
 * DNS: with client.dns set, every UDP datagram to port 53 goes to that
 * resolver through the tunnel (or to an upstream, or is answered here);
 * answers are rewritten to come from the address the app asked (matched
 * by DNS transaction id), so no query leaks to whatever resolver the
 * system was configured with.  TCP connections to port 53 are answered
 * by the client (flow_dns.h), each query through flow_udp_dns_ask.
 */
#ifndef TUNSPLIT_FLOW_UDP_H
#define TUNSPLIT_FLOW_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct addr;
struct assoc_cfg;
struct assoc_env;
struct conf;
struct fakeip;
struct flow_udp;
struct reass_stats;

#define FLOW_UDP_UPSTREAMS	64	/* counted per upstream */

struct flow_udp_stats {
	uint64_t	 rx_malformed;	/* bounds, lengths, versions */
	uint64_t	 rx_badsum;	/* IP, UDP or ICMP checksum wrong */
	uint64_t	 dns_pinned;	/* queries sent to client.dns */
	/* Of those, the ones each of dns.upstreams took (by index; since
	 * the last reload). */
	uint64_t	 dns_upstream[FLOW_UDP_UPSTREAMS];
	/* Of those, answered SERVFAIL here (tcp, tls, https upstreams:
	 * refused, failed, timed out, malformed). */
	uint64_t	 dns_upstream_failed[FLOW_UDP_UPSTREAMS];
};

struct flow_udp *flow_udp_new(const struct assoc_cfg *cfg);
void flow_udp_free(struct flow_udp *u);		/* accepts NULL */

/* tsnetif_ops.other: one whole IP packet.  false: not ours (tsnetif
 * counts it as unsupported). */
bool flow_udp_input(struct flow_udp *u, const uint8_t *pkt, size_t len);

const struct flow_udp_stats *flow_udp_stats(const struct flow_udp *u);
/* Fragment reassembly counters (reass.h) and the associations. */
const struct reass_stats *flow_udp_reass_stats(const struct flow_udp *u);
/* The DNS answer cache's counters (dnsfwd.h); zero without one. */
struct dnsfwd_stats;
const struct dnsfwd_stats *flow_udp_dns_cache_stats(const struct flow_udp *u);
struct assoc_env *flow_udp_assoc(struct flow_udp *u);
/* A reload's new generation (see assoc_env_reconfigure).  NULL ok. */
struct outbounds;
void flow_udp_reconfigure(struct flow_udp *u, const struct conf *c,
    struct outbounds *obs);

/*
 * dns.mode fake-ip: A and AAAA queries to port 53 are answered from t
 * (other queries and excluded names go on as before); datagrams to a
 * fake address go to its name, and replies to them come back from that
 * fake address; one with no name is refused with an ICMP error.  t is
 * the client's, NULL for none.
 */
void flow_udp_set_fakeip(struct flow_udp *u, struct fakeip *t);
/* fn hears of every ICMPv6 Packet Too Big a router in front of an app
 * sent (after tsnetif_ptb6 took it): the kernel steers ICMP to worker 0
 * alone, and the flows to that app may be any worker's (workers.h). */
void flow_udp_on_ptb6(struct flow_udp *u, void (*fn)(void *arg,
    const uint8_t *quote, size_t qlen, unsigned mtu), void *arg);
/* The addresses of DNS reply msg learnt under its name (dnsfwd.h): an
 * upstream's answer, or worker 0's news of one. */
void flow_udp_names_learn(struct flow_udp *u, const uint8_t *msg,
    size_t len);

/*
 * A DNS query the app sent over TCP (flow_dns.h), answered as a datagram
 * to port 53 is -- fake-IP, the cache, the upstream its name's domains
 * choose, else client.dns's server, each asked over a stream through the
 * outbound its address takes (dnsup.h) -- except that a fake name's
 * queries the table does not answer get an empty answer (NOERROR) where
 * a datagram would go by the name.  done gets the answer (the query's id)
 * now or later, reply NULL when it failed.
 */
typedef void flow_udp_answer(void *arg, const uint8_t *query, size_t qlen,
    const uint8_t *reply, size_t len);
void flow_udp_dns_ask(struct flow_udp *u, const uint8_t *msg, size_t len,
    flow_udp_answer *done, void *arg);
/* For TCP flows to port 53: rewrites dst to client.dns when it is set.
 * Returns true when dst was rewritten. */
bool flow_udp_dns_pin(const struct conf *c, struct addr *dst);

#endif
