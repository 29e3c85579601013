/*
 * Server sessions: one accepted connection, from the TLS handshake through
 * authentication, the target dial and the relay to its teardown.  The
 * server (server.c) owns the listeners and the sess_env; this module owns
 * the sessions in it.
 */
#ifndef TUNSPLIT_SESS_H
#define TUNSPLIT_SESS_H

#include <stddef.h>
#include <sys/queue.h>

struct addr;
struct auth;
struct conf;
struct loop;
struct sess;
struct ssl_ctx_st;

LIST_HEAD(sess_list, sess);

struct sess_env {
	const struct conf	*conf;
	struct loop		*loop;
	struct ssl_ctx_st	*ctx;		/* server TLS context */
	struct auth		*auth;
	/* Owned by this module. */
	struct sess_list	 live;
	struct sess_list	 dead;		/* closed, freed by sess_reap */
	size_t			 nlive;
	unsigned long long	 next_id;
};

void sess_env_init(struct sess_env *e, const struct conf *c, struct loop *l,
    struct ssl_ctx_st *ctx, struct auth *auth);
/* Takes ownership of an accepted non-blocking fd. */
void sess_new(struct sess_env *e, int fd, const struct addr *peer);
void sess_close_all(struct sess_env *e, const char *reason);
/* Frees closed sessions; call at the end of a loop iteration, when no
 * event for them can still be pending. */
void sess_reap(void *env);

#endif
