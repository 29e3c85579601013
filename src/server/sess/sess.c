/*
 * Server sessions.
 *
 * A session walks a straight line of states:
 *
 *   HANDSHAKE  TLS handshake            \ both bounded by one deadline,
 *   HEADER     request header read      / handshake_timeout
 *   RESOLVE    a domain name being looked up (resolve.c; its timeout)
 *   CONNECT    target dial in progress    connect_timeout
 *   RELAY      bytes both ways            idle_timeout
 *
 * A request that is answered with an error status still goes through
 * RELAY, with no target: the status byte is flushed, the outer write side
 * is shut and client input is discarded until the client closes (bounded by
 * SESS_LINGER_MS), so the client reads the status before the EOF instead
 * of an RST caused by unread data.
 *
 * A trojan request (recognised by its first byte, a hex digit, where the
 * native header has its version) takes the same path, except that trojan
 * has no status byte: success is the relay starting, failure a close.
 *
 * Teardown has one path, sess_close(), which is idempotent and moves the
 * session to the dead list; the memory is freed at the end of the loop
 * iteration (sess_reap) because the current epoll batch may still hold its
 * events.
 *
 * This file keeps the session's life (handshake, teardown, readiness, the
 * relay, the cover site, timers); the request is read, authenticated and
 * routed in sess_req.c, a TCP target resolved, checked and dialed in
 * sess_dial.c (sess_int.h is what they share).
 */
#include "config.h"

#include "server/sess/sess.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/buf.h"
#include "conf/conf.h"
#include "server/cover.h"
#include "core/limit.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "wire/proto.h"
#include "server/relay.h"
#include "server/resolve.h"
#include "server/dgram/sess_dgram.h"
#include "server/sess/sess_int.h"
#include "core/sock.h"

#define SESS_LINGER_MS	5000	/* error status sent, client to close */
#define SESS_ANSWER_BUF	4096	/* an answer's buffers (not charged) */
/* OpenSSL's record buffer with read-ahead: 16 KiB, overhead, header. */
#define SESS_NGINX_READ_AHEAD	(16384 + 2048 + 5)

static void sess_on_outer(struct loop_fd *, uint32_t);
static void sess_relay(struct sess *, uint32_t, uint32_t);
static void sess_fallback_connected(struct sess *, int);
static void sess_budget(struct sess *);
static void sess_unreserve(struct sess *);
static void sess_on_memory(struct limit_waiter *);
static void sess_flow_done(struct sess *);

/* ---- teardown ---------------------------------------------------- */

static void
sess_log_summary(const struct sess *s, const char *reason)
{
	char			 peer[ADDR_STRLEN], target[RESOLVE_NAME_MAX + 16 +
				    ADDR_STRLEN] = "-", a[ADDR_STRLEN];
	enum log_level		 lvl = log_flow_level();	/* log.flows */

	if (strcmp(reason, SESS_OOM) == 0)
		lvl = LOG_LVL_WARN;
	else if (strcmp(reason, SESS_UNUSED) == 0 ||
	    strcmp(reason, SESS_BETWEEN) == 0)
		lvl = LOG_LVL_DEBUG;	/* one per warm connection retired */
	addr_ip_fmt(&s->peer, peer, sizeof(peer));
	if (s->fallback)
		snprintf(target, sizeof(target), "cover site");
	else if (s->name != NULL)
		snprintf(target, sizeof(target), "%s:%u%s%s", s->name,
		    s->name_port, s->has_target ? " via " : "",
		    s->has_target ? addr_ip_fmt(&s->target, a, sizeof(a)) : "");
	else if (s->has_target)
		addr_ip_fmt(&s->target, target, sizeof(target));
	log_at(lvl, "sess %llu: closed: %s -> %s user %s: up %llu down %llu "
	    "bytes, %llu ms: %s%s%s%s", s->id, peer, target,
	    s->has_user ? s->user : "-",
	    (unsigned long long)s->relay.bytes_to_fd,
	    (unsigned long long)s->relay.bytes_to_outer,
	    (unsigned long long)(loop_now(s->env->loop) - s->start_ms), reason,
	    s->err != 0 ? " (" : "", s->err != 0 ? strerror(s->err) : "",
	    s->err != 0 ? ")" : "");
}

void
sess_drop_target(struct sess *s, bool rst)
{
	if (s->target_fd == -1)
		return;
	loop_fd_del(s->env->loop, &s->target_lfd);
	if (rst)
		sock_close_rst(s->target_fd);
	else
		close(s->target_fd);
	s->target_fd = -1;
}

/* The budget a session's relay is charged to: cover relays have their
 * own (cover_buffer_memory), so that strangers never take the memory of
 * authenticated sessions. */
static struct limit_mem *
sess_mem(const struct sess *s)
{
	return s->fallback ? &s->env->lim->cover_mem : &s->env->lim->mem;
}

