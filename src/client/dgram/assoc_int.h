/*
 * Inside the client's datagram associations: what assoc.c (the table,
 * bounds, timers, delivery) shares with the transports that carry an
 * association's datagrams out and back.  Private to assoc*.c; everyone
 * else uses assoc.h.
 *
 *   assoc_stream.c  tunsplit (native frames) and trojan (UDP ASSOCIATE),
 *                   one TLS stream to the server per association
 *   assoc_sock.c    socks5 (RFC 1928 UDP ASSOCIATE: a TCP control
 *                   connection and a UDP socket to the relay) and direct
 *                   (one unconnected, marked UDP socket)
 *
 * (block has no transport: assoc_get() refuses every datagram.)
 *
 * Ownership: assoc.c owns struct assoc and its queue; a transport owns the
 * fds and streams it opens in open() and must release all of them in
 * drop(), which assoc.c calls exactly once per opened way out (on failure
 * or close).  Transports never free an association: they report with
 * assoc_ready(), assoc_fail() and assoc_end(), and assoc.c decides.
 *
 * The queue: assoc_send() pushes, per datagram, one dq item made of
 * tp->encode_hdr()'s header and the payload, within the bounds of assoc.h.
 * A transport takes bytes (stream) or whole items (datagram sockets) from
 * the front and reports each with assoc_q_consume().
 */
#ifndef TUNSPLIT_ASSOC_INT_H
#define TUNSPLIT_ASSOC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "core/buf.h"
#include "core/dq.h"
#include "core/loop.h"
#include "wire/pkt.h"

#define ASSOC_KINDS		4	/* ops indexed by kind */
/* The longest header queued before a datagram (trojan's, with a domain). */
#define ASSOC_HDR_MAX		272
#define ASSOC_STAGE		16384	/* one TLS record */
/* A datagram socket's receive buffer: the largest UDP payload plus the
 * SOCKS UDP header before it. */
#define ASSOC_DGRAM_BUF		(65536 + 262)

enum assoc_phase {
	ASSOC_OPEN,		/* the transport sets up its way out */
	ASSOC_RELAY,		/* datagrams flow (ready: the peer agreed) */
	ASSOC_HOLD,		/* failed: no way out, datagrams dropped */
};

struct assoc;
struct outbound;
struct outbounds;

struct assoc_tp {
	const char	*name;		/* conf_proto_name() of it */
	bool		 icmp;		/* carries ICMP echo */
	bool		 sockets;	/* reads datagrams into env->dgram */
	/* Starts the way out (dial, socket).  On failure it calls
	 * assoc_fail() itself. */
	void	(*open)(struct assoc *a);
	/* The header queued before a datagram of plen bytes to dst: its
	 * length, or -1 (the datagram is dropped). */
	ssize_t	(*encode_hdr)(uint8_t *out, size_t outlen,
		    const struct proto_dest *dst, size_t plen);
	/* The per-iteration pass for a dirty association that is not
	 * holding: moves queued datagrams out and received ones in. */
	void	(*work)(struct assoc *a);
	/* Releases every fd and stream; abort: with a reset.  Called once
	 * for each open(). */
	void	(*drop)(struct assoc *a, bool abort);
	/* What the control socket shows while ASSOC_OPEN. */
	const char *(*state)(const struct assoc *a);
};

struct assoc {
	struct assoc_key	 key;
	struct assoc_env	*env;
	struct outbound		*ob;		/* its outbound (a ref) */
	const struct assoc_tp	*tp;		/* ob's transport */
	int			 rule;		/* that chose ob, -1: final */
	bool			 failed;	/* assoc_fail: counted */
	uint64_t		 id;
	LIST_ENTRY(assoc)	 hash;		/* its bucket's chain */
	TAILQ_ENTRY(assoc)	 lru;		/* most recently used first */
	SLIST_ENTRY(assoc)	 dirty_entry;	/* env->dirty while dirty */
	SLIST_ENTRY(assoc)	 reap_entry;	/* env->reap once closed */
	bool			 dirty;
	bool			 closing;
	bool			 ready;		/* the peer agreed: idle timer */
	bool			 short_lived;	/* only DNS so far */
	enum assoc_phase	 phase;
	const char		*reason;	/* why it failed */
	struct loop_timer	 timer;
	struct proto_dest	*first;		/* first destination, until used */

	/* The transport's: its main fd (stream or control connection, or
	 * the direct socket) and a second one (the socks5 UDP socket). */
	uint8_t			 step;		/* its own sub-state */
	bool			 write_blocked;
	bool			 hup;
	int			 fd, ufd;
	struct loop_fd		 lfd, ulfd;
	struct outer		*out;
	size_t			 retry_len;	/* blocked write to repeat */
	struct buf		 rx;

	/* Toward the way out: one item per datagram (and the request). */
	struct dq		 q;

	uint64_t		 start_ms, last_ms;
	uint64_t		 up_d, up_b, down_d, down_b, drops;
	void			*ext;
	struct assoc_sniff	 sniff;		/* flow_udp.c's */
};

TAILQ_HEAD(assoc_lru, assoc);
LIST_HEAD(assoc_chain, assoc);
SLIST_HEAD(assoc_work_list, assoc);

struct assoc_env {
	struct loop		*loop;
	const struct conf	*conf;
	struct outbounds	*obs;		/* the generation's (route.h) */
	int			 refusal;	/* of the last assoc_get */
	int			(*tun_write)(const uint8_t *, size_t);
	const struct limit_mem	*mem;		/* may be NULL */
	struct limit_stats	*lst;
	unsigned		 share;		/* assoc_cfg's */
	struct assoc_ops	 ops[ASSOC_KINDS];

	struct assoc_chain	*buckets;
	size_t			 nbuckets;	/* power of two */
	uint8_t			 hkey[16];	/* crypto_shorthash_KEYBYTES */
	struct assoc_lru	 lru;
	unsigned		 n;
	uint64_t		 next_id;
	size_t			 qtotal;
	struct assoc_work_list	 dirty;		/* work for this iteration */
	struct assoc_work_list	 reap;		/* closed, freed at its end */
	struct assoc_stats	 st;

	uint16_t		 ipid;
	uint32_t		 frag_id;
	uint8_t			*frag;		/* TUN MTU bytes */
	uint8_t			*dgram;		/* ASSOC_DGRAM_BUF, socket transports */
	uint8_t			 stage[ASSOC_STAGE];
	uint8_t			 pkt[PKT_MAX];
};

extern const struct assoc_tp assoc_tp_tunsplit, assoc_tp_trojan,
    assoc_tp_socks5, assoc_tp_direct;

/* For the transports (assoc.c). */
void assoc_fail(struct assoc *a, const char *reason);	/* hold down */
void assoc_end(struct assoc *a, const char *reason);	/* clean end */
void assoc_ready(struct assoc *a);
void assoc_touch(struct assoc *a);
void assoc_mark_dirty(struct assoc *a);
void assoc_q_consume(struct assoc *a, size_t n);
/* One datagram back from src: counted, handed to the kind. */
void assoc_deliver(struct assoc *a, const struct proto_dest *src,
    const uint8_t *data, size_t len);
const char *assoc_kstr(const struct assoc *a);	/* "udp" "icmp" */

#endif
