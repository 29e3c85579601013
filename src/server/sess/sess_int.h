/*
 * Private to the server session module: sess.c (the session's life: the
 * TLS handshake, teardown, readiness, the relay, the cover site, timers),
 * sess_req.c (the request: header and trojan parsing, authentication,
 * admission limits, where it goes) and sess_dial.c (a TCP target: name
 * resolution, egress checks with the user's own lists, connecting).  See
 * sess.h for the public side.
 */
#ifndef TUNSPLIT_SESS_INT_H
#define TUNSPLIT_SESS_INT_H

/* The longest an OK status waits for the target's first bytes (or the
 * first reply frame) to leave in their record, when the client sent its
 * own first bytes with the header: nothing waits for it alone then. */
#define SESS_STATUS_HOLD_MS	50

/* The reason a session ends for the server's own failure (a malloc), not
 * the client's or the target's: counted apart, logged at warn. */
#define SESS_OOM	"out of memory"
/* The reason a session ends when the client closes it before a single
 * byte of request: a warm pool connection retired unused (ours, or a
 * browser's preconnect).  Neither a failure nor worth an info line:
 * counted apart (sess_stats.unused), logged at debug. */
#define SESS_UNUSED	"closed unused"
/* A reused connection that ends between flows (not offered again, or
 * the client retired it): its flows were logged and counted already. */
#define SESS_BETWEEN	"closed between flows"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/addr.h"
#include "core/buf.h"
#include "conf/conf.h"
#include "core/limit.h"
#include "core/loop.h"
#include "server/relay.h"
#include "server/resolve.h"
#include "server/sess/sess.h"

struct outer;
struct proto_dest;
struct sess_dgram;

enum sess_state {
	SESS_HANDSHAKE,
	SESS_HEADER,
	SESS_RESOLVE,
	SESS_CONNECT,
	SESS_RELAY,
	SESS_DGRAM,	/* UDP association, ICMP echo: sess_dgram.c */
	SESS_CLOSED,
};

/* How sess_close() ends each side. */
#define SESS_RST_OUTER	0x1	/* RST to the client */
#define SESS_RST_TARGET	0x2	/* RST to the target */

struct sess {
	LIST_ENTRY(sess)	 entry;		/* env's live or dead list */
	struct sess_env		*env;
	unsigned long long	 id;
	enum sess_state		 state;

	struct outer		*outer;
	struct loop_fd		 outer_lfd;
	bool			 outer_parked;
	int			 target_fd;
	struct loop_fd		 target_lfd;
	bool			 target_parked;
	struct loop_timer	 timer;		/* the current state's deadline */

	struct buf		 hdr;		/* request header as read */
	struct relay		 relay;
	bool			 answer_only;	/* relay without a target */
	bool			 trojan;	/* trojan request: no status byte */
	/* Connection reuse (PROTOCOL.md "Reusable connections"). */
	bool			 framed;	/* this flow is version 3 */
	bool			 early_framed;	/* its early bytes wait in outer */
	bool			 can_reuse;	/* v2 tagged: answer with the bit */
	uint8_t			 offer_left;	/* offer bytes still to write */
	struct sess_dgram	*dg;		/* SESS_DGRAM; freed by sess_reap */

	struct addr_ip		 peer;
	struct addr_ip		 target;
	bool			 has_target;
	bool			 fallback;	/* target is the cover site */
	bool			 peeked;	/* first byte looked at */
	bool			 plain;		/* not TLS: fallback_plain */
	bool			 has_user;
	/* A copy: a reload may replace the user table under us. */
	char			 user[CONF_NAME_MAX];
	const struct conf	*conf;		/* its generation, a ref */
	struct conf_egress	*egress;	/* the user's own lists, a ref */

	/* A domain-name target: the lookup, then its allowed addresses,
	 * dialed in order within one connect_timeout. */
	char			*name;
	uint16_t		 name_port;
	struct resolve_query	*rq;
	uint8_t			 ndial, idial;
	/* Allocated while dialing a name only (most sessions carry an
	 * address and would keep 160 bytes idle); ndial of them. */
	struct resolve_ip	*dial;
	uint64_t		 dial_deadline_ms;

	uint64_t		 start_ms;
	uint64_t		 last_io_ms;
	uint64_t		 last_bytes;
	const char		*reason;	/* why it ends, once decided */
	bool			 rejected;	/* counted as a rejection */
	int			 err;		/* errno behind reason, or 0 */

	/* Limits (env->lim): counts held, released by sess_close. */
	struct limit_ent	*lim_src;	/* one conn on its source */
	bool			 lim_preauth;	/* one pre-authentication count
						 * (global, source), in
						 * env->preauth */
	TAILQ_ENTRY(sess)	 preauth_entry;
	bool			 lim_cover;	/* one cover count (global,
						 * source) */
	struct limit_ent	*lim_user;	/* one conn on its user */
	bool			 lim_udp;	/* one datagram session too */
	size_t			 lim_reserved;	/* memory held for the relay */
	size_t			 lim_idx;	/* users[] (trojan: passwords[])
						 * index, SIZE_MAX: none */
	struct limit_waiter	 lim_wait;	/* relay paused for memory */
};

/* sess.c */
/* The single teardown path; idempotent.  rst: SESS_RST_* flags. */
void sess_close(struct sess *s, const char *reason, int rst);
/* Closes with the reason decided earlier (an error answer), if any. */
void sess_end(struct sess *s, const char *fallback_reason, int err, int rst);
/* Not ours (authentication, header, timeout): to the cover site, or
 * closed without one. */
void sess_reject(struct sess *s, const char *reason);
/* Answers the request with an error status and closes gracefully. */
void sess_answer(struct sess *s, uint8_t status, const char *reason,
    int err);
void sess_drop_target(struct sess *s, bool rst);
void sess_watch_outer(struct sess *s);
void sess_timer_set(struct sess *s, unsigned ms);
bool sess_reserve(struct sess *s, size_t n);
/* Authenticated, or handed to the cover site: the pre-authentication
 * counts are given back (idempotent). */
void sess_preauth_end(struct sess *s);
void sess_on_target(struct loop_fd *lfd, uint32_t revents);

/* Gives back the user's connection count (a flow's end). */
void sess_user_release(struct sess *s);
/* A reused connection's protocol error: counted, the connection closed
 * (never the cover site: the peer has authenticated). */
void sess_reuse_error(struct sess *s, const char *reason);

/* sess_req.c: reads and acts on the request (SESS_HEADER). */
void sess_read_header(struct sess *s);

/* sess_dial.c */
/* A TCP request's target, an address or a name: resolved, checked
 * against the egress policy, dialed (SESS_CONNECT), or answered. */
void sess_dial_dest(struct sess *s, const struct proto_dest *dest);
/* The dial failed (err): a name's next allowed address, if any is left,
 * else the answer. */
void sess_dial_failed(struct sess *s, int err, const char *reason);

#endif