void
sess_preauth_end(struct sess *s)
{
	struct limit_server	*ls = s->env->lim;

	if (!s->lim_preauth)
		return;
	s->lim_preauth = false;
	s->env->preauth_ended++;
	outer_set_lean(s->outer, false);
	TAILQ_REMOVE(&s->env->preauth, s, preauth_entry);
	if (ls == NULL)
		return;
	ls->preauth--;
	if (s->lim_src != NULL)
		s->lim_src->preauth--;
}

void
sess_user_release(struct sess *s)
{
	struct limit_server	*ls = s->env->lim;

	if (ls == NULL || s->lim_user == NULL)
		return;
	s->lim_user->conns--;
	limit_tab_release(&ls->users, s->lim_user);
	s->lim_user = NULL;
}

/* Gives back every count the session holds (sess_close, sess_new). */
static void
sess_limits_release(struct sess *s)
{
	struct limit_server	*ls = s->env->lim;

	sess_preauth_end(s);
	if (ls == NULL)
		return;
	limit_mem_unwait(sess_mem(s), &s->lim_wait);
	sess_unreserve(s);
	if (s->lim_cover) {
		ls->cover--;
		if (s->lim_src != NULL)
			s->lim_src->cover--;
		s->lim_cover = false;
	}
	if (s->lim_udp) {
		ls->udp--;
		if (s->lim_user != NULL)
			s->lim_user->udp--;
		s->lim_udp = false;
	}
	sess_user_release(s);
	if (s->lim_src != NULL) {
		s->lim_src->conns--;
		limit_tab_release(&ls->sources, s->lim_src);
		s->lim_src = NULL;
	}
}

void
sess_close(struct sess *s, const char *reason, int rst)
{
	struct sess_env	*env = s->env;

	if (s->state == SESS_CLOSED)
		return;
	s->state = SESS_CLOSED;
	loop_timer_cancel(env->loop, &s->timer);
	resolve_cancel(s->rq);		/* its callback must never run */
	s->rq = NULL;
	if (s->dg != NULL) {
		sess_dgram_stop(s->dg);
		s->relay.bytes_to_fd = sess_dgram_stats(s->dg)->bytes_up;
		s->relay.bytes_to_outer = sess_dgram_stats(s->dg)->bytes_down;
	}
	loop_fd_del(env->loop, &s->outer_lfd);
	if (rst & SESS_RST_OUTER)
		outer_abort(s->outer);
	else
		outer_free(s->outer);
	s->outer = NULL;
	sess_drop_target(s, (rst & SESS_RST_TARGET) != 0);
	relay_free(&s->relay);
	buf_free(&s->hdr);
	sess_limits_release(s);
	sess_log_summary(s, reason);
	env->stats.bytes_up += s->relay.bytes_to_fd;
	env->stats.bytes_down += s->relay.bytes_to_outer;
	if (strcmp(reason, SESS_UNUSED) == 0)
		env->stats.unused++;
	else if (!s->rejected && strcmp(reason, "done") != 0 &&
	    strcmp(reason, SESS_BETWEEN) != 0) {
		env->stats.failed++;
		if (strcmp(reason, SESS_OOM) == 0)
			env->stats.internal++;
		stats_reason_add(&env->stats.failures, reason);
	}

	LIST_REMOVE(s, entry);
	LIST_INSERT_HEAD(&env->dead, s, entry);
	env->nlive--;
}

void
sess_end(struct sess *s, const char *fallback_reason, int err, int rst)
{
	if (s->reason == NULL) {
		s->reason = fallback_reason;
		s->err = err;
	}
	sess_close(s, s->reason, rst);
}

/*
 * The client failed authentication, or sent a malformed or incomplete
 * header, or nothing, before the deadline.  With a cover site, everything
 * it sent (still in s->hdr) and everything it sends next is relayed there,
 * and the cover site's answers come back (sess_fallback): a prober sees an
 * ordinary website, never a close that only this server would make.
 * Without one the connection is closed, as before.
 */
static void sess_fallback(struct sess *, const char *);

void
sess_reject(struct sess *s, const char *reason)
{
	struct sess_env	*env = s->env;
	char		 peer[ADDR_STRLEN];

	if (s->outer != NULL && outer_flows(s->outer) > 0) {
		sess_reuse_error(s, reason);
		return;
	}
	s->rejected = true;
	sess_preauth_end(s);
	stats_reason_add(&env->stats.rejects, reason);
	addr_ip_fmt(&s->peer, peer, sizeof(peer));
	if (!cover_enabled(env->cover)) {
		log_info("sess %llu: rejected %s: %s", s->id, peer, reason);
		sess_close(s, reason, 0);
		return;
	}
	env->stats.fallback++;
	log_info("sess %llu: rejected %s: %s: relayed to the cover site %s "
	    "(%llu so far)", s->id, peer, reason, cover_name(env->cover),
	    (unsigned long long)env->stats.fallback);
	sess_fallback(s, reason);
}

