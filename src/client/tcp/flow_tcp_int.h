/*
 * Private to the client TCP flow module: flow_tcp.c (the relay: lwIP
 * callbacks, the pumps, the per-iteration pass, teardown) and
 * flow_tcp_open.c (new flows: the SYN and accept side, dialling the
 * outbound and its handshakes).  See flow_tcp.h for the rules.
 */
#ifndef TUNSPLIT_FLOW_TCP_INT_H
#define TUNSPLIT_FLOW_TCP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "core/addr.h"
#include "client/dialgate.h"
#include "client/tcp/flow_tcp.h"
#include "core/limit.h"
#include "core/loop.h"

struct conf;
struct dialer_job;
struct flow_socks5;
struct outbound;
struct outer;
struct proto_dest;
struct pbuf;
struct tcp_pcb;

#define FLOW_REPLAY_MAX	FLOW_STAGE	/* kept for a retry (struct flow) */

enum flow_phase {
	FLOW_CONNECT,		/* outer TCP connect in progress */
	FLOW_HANDSHAKE,		/* the outbound's handshake (TLS, SOCKS5) */
	FLOW_RELAY,		/* header sent or queued; relaying */
	FLOW_SNIFF,		/* not dialled: waits for the app's first
				 * bytes to learn the domain (flow_tcp_sniff.c) */
};

struct flow;

/*
 * An outbound: how a flow reaches its target (flow_tcp_out.c has one per
 * client.protocol).  A flow goes dial -> TCP connect -> handshake ->
 * header -> relay; each step the outbound has no use for is NULL.
 */
struct flow_outbound {
	const char	*name;
	const char	*peer;			/* what it dials: "server" ... */
	const char	*handshake_state;	/* status while FLOW_HANDSHAKE */
	const char	*handshake_timeout;	/* its failure reason, or NULL:
						 * "connect timeout" */
	bool		 refuse;		/* block: every SYN gets an RST */
	bool		 tls;			/* dial makes a TLS stream whose
						 * connect and handshake a dialer
						 * thread may run (dialer.h) */
	/* The way out: f->out and f->fd set (f->pooled when the stream is
	 * a warm one, ready to relay), not yet watched.  0, or -1 with
	 * errno and nothing left open. */
	int	(*dial)(struct flow *f);
	/* After the TCP connect: 1 done, 0 again on the next event, -1
	 * failed with *why (f->internal set if it was ours). */
	int	(*handshake)(struct flow *f, const char **why);
	/* The request that goes before the app's bytes: its length in buf,
	 * 0 for none (the stream is the target's: connected), -1 failed.
	 * Sets f->status_ok itself when no status byte will come back. */
	ssize_t	(*header)(struct flow *f, uint8_t *buf, size_t len);
	/* The TCP connect failed with err: logs and ends the flow. */
	void	(*connect_failed)(struct flow *f, int err);
};

struct flow {
	uint64_t	 id;
	struct flow_env	*env;
	LIST_ENTRY(flow) entry;			/* env->all, or env->reap */
	SLIST_ENTRY(flow) dirty_entry;		/* env->dirty while f->dirty */
	LIST_ENTRY(flow) held_entry;		/* env->held while f->held */
	bool		 dirty;
	bool		 closing;

	enum flow_phase	 phase;
	const struct conf *conf;		/* its generation (a ref) */
	const struct flow_outbound *ob;		/* for the flow's whole life */
	struct outbound	*obr;			/* its outbound (a ref), NULL
						 * until client_route chose */
	int		 rule;			/* that chose it, -1: final */
	bool		 has_group;		/* the route answered a group */
	bool		 retried;		/* once, on the next member */
	bool		 failed;		/* flow_fail: counted */
	size_t		 group;			/* has_group: its index in
						 * env->obs */
	struct tcp_pcb	*pcb;			/* NULL once lwIP freed it */
	struct outer	*out;			/* NULL while dialling off the
						 * loop */
	struct dialer_job *dial;		/* that dial, FLOW_CONNECT */
	/* tunsplit, trojan (dialgate.h): holds one of the outbound's dial
	 * slots until its handshake is over; or waits for one (no out, no
	 * fd yet, FLOW_CONNECT, its connect_timeout running). */
	bool		 gated;
	bool		 gate_wait;
	int		 fd;
	struct dialgate_waiter gw;
	struct loop_fd	 lfd;
	struct loop_timer timer;
	struct loop_timer early;		/* header waits for first bytes */
	struct flow_socks5 *socks;		/* socks5, FLOW_HANDSHAKE only */
	bool		 pooled;		/* outer came from the warm pool */
	/* A pooled connection the server may close just as our request
	 * leaves (its idle end, a drain, a restart; a reused one carried
	 * flows before): until its status, what the app sent is kept in
	 * replay (at most FLOW_REPLAY_MAX bytes, else replay_lost), so that
	 * the flow can go once more on a fresh connection (flow_retry). */
	bool		 reused;
	bool		 fresh;			/* dial past the pool: a new
						 * connection */
	bool		 out_died;		/* the stream ended or failed
						 * before the status */
	bool		 replay_lost;
	uint8_t		*replay;
	size_t		 replay_len;
	size_t		 requeued;		/* replayed bytes at the queue's
						 * head: the app's window was
						 * opened for them already */
	/* connect_mode faithful: the app's SYN is held (no pcb yet) until the
	 * server reports the target connected; then it is fed to lwIP again.
	 * Set and cleared only by flow_held_add/flow_held_del. */
	bool		 held;
	uint8_t		*syn;
	size_t		 syn_len;
	struct addr_ip	 app;			/* the app's end, to match the pcb */
	struct addr_ip	 dst;
	char		*domain;		/* sniffed or fake-IP name, or
						 * NULL (flow_set_domain): most
						 * flows have none, and 254
						 * bytes each add up */
	const char	*domain_from;		/* "tls" "http", or NULL */

