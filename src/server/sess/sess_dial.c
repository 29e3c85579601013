/*
 * Server sessions: a TCP request's target.  A domain name is looked up
 * (resolve.c) and every address it resolves to is checked against the
 * egress policy with the user's own lists; the allowed ones are dialed in
 * the resolver's order, each with its share of one connect_timeout.  An
 * address is checked and dialed as it is.  Success is the relay starting
 * (sess.c), failure an answer with the status for it.
 */
#include "config.h"

#include "server/sess/sess.h"

#include <sys/epoll.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/addr.h"
#include "conf/conf.h"
#include "core/log.h"
#include "core/loop.h"
#include "wire/proto.h"
#include "server/resolve.h"
#include "server/egress.h"
#include "server/sess/sess_int.h"
#include "core/sock.h"

#define SESS_DIAL_MIN_MS	250	/* per address of a name, at least */

static void sess_dial(struct sess *);
static void sess_dial_next(struct sess *);

void
sess_dial_failed(struct sess *s, int err, const char *reason)
{
	char	a[ADDR_STRLEN];

	sess_drop_target(s, false);
	if (s->idial < s->ndial) {
		log_debug("sess %llu: %s: %s: %s, trying the next address",
		    s->id, s->name, addr_ip_fmt(&s->target, a, sizeof(a)),
		    strerror(err));
		sess_dial_next(s);
		return;
	}
	sess_answer(s, proto_status_from_errno(err), reason, err);
}

/* Each address of a name gets its share of what is left of the one
 * connect_timeout (at least SESS_DIAL_MIN_MS); an address gets it all. */
static unsigned
sess_dial_timeout(struct sess *s)
{
	uint64_t	now = loop_now(s->env->loop), left, ms;

	if (s->ndial == 0)
		return s->conf->server.connect_timeout_ms;
	left = s->dial_deadline_ms > now ? s->dial_deadline_ms - now : 0;
	ms = left / (uint64_t)(s->ndial - s->idial + 1);
	return ms < SESS_DIAL_MIN_MS ? SESS_DIAL_MIN_MS : (unsigned)ms;
}

static void
sess_dial_next(struct sess *s)
{
	struct addr	 to;

	resolve_ip_to_addr(&s->dial[s->idial++], s->name_port, &to);
	addr_pack(&s->target, &to);
	s->has_target = true;
	sess_dial(s);
}

static void
sess_dial(struct sess *s)
{
	const struct conf	*c = s->conf;
	struct loop		*l = s->env->loop;
	struct addr		 to;
	int			 fd, err;

	fd = sock_connect(addr_unpack(&s->target, &to), c->server.congestion,
	    c->server.mark);
	if (fd == -1) {
		sess_dial_failed(s, errno, "connect failed");
		return;
	}
	s->target_fd = fd;
	if (loop_fd_add(l, &s->target_lfd, fd, EPOLLOUT, sess_on_target) == -1) {
		err = errno;
		sess_drop_target(s, false);
		sess_answer(s, PROTO_ERR_GENERAL, "epoll", err);
		return;
	}
	/* The client's further bytes wait in TLS and the socket until the
	 * target is up; only a hang-up or reset is noticed meanwhile. */
	if (loop_fd_mod(l, &s->outer_lfd, 0) == -1) {
		sess_close(s, "epoll", SESS_RST_TARGET);
		return;
	}
	s->state = SESS_CONNECT;
	sess_timer_set(s, sess_dial_timeout(s));
}

/* ---- names ----------------------------------------------------- */

/*
 * A name's addresses: every one is checked against the egress policy and
 * only the allowed ones are dialed, in getaddrinfo's order.  A name that
 * resolves only to denied addresses is an egress denial like a denied
 * address; one that does not resolve is answered PROTO_ERR_RESOLVE.
 */