void
sess_reuse_error(struct sess *s, const char *reason)
{
	char	 peer[ADDR_STRLEN];

	s->env->stats.reuse_errors++;
	log_info("sess %llu: %s: reused connection: %s: closed", s->id,
	    addr_ip_fmt(&s->peer, peer, sizeof(peer)), reason);
	sess_close(s, reason, SESS_RST_OUTER | SESS_RST_TARGET);
}

static void
sess_silent(struct sess *s)
{
	char	 peer[ADDR_STRLEN];

	if (outer_flows(s->outer) > 0) {	/* offered, not taken */
		(void)outer_shutdown_write(s->outer);
		sess_close(s, SESS_BETWEEN, 0);
		return;
	}

	s->rejected = true;
	stats_reason_add(&s->env->stats.rejects, "header timeout");
	log_info("sess %llu: rejected %s: header timeout: closed", s->id,
	    addr_ip_fmt(&s->peer, peer, sizeof(peer)));
	(void)outer_shutdown_write(s->outer);	/* best effort */
	sess_close(s, "header timeout", 0);
}

/* ---- readiness --------------------------------------------------- */

static void
sess_watch_relay(struct sess *s, uint32_t oev, uint32_t tev)
{
	struct loop	*l = s->env->loop;

	if (loop_fd_watch(l, &s->outer_lfd, outer_fd(s->outer),
	    &s->outer_parked, relay_outer_events(&s->relay), oev,
	    sess_on_outer) == -1)
		goto fail;
	if (s->target_fd != -1 && loop_fd_watch(l, &s->target_lfd,
	    s->target_fd, &s->target_parked, relay_fd_events(&s->relay), tev,
	    sess_on_target) == -1)
		goto fail;
	return;
fail:
	sess_end(s, "epoll", errno, 0);
}

void
sess_watch_outer(struct sess *s)
{
	uint32_t	 ev = outer_events(s->outer);

	if (loop_fd_mod(s->env->loop, &s->outer_lfd, ev != 0 ? ev : EPOLLIN)
	    == -1)
		sess_end(s, "epoll", errno, 0);
}

void
sess_timer_set(struct sess *s, unsigned ms)
{
	if (ms == 0)
		loop_timer_cancel(s->env->loop, &s->timer);
	else
		loop_timer_set(s->env->loop, &s->timer, ms);
}

/* ---- the relay --------------------------------------------------- */

/*
 * Every relay starts here: to the target (its status byte queued first),
 * to the cover site, or to no one (an answer: s->answer_only, target_fd
 * -1).  A relay with a far end is charged to the memory budget in place
 * of its reservation; an answer's small buffers are not.  ms is the
 * state's deadline: the idle timeout, or an answer's linger.
 */
static void
sess_start_relay(struct sess *s, unsigned ms)
{
	relay_start(&s->relay, s->outer, s->answer_only ? -1 : s->target_fd);
	if (!s->answer_only)
		sess_budget(s);
	s->state = SESS_RELAY;
	s->last_io_ms = loop_now(s->env->loop);
	sess_timer_set(s, ms);
	sess_relay(s, 0, 0);
}

/* ---- answers ----------------------------------------------------- */

/*
 * Answers the request with an error status and closes gracefully: the relay
 * runs without a target so the status byte is flushed, the outer write
 * side shut, and whatever the client still sends is discarded until it
 * closes.
 */
void
sess_answer(struct sess *s, uint8_t status, const char *reason, int err)
{
	s->reason = reason;
	s->err = err;
	/* A status byte out, and whatever the client still sends read and
	 * dropped: small buffers, not charged to the memory budget (an
	 * answer may be the refusal of a full one); early data is dropped. */
	sess_unreserve(s);
	relay_free(&s->relay);
	buf_init(&s->relay.to_fd, SESS_ANSWER_BUF);
	buf_init(&s->relay.to_outer, SESS_ANSWER_BUF);
	/* trojan has no status: the client learns of failure by the close. */
	if (!s->trojan && buf_append(&s->relay.to_outer, &status, 1) != 1) {
		sess_close(s, SESS_OOM, 0);
		return;
	}
	s->answer_only = true;
	log_debug("sess %llu: answered %s", s->id, proto_status_str(status));
	sess_start_relay(s, SESS_LINGER_MS);
}

/*
 * Whether this framed connection may carry a next flow: within
 * server.reuse and reuse_age, and not draining.
 */
static bool
sess_may_offer(const struct sess *s)
{
	const struct conf *c = s->env->conf;

	return outer_flows(s->outer) < c->server.reuse &&
	    outer_age_ms(s->outer) < c->server.reuse_age_ms &&
	    !s->env->no_offers;
}

