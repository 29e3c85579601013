/*
 * The client's outbounds at run time: one struct outbound per entry of
 * client.outbounds (conf_outbound), with what its flows and associations
 * share -- the resolved server (or proxy) address, the TLS context and
 * warm pool of a tunsplit or trojan outbound, the user id its requests
 * carry -- and its counters.
 *
 * Lifetime: a generation's outbounds are built together (outbounds_new)
 * and replaced together on a reload.  Each flow and association holds a
 * reference to the outbound it started on (outbound_ref) and keeps it for
 * its whole life, as it keeps its configuration generation; the last
 * unref frees the TLS context.  A replaced outbound's warm pool is closed
 * at once (outbounds_free): only new flows would have used it.
 *
 * Counters are kept by name across reloads: a new outbound of the same
 * name as one of the set it replaces shares its counters, so that totals
 * do not fall back to zero on SIGHUP.
 */
#ifndef TUNSPLIT_OUTBOUND_H
#define TUNSPLIT_OUTBOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/dialgate.h"
#include "client/health.h"
#include "core/addr.h"
#include "core/stats.h"
#include "wire/proto.h"

struct conf;
struct conf_outbound;
struct loop;
struct pool;
struct ssl_ctx_st;

struct outbound_stats {
	unsigned	 refs;		/* outbounds sharing it (by name) */
	uint64_t	 opened;	/* flows and associations started */
	uint64_t	 failed;	/* of those, failed */
	uint64_t	 active;	/* live now */
	uint64_t	 bytes_up, bytes_down;	/* of ended flows, payload */
	struct stats_hist handshake;	/* outer connect start to ready */
	struct health	 health;	/* from its flows (health.h) */
	char		 selected[33];	/* select, fastest: the member chosen */
	uint64_t	 chosen_ms;	/* fastest: when */
	uint64_t	 flows;		/* balance strategy flow: the count */
};

struct outbound {
	unsigned			 refs;
	const struct conf		*conf;	/* a ref: co lives in it */
	const struct conf_outbound	*co;
	size_t				 index;	/* in conf's outbounds */
	struct ssl_ctx_st		*ssl_ctx;	/* tunsplit, trojan */
	bool				 ctx_borrowed;	/* not ours to free */
	bool				 has_server;	/* not direct, block */
	struct addr			 server;	/* or socks5 proxy */
	struct pool			*pool;		/* may be NULL */
	/* tunsplit, trojan: the outer connections in their connect and
	 * handshake, pool's and flows' (dialgate.h) */
	struct dialgate			 gate;
	/* The server answered a tagged version 2 request with
	 * PROTO_STATUS_REUSE: its flows speak version 3 (reusable). */
	bool				 v3;
	uint8_t				 user_id[PROTO_USER_ID_LEN];
	struct outbound_stats		*stats;
	struct outbound			**members;	/* a group's, in its set */
	size_t				 nmembers;
};

/*
 * The outbound of c->client.outbounds[i]: the server resolved (unless
 * given), the TLS context made (unless ctx is given, which stays the
 * caller's), no pool yet.  NULL (logged) when that fails.
 */
struct outbound *outbound_new(const struct conf *c, size_t i,
    struct ssl_ctx_st *ctx, const struct addr *server);
/* Starts its warm pool when it has one (tunsplit, trojan, pool > 0).
 * 0, or -1 (logged). */
int  outbound_pool_start(struct outbound *ob, struct loop *l);
struct outbound *outbound_ref(struct outbound *ob);	/* NULL ok */
void outbound_unref(struct outbound *ob);		/* NULL ok */
/* A flow's or association's start and end on ob, and what it moved. */
void outbound_open(struct outbound *ob);
void outbound_close(struct outbound *ob, bool failed, uint64_t up,
    uint64_t down);
/* Evidence for ob's health from a flow (health.h): it failed before the
 * server or proxy answered (why: how), or it was answered.  A change is
 * logged. */
void outbound_fail(struct outbound *ob, const char *why);
void outbound_ok(struct outbound *ob);
/* The same, the answer fb_us after the request (0: not measured): a
 * slow one is evidence too.  _refused: the answer says the server will
 * not serve us (down at once).  _retrans: a flow's outer connection
 * ended having sent segs segments, rtx of them again (TCP_INFO). */
void outbound_answer(struct outbound *ob, uint32_t fb_us);
void outbound_refused(struct outbound *ob, const char *why);
void outbound_retrans(struct outbound *ob, uint32_t segs, uint32_t rtx);
/* Whether ob refuses everything (protocol block, or a group none of
 * whose members is up). */
bool outbound_blocks(const struct outbound *ob);
/* The request a TCP stream to pd through ob's server (tunsplit, trojan)
 * opens with: the native header (version 2 bound to out, whose TLS
 * handshake is done; version 3, framing out, once the server speaks it
 * or on a reused out) or trojan's CONNECT.  Its length in buf, or -1. */
struct outer;
struct proto_dest;
ssize_t outbound_tcp_request(const struct outbound *ob, struct outer *out,
    const struct proto_dest *pd, uint8_t *buf, size_t len);
/* The server's status byte as a native stream reads it: an OK with the
 * reuse bit (the answer to a tagged version 2 request) teaches ob that
 * its server speaks version 3, and is an OK. */
uint8_t outbound_status(struct outbound *ob, const struct outer *out,
    uint8_t st);
const char *outbound_name(const struct outbound *ob);

/* One generation's outbounds, in the configuration's order. */
struct outbounds {
	const struct conf	*conf;	/* a ref */
	size_t			 n;
	struct outbound		**v;
};

/*
 * Every outbound of c, pools started on l.  prev: the set this one
 * replaces (counters are shared by name), or NULL.  NULL (logged) when
 * one cannot be made.
 */
struct outbounds *outbounds_new(struct loop *l, const struct conf *c,
    const struct outbounds *prev);
/* A set of the one outbound ob (its generation's only one, as the
 * single form makes), taking over the caller's reference; for tests and
 * harnesses that make ob with their own context or server.  NULL: no
 * memory (ob is let go). */
struct outbounds *outbounds_one(struct outbound *ob);
/* Closes the pools and drops the set's references.  NULL ok.  _free
 * once the loop has stopped; _retire while it runs (a reload): the pools'
 * memory then goes at the end of the iteration. */
void outbounds_free(struct outbounds *obs);
void outbounds_retire(struct outbounds *obs);

#endif
