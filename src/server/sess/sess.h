/*
 * Server sessions: one accepted connection, from the TLS handshake through
 * authentication, the target dial and the relay to its teardown.  The
 * server (server.c) owns the listeners and the sess_env; this module owns
 * the sessions in it.
 */
#ifndef TUNSPLIT_SESS_H
#define TUNSPLIT_SESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/stats.h"

struct addr;
struct users;
struct conf;
struct cover;
struct limit_ent;
struct limit_server;
struct loop;
struct resolver;
struct sess;
struct ssl_ctx_st;

LIST_HEAD(sess_list, sess);
TAILQ_HEAD(sess_queue, sess);

/* Counters for the control socket and metrics. */
struct sess_stats {
	uint64_t		 refused;	/* closed at accept: max_conns,
						 * max_conns_per_source */
	uint64_t		 failed;	/* ended in an error */
	uint64_t		 unused;	/* closed by the client before
						 * a request: a warm pool
						 * connection, not failed */
	uint64_t		 waited;	/* accepted, then waited for
						 * a max_preauth_per_source
						 * turn (server.c) */
	uint64_t		 internal;	/* of failed: out of memory */
	uint64_t		 bytes_up;	/* to targets, closed sessions */
	uint64_t		 bytes_down;	/* to clients (status byte too) */
	struct stats_reasons	 failures;	/* why the failed ones ended */
	struct stats_reasons	 rejects;	/* not ours: auth, header */
	uint64_t		 fallback;	/* rejects relayed to the cover */
	uint64_t		 fallback_failed; /* cover site unreachable */
	struct stats_hist	 handshake;	/* accept to TLS done */
	uint64_t		 reuse_offered;	/* connections offered again */
	uint64_t		 reused;	/* requests on reused connections */
	uint64_t		 reuse_errors;	/* reused ones' protocol errors */
};

/* One live session as the control socket shows it. */
struct sess_info {
	unsigned long long	 id;
	const struct addr	*peer;
	const struct addr	*target;	/* NULL before the request */
	const char		*user;		/* NULL before authentication */
	const char		*state;
	uint64_t		 start_ms;	/* loop time */
	uint64_t		 up, down;	/* relayed so far */
	int			 fd;		/* client socket (TCP_INFO), or -1 */
};

struct sess_env {
	const struct conf	*conf;
	struct loop		*loop;
	struct ssl_ctx_st	*ctx;		/* server TLS context */
	struct users		*auth;
	struct cover		*cover;		/* NULL or disabled: close */
	struct resolver		*resolver;	/* domain names; NULL: refused */
	struct limit_server	*lim;		/* NULL: no limits (tests) */
	/* Owned by this module. */
	struct sess_list	 live;
	struct sess_list	 dead;		/* closed, freed by sess_reap */
	struct sess_queue	 preauth;	/* not authenticated, oldest
						 * first (max_preauth) */
	size_t			 nlive;
	uint64_t		 preauth_ended;	/* sessions that left pre-auth
						 * (server.c's waiting queue) */
	unsigned long long	 next_id;	/* sessions so far */
	unsigned		 id_first, id_step; /* ids: first + n * step,
						 * unique over the workers */
	struct sess_stats	 stats;
	bool			 no_offers;	/* sess_stop_offers */
};

void sess_env_init(struct sess_env *e, const struct conf *c, struct loop *l,
    struct ssl_ctx_st *ctx, struct users *auth);
/* Takes ownership of an accepted non-blocking fd, and of one count on
 * src (its source's entry in e->lim, or NULL). */
void sess_new(struct sess_env *e, int fd, const struct addr *peer,
    struct limit_ent *src);
void sess_close_all(struct sess_env *e, const char *reason);
/* Draining: no connection is offered for a next flow any more, and
 * those waiting for one close (quietly, between flows). */
void sess_stop_offers(struct sess_env *e);
/* Frees closed sessions; call at the end of a loop iteration, when no
 * event for them can still be pending. */
void sess_reap(void *env);
void sess_foreach(struct sess_env *e,
    void (*cb)(void *arg, const struct sess_info *), void *arg);

#endif