static void
sess_connected(struct sess *s)
{
	const struct conf	*c = s->conf;
	uint8_t			 status = PROTO_OK |
				    (s->can_reuse ? PROTO_STATUS_REUSE : 0);
	unsigned		 ms = c->server.idle_timeout_ms;

	free(s->dial);		/* the name's other addresses: not needed */
	s->dial = NULL;
	s->ndial = s->idial = 0;

	/* to_outer is still empty: the status byte goes out first.  When
	 * the client sent its first bytes with the header (connect_mode
	 * fast, where nothing waits for the status alone), it waits for the
	 * target's first bytes and leaves in their record: an 18-byte
	 * record of its own, a round trip before the target could have
	 * answered, would mark the exchange.  Never for long. */
	if (!s->trojan) {
		if (buf_append(&s->relay.to_outer, &status, 1) != 1) {
			sess_close(s, SESS_OOM, SESS_RST_TARGET);
			return;
		}
		/* The offer rides behind our end marker (PROTOCOL.md, "The
		 * offer"): the client need not wait a round trip after its
		 * own for it, nor wake for it alone. */
		if (s->framed && sess_may_offer(s))
			outer_frame_offer(s->outer);
		if ((buf_len(&s->relay.to_fd) > 0 || s->early_framed) &&
		    ms > SESS_STATUS_HOLD_MS) {
			relay_hold_outer(&s->relay);
			ms = SESS_STATUS_HOLD_MS;
		}
	}
	sess_start_relay(s, ms);
}

static void
sess_connect_done(struct sess *s)
{
	int	 err;

	err = sock_connect_error(s->target_fd);
	if (err == EINPROGRESS || err == EALREADY)
		return;
	if (s->fallback) {
		sess_fallback_connected(s, err);
		return;
	}
	if (err != 0) {
		sess_dial_failed(s, err, "connect failed");
		return;
	}
	sess_connected(s);
}

/* ---- memory budget --------------------------------------------- */

/*
 * Memory for a relay about to start, taken when admitted so that what it
 * holds at its start (allocated before the budget is attached) never
 * takes the budget past its limit.  Refusals are counted and logged.
 */
bool
sess_reserve(struct sess *s, size_t n)
{
	struct limit_server	*ls = s->env->lim;
	struct limit_mem	*m;

	if (ls == NULL)
		return true;
	m = sess_mem(s);
	if (!limit_mem_admit(m, n)) {
		if (s->fallback)
			limit_refuse(&ls->st, LIMIT_COVER_MEMORY,
			    loop_now(s->env->loop), "cover relays",
			    "cover_buffer_memory: %zu of %zu bytes in use",
			    m->used, m->max);
		else
			limit_refuse(&ls->st, LIMIT_MEMORY,
			    loop_now(s->env->loop), "connections",
			    "max_buffer_memory: %zu of %zu bytes in use",
			    m->used, m->max);
		return false;
	}
	limit_mem_force(m, n);
	s->lim_reserved += n;
	return true;
}

static void
sess_unreserve(struct sess *s)
{
	if (s->lim_reserved == 0)
		return;
	limit_mem_give(sess_mem(s), s->lim_reserved);
	s->lim_reserved = 0;
}

/* Relay buffers are charged to the budget from the relay's start on, in
 * place of the reservation. */
static void
sess_budget(struct sess *s)
{
	if (s->env->lim == NULL)
		return;
	sess_unreserve(s);
	relay_set_budget(&s->relay, sess_mem(s));
}

/* Memory is free again: run the paused relay. */
static void
sess_on_memory(struct limit_waiter *w)
{
	struct sess	*s = container_of(w, struct sess, lim_wait);

	if (s->state == SESS_RELAY)
		sess_relay(s, 0, 0);
}

/* ---- cover site ------------------------------------------------- */

/*
 * The cover site's answer is the whole answer: no status byte, the bytes
 * read so far go first, and a client that already half-closed gets its
 * end of stream passed on once they are delivered.
 */
static void
sess_fallback_connected(struct sess *s, int err)
{
	const struct conf	*c = s->conf;

	if (err != 0) {
		s->env->stats.fallback_failed++;
		s->err = err;
		log_warnx("sess %llu: cover site %s: %s", s->id,
		    cover_name(s->env->cover), strerror(err));
		sess_close(s, "cover site unreachable", 0);
		return;
	}
	if (!s->plain)	/* TLS records end as nginx's; none: as read */
		(void)relay_frame_http(&s->relay);
	sess_start_relay(s, c->server.idle_timeout_ms);
}

/*
 * A stranger's connections to the cover site are bounded apart from the
 * users': at most max_cover_per_source from one source, and their relay
 * buffers in cover_buffer_memory.  Past either the connection is closed
 * (what a web server at its own limits does), counted and logged.
 */
static bool
sess_cover_admit(struct sess *s)
{
	struct limit_server	*ls = s->env->lim;
	const struct conf	*c = s->conf;
	char			 peer[ADDR_STRLEN];

	if (ls == NULL)
		return true;
	/* Taken, not compared: the workers share the source's count. */
	if (s->lim_src != NULL && !limit_count_take(&s->lim_src->cover,
	    c->server.max_cover_per_source)) {
		limit_refuse(&ls->st, LIMIT_COVER_SOURCE,
		    loop_now(s->env->loop), "cover relays",
		    "source %s: max_cover_per_source %u reached",
		    addr_ip_fmt(&s->peer, peer, sizeof(peer)),
		    c->server.max_cover_per_source);
		sess_close(s, "limit: max_cover_per_source", 0);
		return false;
	}
	s->lim_cover = true;	/* sess_close gives the count back */
	ls->cover++;
	if (!sess_reserve(s, RELAY_BUF_SIZE)) {
		sess_close(s, "limit: cover_buffer_memory", 0);
		return false;
	}
	return true;
}