static void
sess_resolved(struct sess *s, const struct resolve_result *res)
{
	const struct conf	*c = s->conf;
	struct addr		 a;
	char			 first[ADDR_STRLEN];
	size_t			 i;

	if (res->status != RESOLVE_OK) {
		log_info("sess %llu: user %s: %s: %s", s->id, s->user, s->name,
		    resolve_status_str(res->status));
		sess_answer(s, PROTO_ERR_RESOLVE,
		    resolve_status_str(res->status), 0);
		return;
	}
	s->ndial = s->idial = 0;
	free(s->dial);
	if ((s->dial = calloc(res->n > 0 ? res->n : 1,
	    sizeof(*s->dial))) == NULL) {
		sess_close(s, SESS_OOM, 0);
		return;
	}
	for (i = 0; i < res->n; i++) {
		resolve_ip_to_addr(&res->ip[i], s->name_port, &a);
		if (i == 0)
			addr_fmt(&a, first, sizeof(first));
		if (egress_allowed_user(c, s->egress, &a))
			s->dial[s->ndial++] = res->ip[i];
	}
	log_debug("sess %llu: user %s -> %s:%u: %zu addresses, %u allowed%s",
	    s->id, s->user, s->name, s->name_port, res->n, s->ndial,
	    res->cached ? " (cached)" : "");
	if (s->ndial == 0) {
		log_info("sess %llu: user %s: %s resolves only to addresses "
		    "the egress policy denies (%s%s)", s->id, s->user, s->name,
		    first, res->n > 1 ? ", ..." : "");
		sess_answer(s, PROTO_ERR_DENIED, "egress denied", 0);
		return;
	}
	s->dial_deadline_ms = loop_now(s->env->loop) +
	    c->server.connect_timeout_ms;
	sess_dial_next(s);
}

static void
sess_on_resolved(void *arg, const struct resolve_result *res)
{
	struct sess	*s = arg;

	s->rq = NULL;
	sess_resolved(s, res);
}

static void
sess_resolve(struct sess *s, const struct proto_dest *dest)
{
	struct resolve_result	 res;

	s->name_port = dest->port;
	if ((s->name = strdup(dest->domain)) == NULL) {
		sess_answer(s, PROTO_ERR_GENERAL, SESS_OOM, ENOMEM);
		return;
	}
	/* Logged as it is from here on: no line breaks or escapes from a
	 * client (any such name is a bad host name anyway). */
	resolve_name_vis(s->name);
	if (s->env->resolver == NULL) {
		sess_answer(s, PROTO_ERR_UNSUPPORTED,
		    "unsupported address type", 0);
		return;
	}
	s->rq = resolve_start(s->env->resolver, s->name, &res,
	    sess_on_resolved, s);
	if (s->rq == NULL) {
		sess_resolved(s, &res);
		return;
	}
	/* As while connecting: only a hang-up or reset is noticed. */
	if (loop_fd_mod(s->env->loop, &s->outer_lfd, 0) == -1) {
		sess_close(s, "epoll", 0);
		return;
	}
	s->state = SESS_RESOLVE;
}

void
sess_dial_dest(struct sess *s, const struct proto_dest *dest)
{
	struct addr	 to;
	char		 target[ADDR_STRLEN];

	if (dest->atyp == PROTO_ATYP_DOMAIN) {
		sess_resolve(s, dest);
		return;
	}
	if (dest->atyp != PROTO_ATYP_IPV4 && dest->atyp != PROTO_ATYP_IPV6) {
		sess_answer(s, PROTO_ERR_UNSUPPORTED,
		    "unsupported address type", 0);
		return;
	}
	addr_from_raw(&to, dest->atyp == PROTO_ATYP_IPV4 ? AF_INET :
	    AF_INET6, dest->ip, dest->port);
	addr_pack(&s->target, &to);
	s->has_target = true;
	log_debug("sess %llu: user %s -> %s", s->id, s->user,
	    addr_fmt(&to, target, sizeof(target)));
	if (!egress_allowed_user(s->conf, s->egress, &to)) {
		sess_answer(s, PROTO_ERR_DENIED, "egress denied", 0);
		return;
	}
	sess_dial(s);
}