	/* app -> server: header bytes first, then queued pbufs.  The pbufs
	 * are linked through ->next by hand (see flow_queue_append); only
	 * ->len of each is meaningful. */
	uint8_t		*hdr;
	size_t		 hdr_len, hdr_off;
	struct pbuf	*inq, *inq_tail;
	size_t		 inq_len;
	size_t		 retry_len;		/* blocked write to repeat */

	bool		 app_fin;		/* app sent FIN */
	bool		 out_shut;		/* close_notify sent */
	bool		 out_eof;		/* server finished sending */
	bool		 app_shut;		/* FIN queued to the app */
	bool		 status_ok;		/* server connected the target */
	bool		 answered;		/* server (proxy) answered: health */
	bool		 down_blocked;		/* waiting for lwIP send room */
	bool		 write_blocked;		/* outer write wants an event */
	bool		 hup;			/* socket hung up: no more events */
	bool		 out_rd_idle;		/* read would block: wait for an
						 * event before the next */
	bool		 ack_pending;
	bool		 internal;		/* flow_fail_internal */
	bool		 domain_send;		/* fake-IP: the request names
						 * domain, not dst */
	bool		 by_name;		/* routed by domain alone: a
						 * DNS query over TCP */

	uint64_t	 start_ms, last_ms;
	uint64_t	 dial_us;		/* outer connect started */
	uint64_t	 req_us;		/* request queued: health */
	uint64_t	 up, down;

	/* server -> app: bytes read from the outer stream that lwIP could not
	 * take (tcp_write found no memory for a segment).  Kept here and
	 * written before anything more is read; retried when the app acks
	 * or on the retry timer.  At most FLOW_STAGE bytes. */
	uint8_t		*pend;
	size_t		 pend_len, pend_off;
	struct loop_timer retry;

	/* client.max_buffer_memory (env->mem): inq_len and pend_len are
	 * charged too. */
	size_t		 mem_down;		/* written to lwIP, not acked */
	size_t		 recved_owed;		/* window held back, for memory */
	struct limit_waiter mw;
};

/* flow_tcp_out.c */
const struct flow_outbound *flow_outbound(int protocol);
void flow_target(const struct flow *f, struct addr *dst);
/* What the request names: flow_target's address, or the domain. */
void flow_target_dest(const struct flow *f, struct proto_dest *pd);
/* fake-IP: a flow to a fake address takes the name it stands for.  0,
 * or -1: no name (evicted, never issued) or an outbound that cannot
 * reach a name -- refuse the flow. */
int  flow_fake_name(struct flow *f);

/* flow_tcp_open.c: a flow accepted while sniffing dials its outbound now
 * (connect_mode fast).  0, or -1 with the flow failed. */
int  flow_tcp_dial(struct flow *f);
/* f's place in its outbound's dial gate given up: out of the queue, its
 * slot back (dialgate.h).  Idempotent. */
void flow_ungate(struct flow *f);
/* A flow that failed (reason) on a group's member before anything
 * reached the app or left for the target (fast mode) is dialled once
 * more on the group's next member: 0, or -1 to fail it as usual. */
int  flow_retry(struct flow *f, const char *reason);

/* flow_tcp_sniff.c */
/* Whether a new TCP flow under c waits for its first bytes. */
bool flow_sniff_wanted(const struct conf *c);
/* Whether a flow to dst waits for its first bytes anyway: with fake-IP,
 * DNS over TCP, whose question names where it may go. */
bool flow_sniff_dns(const struct flow_env *env, const struct addr *dst);
/* Starts the wait of a flow just accepted (phase FLOW_SNIFF). */
void flow_sniff_start(struct flow *f);
/* FLOW_SNIFF work: reads the queued first bytes; once they name the
 * domain, say there is none, or the wait is over, dials. */
void flow_sniff_work(struct flow *f);

/* flow_held.c: held flows by their 4-tuple (dst, app). */
struct flow *flow_held_find(const struct flow_env *env,
    const struct addr *dst, const struct addr *app);
/* Lists f (f->dst, f->app set) and sets f->held.  0, or -1: no memory. */
int  flow_held_add(struct flow *f);
/* Unlists f and clears f->held; nothing if it is not held. */
void flow_held_del(struct flow *f);
/* The table, once no flow is held (flow_close_all). */
void flow_held_free(struct flow_env *env);

/* flow_tcp.c */
const char *flow_dst(const struct flow *f, char *buf, size_t len);
/* The flow's domain, "" for none. */
const char *flow_domain(const struct flow *f);
/* Sets it (a copy): 0, or -1 out of memory (the flow keeps none). */
int  flow_set_domain(struct flow *f, const char *name);
/* The single teardown: abort resets both sides, else both close.
 * Idempotent; the struct is freed at the end of the loop iteration. */
void flow_close(struct flow *f, bool abort, const char *reason);
void flow_fail(struct flow *f, const char *reason);	/* counted, abort */
/* What the app sent on a reused connection before its status goes back
 * to the head of the queue, for a new connection.  0, or -1: no memory. */
int  flow_replay_requeue(struct flow *f);
/* Our own failure (memory, lwIP), not the app's, server's or target's:
 * counted apart and logged at warn. */
void flow_fail_internal(struct flow *f, const char *reason);
void flow_mark_dirty(struct flow *f);
void flow_update_events(struct flow *f);
struct flow *flow_alloc(struct flow_env *env, const struct addr *dst);
/* Frees a flow flow_alloc made that never was listed. */
void flow_discard(struct flow *f);
void flow_attach_pcb(struct flow *f, struct tcp_pcb *pcb);

#endif