static void
sess_fallback(struct sess *s, const char *reason)
{
	struct loop	*l = s->env->loop;
	size_t		 n = buf_len(&s->hdr);
	int		 fd;

	s->reason = reason;
	s->fallback = true;
	s->relay.quiet = true;
	if (!sess_cover_admit(s))
		return;
	if (buf_append(&s->relay.to_fd, buf_head(&s->hdr), n) != n) {
		sess_close(s, SESS_OOM, 0);
		return;
	}
	buf_free(&s->hdr);
	fd = s->plain ? cover_dial_plain(s->env->cover) :
	    cover_dial(s->env->cover);
	if (fd == -1) {
		sess_fallback_connected(s, errno);
		return;
	}
	s->target_fd = fd;
	if (loop_fd_add(l, &s->target_lfd, fd, EPOLLOUT, sess_on_target) == -1) {
		s->err = errno;
		sess_close(s, "epoll", 0);
		return;
	}
	if (loop_fd_mod(l, &s->outer_lfd, 0) == -1) {
		s->err = errno;
		sess_close(s, "epoll", 0);
		return;
	}
	s->state = SESS_CONNECT;
	sess_timer_set(s, s->conf->server.connect_timeout_ms);
}

/*
 * nginx decides on the first byte whether a connection speaks TLS (0x16,
 * or the high bit of an SSLv2 hello) or plain HTTP, which it answers with
 * its 400 page for plain HTTP on an HTTPS port.  With fallback_plain the
 * same bytes go raw to a server that answers them as nginx would.  0: go
 * on with the handshake, 1: handed over (or waiting for a byte).
 */
