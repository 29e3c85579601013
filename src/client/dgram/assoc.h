/*
 * Client datagram associations: the part of UDP and ICMP echo that does
 * not depend on the kind.  An association is one app endpoint -- a local
 * (address, port) for UDP, a local (address, echo id) for ICMP -- with one
 * way out that carries all its datagrams, to any destination (full cone);
 * what comes back is handed to the kind's deliver callback with its real
 * source.  The way out is the transport of client.protocol (assoc_int.h):
 *
 *   tunsplit  one TLS stream to the server (kind 2 or 3), frames (frame.h)
 *   trojan    one TLS stream, trojan UDP ASSOCIATE and packets; UDP only
 *   socks5    RFC 1928 UDP ASSOCIATE: a TCP control connection to the
 *             proxy, a UDP socket to its relay; UDP only
 *   direct    one unconnected UDP socket marked with client.mark (a ping
 *             socket for ICMP echo)
 *   block     none: datagrams are refused and counted
 *
 * Ownership: the env owns every association (hash table for lookup, LRU
 * list for eviction).  An association owns its way out, its queue of
 * datagrams toward it and its receive buffer.  Datagrams are queued by
 * assoc_send() and written out in the per-iteration pass; nothing is torn
 * down under a caller's feet.
 *
 * Bounds, whatever the transport: at most conf client.max_udp
 * associations (a new one evicts the one idle longest); per association
 * ASSOC_QUEUE_MAX bytes queued, ASSOC_QUEUE_TOTAL over all; beyond that
 * datagrams are dropped and counted -- UDP may drop, it must not buffer
 * without end.  After a failure (server or proxy unreachable, refused,
 * reset) the association stays for ASSOC_HOLD_MS and drops its datagrams,
 * so that an app sending fast does not make the client redial for every
 * datagram.
 */
#ifndef TUNSPLIT_ASSOC_H
#define TUNSPLIT_ASSOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/proto.h"

struct addr;
struct conf;
struct loop;
struct limit_mem;
struct limit_stats;
struct ssl_ctx_st;
struct assoc;
struct assoc_env;

#define ASSOC_QUEUE_MAX		(256 * 1024)
#define ASSOC_QUEUE_TOTAL	(32 * 1024 * 1024)
#define ASSOC_HOLD_MS		1000

/* Compared with memcmp: unused address bytes must be zero. */
struct assoc_key {
	uint8_t		 kind;		/* PROTO_KIND_UDP or PROTO_KIND_ICMP */
	uint8_t		 family;	/* AF_INET or AF_INET6 */
	uint16_t	 port;		/* UDP: the app's port; ICMP: echo id */
	uint8_t		 addr[16];	/* the app's address */
	uint8_t		 outbound;	/* index of its outbound (assoc_get) */
	uint8_t		 pad;		/* zero */
};

/* The reason an association fails for the client's own failure (a
 * malloc): counted apart, logged at warn. */
#define ASSOC_OOM	"out of memory"

struct assoc_stats {
	uint64_t	 active;	/* associations now (incl. holding) */
	uint64_t	 created;
	uint64_t	 expired;	/* idle timeout */
	uint64_t	 evicted;	/* for room, at max_udp */
	uint64_t	 failed;	/* server unreachable, refused, reset */
	uint64_t	 internal;	/* of failed: ASSOC_OOM */
	uint64_t	 dgrams_up, dgrams_down;
	uint64_t	 bytes_up, bytes_down;	/* payload */
	uint64_t	 drop_queue;	/* toward the server: queue full */
	uint64_t	 drop_hold;	/* association failed, holding down */
	uint64_t	 drop_down;	/* from the server, not deliverable */
	uint64_t	 drop_send;	/* the socket refused it (direct, socks5) */
	uint64_t	 drop_block;	/* protocol block */
	uint64_t	 drop_proto;	/* ICMP echo: the protocol has no ICMP */
	uint64_t	 drop_memory;	/* no new association: memory budget */
	uint64_t	 tun_errors;	/* TUN writes that failed */
};

/* What a kind does with the datagrams coming back. */
struct assoc_ops {
	/* One datagram from src for a's app.  0, or -1: dropped (counted
	 * by the env). */
	int	(*deliver)(void *arg, struct assoc *a,
		    const struct proto_dest *src, const uint8_t *data,
		    size_t len);
	/* Frees what the kind attached with assoc_set_ext (may be NULL). */
	void	(*ext_free)(void *ext);
	void	*arg;
};