static int
sess_peek(struct sess *s)
{
	uint8_t	 b;
	ssize_t	 n;

	if (s->peeked || !cover_has_plain(s->env->cover))
		return 0;
	n = recv(outer_fd(s->outer), &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return 1;	/* still watched for EPOLLIN */
	s->peeked = true;
	if (n != 1 || b == 0x16 || (b & 0x80) != 0)
		return 0;	/* the handshake sees the end or error too */
	if (outer_untls(s->outer) == -1) {
		s->err = errno;
		sess_close(s, "outer", 0);
		return 1;
	}
	s->plain = true;
	sess_reject(s, "not TLS");
	return 1;
}

/*
 * A failed handshake: nginx's OpenSSL reads ahead (up to a record buffer,
 * about 18 KiB, in one recv) and so has taken in what the prober sent when
 * it gives up, and its close is a FIN.  Ours reads lean before the
 * authentication (one record header at a time), so the rest would still
 * sit in the socket and turn the close into an RST: read it as nginx
 * would have, then close.
 */
static void
sess_drain(struct sess *s)
{
	uint8_t	 b[4096];
	size_t	 left = SESS_NGINX_READ_AHEAD;
	ssize_t	 n;

	while (left > 0 && (n = recv(outer_fd(s->outer), b, left < sizeof(b) ?
	    left : sizeof(b), MSG_DONTWAIT)) > 0)
		left -= (size_t)n;
}

static void
sess_handshake(struct sess *s)
{
	if (sess_peek(s) == 1)
		return;
	switch (outer_handshake(s->outer)) {
	case 1:
		stats_hist_add(&s->env->stats.handshake,
		    (loop_now(s->env->loop) - s->start_ms) * 1000);
		s->state = SESS_HEADER;
		/* What the handshake freed (its message buffer, the
		 * certificate's signature) goes back to the kernel once a
		 * burst of them is over, as after a burst of closes: an idle
		 * session keeps only its own state. */
		loop_trim_hint(s->env->loop);
		/* The header may already sit decrypted inside TLS, which
		 * produces no further fd event: read now. */
		sess_read_header(s);
		return;
	case 0:
		sess_watch_outer(s);
		return;
	default:
		sess_drain(s);
		sess_close(s, "tls handshake failed", 0);
		return;
	}
}

/* ---- reuse ------------------------------------------------------- */

/*
 * A framed flow ended cleanly: both end markers crossed, the target's
 * socket flushed.  The flow is logged and counted as a session's end
 * would be; the connection is then offered for a next flow (within
 * server.reuse and reuse_age) or closed.  Bytes the client sent after
 * its end marker, before any offer, are a protocol error.
 */
static void
sess_flow_done(struct sess *s)
{
	struct sess_env		*env = s->env;
	const struct conf	*c = env->conf;
	bool			 offered = outer_frame_offered(s->outer);
	uint8_t			 b;
	ssize_t			 n;

	sess_log_summary(s, "done");
	env->stats.bytes_up += s->relay.bytes_to_fd;
	env->stats.bytes_down += s->relay.bytes_to_outer;
	loop_timer_cancel(env->loop, &s->timer);
	sess_drop_target(s, false);
	s->target_parked = false;	/* the next target is a new fd */
	if (env->lim != NULL)
		limit_mem_unwait(sess_mem(s), &s->lim_wait);
	relay_free(&s->relay);
	relay_init(&s->relay, RELAY_BUF_SIZE);
	sess_unreserve(s);
	sess_user_release(s);
	conf_egress_unref(s->egress);
	s->egress = NULL;
	free(s->name);
	s->name = NULL;
	free(s->dial);
	s->dial = NULL;
	s->has_target = s->framed = s->early_framed = s->can_reuse = false;
	s->ndial = s->idial = 0;
	s->err = 0;
	/* Early bytes left behind the end marker: sent past the flow. */
	if (!outer_frame_idle(s->outer)) {
		sess_reuse_error(s, "data after flow end");
		return;
	}
	outer_frame_end(s->outer);
	if (s->outer_parked) {		/* the client hung up */
		sess_close(s, SESS_BETWEEN, 0);
		return;
	}
	/* Offered with our end marker, the next header may follow the
	 * client's at once (a drain since closes all the same); else
	 * nothing may come before the offer. */
	n = offered ? -1 : outer_read(s->outer, &b, 1);
	if (n > 0) {
		sess_reuse_error(s, "data after flow end");
		return;
	}
	if (!offered && (n == 0 || errno != EAGAIN)) {
		sess_close(s, SESS_BETWEEN, 0);
		return;
	}
	if (offered ? env->no_offers : !sess_may_offer(s)) {
		(void)outer_shutdown_write(s->outer);
		sess_close(s, SESS_BETWEEN, 0);
		return;
	}
	buf_init(&s->hdr, PROTO_REQ_MAX);
	env->stats.reuse_offered++;
	s->offer_left = offered ? 0 : 2;
	s->state = SESS_HEADER;
	s->start_ms = s->last_io_ms = loop_now(env->loop);
	s->last_bytes = 0;
	sess_timer_set(s, c->server.handshake_timeout_ms);
	sess_read_header(s);
}

/* ---- events ------------------------------------------------------ */

static void
sess_relay(struct sess *s, uint32_t oev, uint32_t tev)
{
	struct relay	*r = &s->relay;
	uint64_t	 bytes;

	if (oev & EPOLLERR) {
		sess_end(s, "client reset", sock_connect_error(outer_fd(s->outer)),
		    SESS_RST_TARGET);
		return;
	}
	if ((tev & EPOLLERR) && s->target_fd != -1) {
		sess_end(s, "target reset", sock_connect_error(s->target_fd),
		    SESS_RST_OUTER);
		return;
	}
	switch (relay_run(r, oev, tev)) {
	case RELAY_RUNNING:
		break;
	case RELAY_DONE:
		if (s->framed && !s->answer_only && s->reason == NULL) {
			sess_flow_done(s);
			return;
		}
		sess_end(s, "done", 0, 0);
		return;
	case RELAY_OUTER_FAILED:
		if (s->framed && r->err == EPROTO) {
			sess_reuse_error(s, "framing error");
			return;
		}
		sess_end(s, "client error", r->err, SESS_RST_TARGET);
		return;
	case RELAY_FD_FAILED:
		sess_end(s, "target error", r->err, SESS_RST_OUTER);
		return;
	}
	bytes = r->bytes_to_fd + r->bytes_to_outer;
	if (bytes != s->last_bytes) {
		s->last_bytes = bytes;
		s->last_io_ms = loop_now(s->env->loop);
	}
	if (s->env->lim != NULL && relay_starved(r))
		limit_mem_wait(sess_mem(s), &s->lim_wait);
	sess_watch_relay(s, oev, tev);
}

static void
sess_on_outer(struct loop_fd *lfd, uint32_t revents)
{
	struct sess	*s = container_of(lfd, struct sess, outer_lfd);

	switch (s->state) {
	case SESS_HANDSHAKE:
		sess_handshake(s);
		break;
	case SESS_HEADER:
		sess_read_header(s);
		break;
	case SESS_RESOLVE:
		sess_close(s, "client gone during resolve", 0);
		break;
	case SESS_CONNECT:
		/* Interest is 0 here: only an error or hang-up wakes us. */
		sess_close(s, "client gone during connect", SESS_RST_TARGET);
		break;
	case SESS_RELAY:
		sess_relay(s, revents, 0);
		break;
	case SESS_DGRAM:
		sess_dgram_on_outer(s->dg, revents);
		break;
	case SESS_CLOSED:
		break;
	}
}

void
sess_on_target(struct loop_fd *lfd, uint32_t revents)
{
	struct sess	*s = container_of(lfd, struct sess, target_lfd);

	if (s->state == SESS_CONNECT)
		sess_connect_done(s);
	else if (s->state == SESS_RELAY)
		sess_relay(s, 0, revents);
}

static void
sess_on_timer(struct loop_timer *t)
{
	struct sess	*s = container_of(t, struct sess, timer);
	unsigned	 idle = s->conf->server.idle_timeout_ms;
	uint64_t	 quiet;

	switch (s->state) {
	case SESS_HANDSHAKE:
		sess_close(s, "handshake timeout", 0);
		break;
	case SESS_HEADER:
		/* Silence after the handshake (bytes never wait: see
		 * sess_read_header): closed as nginx closes a connection
		 * that sent no request within client_header_timeout, with
		 * close_notify, not handed to the cover site, whose own
		 * timeout would start only now. */
		sess_silent(s);
		break;
	case SESS_CONNECT:
		if (s->fallback) {
			sess_fallback_connected(s, ETIMEDOUT);
			break;
		}
		sess_dial_failed(s, ETIMEDOUT, "connect timeout");
		break;
	case SESS_RESOLVE:	/* the resolver keeps the time */
		break;
	case SESS_RELAY:
		if (relay_outer_held(&s->relay)) {	/* the status, alone */
			relay_release_outer(&s->relay);
			sess_relay(s, 0, 0);
			if (s->state != SESS_RELAY)
				break;
		}
		if (s->answer_only) {
			sess_end(s, "linger timeout", 0, 0);
			break;
		}
		quiet = loop_now(s->env->loop) - s->last_io_ms;
		if (quiet >= idle)
			sess_close(s, "idle timeout", 0);
		else
			sess_timer_set(s, (unsigned)(idle - quiet));
		break;
	case SESS_DGRAM:
		if (sess_dgram_held(s->dg)) {	/* the status, alone */
			sess_dgram_release(s->dg);
			if (s->state != SESS_DGRAM)
				break;
		}
		quiet = loop_now(s->env->loop) - sess_dgram_last_io(s->dg);
		if (quiet >= idle)
			sess_close(s, "idle timeout", 0);
		else
			sess_timer_set(s, (unsigned)(idle - quiet));
		break;
	case SESS_CLOSED:
		break;
	}
}

/*
 * Who makes room at max_preauth for NEW: the oldest session of the source
 * holding the most unauthenticated ones -- a flood's, not a client's warm
 * pool connection that is older but one of two.  Never one of a source
 * holding fewer than NEW's own: with workers the sessions of the busiest
 * source may all be on the other worker, and a flood's newcomer must not
 * then close a client's warm connection here; it is refused instead.  A
 * walk over at most max_preauth sessions, only when the limit is reached.
 */
static struct sess *
sess_preauth_victim(struct sess_env *env, const struct sess *new)
{
	struct sess	*s, *best = NULL;
	unsigned	 n, most = 0, mine;

	mine = new->lim_src != NULL ? new->lim_src->preauth : 1;
	TAILQ_FOREACH(s, &env->preauth, preauth_entry) {
		n = s->lim_src != NULL ? s->lim_src->preauth : 1;
		if (n > most) {
			most = n;
			best = s;
		}
	}
	return most >= mine ? best : NULL;
}

/*
 * Before authentication a session holds a TLS object and at most a
 * request header: counted (max_preauth_per_source was judged at the
 * accept, with the source's count) and bounded as a whole by max_preauth.
 * At that limit an old unauthenticated session is closed to make room
 * (sess_preauth_victim), rather than the new one refused: strangers
 * holding many cannot keep a real client's quick handshake out, only cut
 * short their own slowest ones.  The source's count is handed over by
 * server_admit.
 */
static bool
sess_preauth_begin(struct sess *s)
{
	struct sess_env		*env = s->env;
	struct limit_server	*ls = env->lim;
	struct sess		*old;
	bool			 ok = ls == NULL;

	/* The count is shared by the workers: taken, not compared, and
	 * room is made among this worker's own sessions.  None of its own
	 * as busy as the new one's source to close: the new one is refused
	 * instead, so max_preauth holds. */
	while (!ok && !(ok = limit_count_take(&ls->preauth,
	    s->conf->server.max_preauth)) &&
	    (old = sess_preauth_victim(env, s)) != NULL) {
		limit_refuse(&ls->st, LIMIT_PREAUTH, loop_now(env->loop),
		    "unauthenticated connections", "max_preauth %u reached "
		    "(closing an old one of the busiest source)",
		    s->conf->server.max_preauth);
		sess_close(old, "limit: max_preauth", 0);
	}
	if (!ok) {
		limit_refuse(&ls->st, LIMIT_PREAUTH, loop_now(env->loop),
		    "unauthenticated connections", "max_preauth %u reached, "
		    "none of a source as busy to close",
		    s->conf->server.max_preauth);
		if (s->lim_src != NULL)
			s->lim_src->preauth--;	/* handed over, not begun */
		return false;
	}
	TAILQ_INSERT_TAIL(&env->preauth, s, preauth_entry);
	s->lim_preauth = true;
	outer_set_lean(s->outer, true);
	return true;
}

void
sess_new(struct sess_env *env, int fd, const struct addr *peer,
    struct limit_ent *src)
{
	const struct conf	*c = env->conf;
	struct sess		*s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		log_warn("session");
		close(fd);
		if (src != NULL) {
			src->conns--;
			src->preauth--;
			limit_tab_release(&env->lim->sources, src);
		}
		return;
	}
	if (c->server.congestion[0] != '\0')
		(void)sock_set_cc(fd, c->server.congestion);
	sock_set_nodelay(fd);
	s->env = env;
	/* The session's generation of the configuration, for its whole
	 * life: its timeouts and egress lists stay those it started with. */
	s->conf = conf_ref(c);
	s->lim_src = src;
	s->lim_idx = SIZE_MAX;
	s->lim_wait.fn = sess_on_memory;
	s->id = env->id_first + env->next_id++ * env->id_step;
	addr_pack(&s->peer, peer);
	s->target_fd = -1;
	s->start_ms = s->last_io_ms = loop_now(env->loop);
	buf_init(&s->hdr, PROTO_REQ_MAX);
	relay_init(&s->relay, RELAY_BUF_SIZE);
	loop_timer_init(&s->timer, sess_on_timer);
	/* outer_new owns fd from here on, even when it fails. */
	if ((s->outer = outer_new(env->ctx, fd, false, NULL)) == NULL)
		goto fail;
	if (loop_fd_add(env->loop, &s->outer_lfd, fd, EPOLLIN,
	    sess_on_outer) == -1) {
		log_warn("sess %llu: epoll", s->id);
		goto fail;
	}
	LIST_INSERT_HEAD(&env->live, s, entry);
	env->nlive++;
	s->state = SESS_HANDSHAKE;
	if (!sess_preauth_begin(s)) {
		sess_close(s, "limit: max_preauth", 0);
		return;
	}
	sess_timer_set(s, c->server.handshake_timeout_ms);
	return;
fail:
	outer_free(s->outer);
	if (s->lim_src != NULL)
		s->lim_src->preauth--;	/* handed over, not yet begun */
	sess_limits_release(s);
	conf_unref(s->conf);
	free(s);
}

void
sess_env_init(struct sess_env *e, const struct conf *c, struct loop *l,
    struct ssl_ctx_st *ctx, struct users *auth)
{
	*e = (struct sess_env){ .conf = c, .loop = l, .ctx = ctx, .auth = auth,
	    .id_first = 1, .id_step = 1 };
	LIST_INIT(&e->live);
	LIST_INIT(&e->dead);
	TAILQ_INIT(&e->preauth);
}

void
sess_close_all(struct sess_env *e, const char *reason)
{
	while (!LIST_EMPTY(&e->live))
		sess_close(LIST_FIRST(&e->live), reason, 0);
}

void
sess_stop_offers(struct sess_env *e)
{
	struct sess	*s, *next;

	e->no_offers = true;
	for (s = LIST_FIRST(&e->live); s != NULL; s = next) {
		next = LIST_NEXT(s, entry);
		if (s->state == SESS_HEADER && s->outer != NULL &&
		    outer_flows(s->outer) > 0 && buf_len(&s->hdr) == 0) {
			(void)outer_shutdown_write(s->outer);
			sess_close(s, SESS_BETWEEN, 0);
		}
	}
}

void
sess_reap(void *arg)
{
	struct sess_env	*e = arg;
	struct sess	*s;

	if (LIST_EMPTY(&e->dead))
		return;
	while ((s = LIST_FIRST(&e->dead)) != NULL) {
		LIST_REMOVE(s, entry);
		sess_dgram_free(s->dg);
		conf_egress_unref(s->egress);
		conf_unref(s->conf);
		free(s->name);
		free(s->dial);
		free(s);
	}
	loop_trim_hint(e->loop);
}

void
sess_foreach(struct sess_env *e,
    void (*cb)(void *arg, const struct sess_info *), void *arg)
{
	static const char *const states[] = {
		[SESS_HANDSHAKE] = "tls", [SESS_HEADER] = "header",
		[SESS_RESOLVE] = "resolve",
		[SESS_CONNECT] = "connect", [SESS_RELAY] = "relay",
		[SESS_DGRAM] = "datagram", [SESS_CLOSED] = "closed",
	};
	struct sess_info	 si;
	struct sess		*s;
	struct addr		 peer, target;

	LIST_FOREACH(s, &e->live, entry) {
		si.id = s->id;
		si.peer = addr_unpack(&s->peer, &peer);
		si.target = s->has_target ? addr_unpack(&s->target, &target) :
		    NULL;
		si.user = s->has_user ? s->user : NULL;
		si.state = s->answer_only ? "answer" : s->fallback ? "cover" :
		    states[s->state];
		si.start_ms = s->start_ms;
		si.up = s->relay.bytes_to_fd;
		si.down = s->relay.bytes_to_outer;
		si.fd = s->outer != NULL ? outer_fd(s->outer) : -1;
		cb(arg, &si);
	}
}