struct assoc_cfg {
	struct loop		*loop;
	const struct conf	*conf;
	/* The generation's outbounds (outbound.h): each new association
	 * takes the one client_route() chooses for its first datagram. */
	struct outbounds	*obs;
	/* Writes one IP packet to the TUN; NULL: tsnetif_output_raw. */
	int			(*tun_write)(const uint8_t *pkt, size_t len);
	/* client.max_buffer_memory (the TCP flows' budget), or NULL: no new
	 * association while it is full (the datagram is dropped). */
	const struct limit_mem	*mem;
	struct limit_stats	*lst;
	/* Worker processes: this one's share of max_udp is 1/share of it
	 * (0 or 1: all). */
	unsigned		 share;
};

/* One live association as the control socket shows it. */
struct assoc_info {
	uint64_t		 id;
	const struct assoc_key	*key;
	const char		*state;	/* "connect" "tls" "socks" "relay"
					 * "hold" */
	uint64_t		 start_ms;	/* loop time */
	uint64_t		 up, down;	/* payload bytes */
	int			 fd;	/* outer socket, or -1 */
};

struct assoc_env *assoc_env_new(const struct assoc_cfg *cfg);
/* A reload's new generation: limits and timeouts of new and live
 * associations follow it (the protocol, mark and TUN were carried over
 * by the daemon).  NULL ok. */
struct outbounds;
void assoc_env_reconfigure(struct assoc_env *e, const struct conf *c,
    struct outbounds *obs);
void assoc_env_free(struct assoc_env *e);	/* closes all; accepts NULL */
void assoc_env_set_ops(struct assoc_env *e, uint8_t kind,
    const struct assoc_ops *ops);

/* What the final outbound lets through: whether echo requests can go
 * (only tunsplit and direct carry ICMP), whether every datagram is
 * refused (block). */
bool assoc_env_icmp(const struct assoc_env *e);
bool assoc_env_blocked(const struct assoc_env *e);

/* Why the last assoc_get() returned NULL. */
enum assoc_refused {
	ASSOC_REFUSED_NONE = 0,		/* a limit, a hold-down, memory */
	ASSOC_REFUSED_BLOCK,		/* its outbound is block */
	ASSOC_REFUSED_PROTO,		/* echo on an outbound without ICMP */
};
int  assoc_refusal(const struct assoc_env *e);

/* Finds the association of key toward dst's outbound (client_route), or
 * makes one whose request header names dst.  NULL: the datagram cannot go
 * (holding down after a failure, out of resources, outbound block, echo
 * where the outbound has no ICMP: assoc_refusal); counted. */
struct assoc *assoc_get(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst);
/* The same, the rules also seeing domain (NULL: none) when dst is an
 * address: the name a QUIC conversation's Initial named. */
struct assoc *assoc_get_named(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst, const char *domain);
/* The same; name_only: the rules see domain but not dst's address (a
 * DNS query asking for a name the rules send elsewhere than the
 * resolver's address would: it goes where the name's flows go). */
struct assoc *assoc_get_routed(struct assoc_env *e,
    const struct assoc_key *key, const struct proto_dest *dst,
    const char *domain, bool name_only);
/* Queues one datagram to dst.  short_lived: it is a DNS query (an
 * association that only ever sends those expires after dns_timeout).
 * 0, or -1 when dropped (counted). */
int  assoc_send(struct assoc *a, const struct proto_dest *dst,
    const uint8_t *data, size_t len, bool short_lived);

const struct assoc_key *assoc_key(const struct assoc *a);
uint64_t assoc_id(const struct assoc *a);
void *assoc_ext(const struct assoc *a);
void assoc_set_ext(struct assoc *a, void *ext);

/* The domain a datagram on the association named (client.sniff, QUIC
 * on UDP/443: quic_route.h), "" if none: its log lines show it. */
struct assoc_sniff {
	char			 domain[254];
};
struct assoc_sniff *assoc_sniff(struct assoc *a);

/* Shared by the kinds' deliver callbacks: a PKT_MAX scratch buffer to
 * build a packet in, the next IPv4 identification, and the TUN write
 * (fragmented to the TUN MTU, or to a smaller path MTU tsnetif_ptb6
 * learnt for an IPv6 destination).  0 or -1 (counted). */
uint8_t *assoc_pkt_buf(struct assoc_env *e);
uint16_t assoc_next_ipid(struct assoc_env *e);
int  assoc_tun_write(struct assoc_env *e, const uint8_t *pkt, size_t len);

const struct assoc_stats *assoc_stats(const struct assoc_env *e);
void assoc_foreach(struct assoc_env *e,
    void (*cb)(void *arg, const struct assoc_info *), void *arg);
/* "udp" or "icmp". */
const char *assoc_kind_str(uint8_t kind);

#endif
