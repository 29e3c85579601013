/*
 * Server sessions: the request.  The first bytes after the TLS handshake
 * are a trojan request (a hex digit first) or the native header; either
 * is authenticated (a wrong one goes the way of anything not ours:
 * sess_reject), admitted against the limits, and routed: a datagram
 * session (sess_dgram.c) or a TCP target (sess_dial.c).
 */
#include "config.h"

#include "server/sess/sess.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "wire/auth.h"
#include "server/users.h"
#include "core/buf.h"
#include "conf/conf.h"
#include "core/limit.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "wire/proto.h"
#include "wire/proto_trojan.h"
#include "server/relay.h"
#include "server/dgram/sess_dgram.h"
#include "server/sess/sess_int.h"

/* ---- limits ---------------------------------------------------- */

/*
 * After authentication, before any work for the request: the user's
 * connections, datagram sessions (global and the user's), and room in the
 * memory budget.  A refusal is answered PROTO_ERR_LIMIT (trojan: closed),
 * counted and logged at most once per interval per kind.  -1: refused.
 */
static int
sess_admit(struct sess *s, uint8_t kind)
{
	struct sess_env		*env = s->env;
	struct limit_server	*ls = env->lim;
	const struct conf	*c = env->conf;
	uint64_t		 now = loop_now(env->loop);
	struct limit_ent	*u;
	unsigned		 max_conns, max_udp;
	bool			 dgram, room;

	if (ls == NULL || !s->has_user)
		return 0;
	dgram = kind == PROTO_KIND_UDP || kind == PROTO_KIND_ICMP;
	users_limits(c, s->trojan, s->lim_idx, s->user, &max_conns,
	    &max_udp);
	if ((u = limit_tab_get(&ls->users, s->user, strlen(s->user))) == NULL) {
		sess_answer(s, PROTO_ERR_GENERAL, SESS_OOM, ENOMEM);
		return -1;
	}
	/* A refused session holds no count while its answer lingers.  The
	 * counts are taken, not compared then added: the workers share
	 * them, and a limit of N stays N however many race for it. */
	if (!limit_count_take(&u->conns, max_conns)) {
		limit_tab_release(&ls->users, u);
		limit_refuse(&ls->st, LIMIT_USER_CONNS, now, "connections",
		    "user %s: max_conns %u reached", s->user, max_conns);
		sess_answer(s, PROTO_ERR_LIMIT, "limit: user max_conns", 0);
		return -1;
	}
	if (dgram && (c->server.max_udp == 0 ||
	    !limit_count_take(&ls->udp, c->server.max_udp))) {
		u->conns--;
		limit_tab_release(&ls->users, u);
		limit_refuse(&ls->st, LIMIT_UDP, now, "datagram sessions",
		    "max_udp %u reached", c->server.max_udp);
		sess_answer(s, PROTO_ERR_LIMIT, "limit: max_udp", 0);
		return -1;
	}
	if (dgram && !limit_count_take(&u->udp, max_udp)) {
		ls->udp--;
		u->conns--;
		limit_tab_release(&ls->users, u);
		limit_refuse(&ls->st, LIMIT_USER_UDP, now, "datagram sessions",
		    "user %s: max_udp %u reached", s->user, max_udp);
		sess_answer(s, PROTO_ERR_LIMIT, "limit: user max_udp", 0);
		return -1;
	}
	/* A stream reserves what its relay holds at the start (the status
	 * byte's buffer, early data); a datagram session needs room for
	 * what it holds at its start and charges it itself. */
	if (dgram)
		room = limit_mem_admit(&ls->mem, sess_dgram_start_size());
	else
		room = sess_reserve(s, RELAY_BUF_SIZE +
		    (s->relay.to_fd.data != NULL ? RELAY_BUF_SIZE : 0));
	if (!room) {
		if (dgram) {
			limit_refuse(&ls->st, LIMIT_MEMORY, now,
			    "datagram sessions", "max_buffer_memory: %zu of "
			    "%zu bytes in use", (size_t)ls->mem.used,
			    (size_t)ls->mem.max);
			ls->udp--;
			u->udp--;
		}
		u->conns--;
		limit_tab_release(&ls->users, u);
		sess_answer(s, PROTO_ERR_LIMIT, "limit: max_buffer_memory", 0);
		return -1;
	}
	s->lim_user = u;
	if (dgram)
		s->lim_udp = true;
	return 0;
}

/* ---- datagrams ------------------------------------------------- */

static void
sess_dgram_end(void *arg, const char *reason, int err)
{
	sess_end(arg, reason, err, 0);
}

/*
 * UDP associations and ICMP echo: sess_dgram relays the frames; the
 * session keeps the stream, the idle timer and the teardown.  The header's
 * destination is only the first datagram's (logged): each frame carries
 * its own, checked against the egress policy there.
 */
static void
sess_start_dgram(struct sess *s, const struct proto_req *req)
{
	struct sess_dgram_cfg	 dc;
	struct addr		 to;

	if (req->dest.atyp == PROTO_ATYP_IPV4 ||
	    req->dest.atyp == PROTO_ATYP_IPV6) {
		addr_from_raw(&to, req->dest.atyp == PROTO_ATYP_IPV4 ?
		    AF_INET : AF_INET6, req->dest.ip, req->dest.port);
		addr_pack(&s->target, &to);
		s->has_target = true;
	}
	memset(&dc, 0, sizeof(dc));
	dc.loop = s->env->loop;
	dc.conf = s->conf;
	dc.outer = s->outer;
	dc.outer_lfd = &s->outer_lfd;
	dc.kind = req->kind;
	dc.trojan = s->trojan;
	dc.resolver = s->env->resolver;
	dc.egress = s->egress;
	dc.id = s->id;
	dc.mem = s->env->lim != NULL ? &s->env->lim->mem : NULL;
	dc.end = sess_dgram_end;
	dc.arg = s;
	s->dg = sess_dgram_new(&dc, buf_head(&s->relay.to_fd),
	    buf_len(&s->relay.to_fd));
	if (s->dg == NULL) {
		sess_answer(s, PROTO_ERR_GENERAL, SESS_OOM, ENOMEM);
		return;
	}
	buf_free(&s->relay.to_fd);
	s->state = SESS_DGRAM;
	s->last_io_ms = loop_now(s->env->loop);
	sess_timer_set(s, sess_dgram_held(s->dg) &&
	    s->conf->server.idle_timeout_ms > SESS_STATUS_HOLD_MS ?
	    SESS_STATUS_HOLD_MS : s->conf->server.idle_timeout_ms);
	sess_dgram_on_outer(s->dg, 0);
}

/* ---- request ----------------------------------------------------- */

static void
sess_route(struct sess *s, const struct proto_req *req)
{
	if (sess_admit(s, req->kind) == -1)
		return;
	if (req->kind == PROTO_KIND_UDP || req->kind == PROTO_KIND_ICMP) {
		sess_start_dgram(s, req);
		return;
	}
	if (req->kind != PROTO_KIND_TCP) {
		sess_answer(s, PROTO_ERR_UNSUPPORTED, "unsupported kind", 0);
		return;
	}
	sess_dial_dest(s, &req->dest);
}

static void
sess_request(struct sess *s, const struct proto_req *req, size_t hlen)
{
	const struct conf	*c = s->conf;
	const uint8_t	*hdr = buf_head(&s->hdr);
	uint8_t		 bind[PROTO_BIND_LEN], ctx[PROTO_BIND_CTX_LEN];
	size_t		 early = buf_len(&s->hdr) - hlen, user;
	unsigned	 flows = outer_flows(s->outer);
	int		 rc;

	/* The front completes TLS 1.2 for looks (probers, trojan clients);
	 * a native session is TLS 1.3 only, as the client insists. */
	if (!outer_tls13(s->outer)) {
		sess_reject(s, "not TLS 1.3");
		return;
	}
	/* Only a version 3 request may follow another (an offer). */
	if (flows > 0 && req->version != PROTO_VERSION_3) {
		sess_reuse_error(s, "second request not version 3");
		return;
	}
	/* Version 2 headers are bound to this connection, version 3 ones
	 * to one flow of it (PROTOCOL.md). */
	proto_bind_context(flows, ctx);
	if ((req->version == PROTO_VERSION_3 ? outer_export_ctx(s->outer,
	    PROTO_BIND_LABEL, ctx, sizeof(ctx), bind, sizeof(bind)) :
	    outer_export(s->outer, PROTO_BIND_LABEL, bind, sizeof(bind))) < 0) {
		sess_reject(s, "no TLS exporter");
		return;
	}
	rc = users_check_name(s->env->auth, hdr, hlen, req, bind,
	    (uint64_t)time(NULL), &user, s->user, sizeof(s->user));
	sodium_memzero(bind, sizeof(bind));
	if (rc != USERS_OK) {
		sess_reject(s, users_result_str(rc));
		return;
	}
	sess_preauth_end(s);
	s->has_user = true;
	s->lim_idx = user;
	outer_trust(s->outer);
	/* auth's index is into conf's users (swapped together on reload;
	 * the name guards against a reload auth refused). */
	if (user < c->server.nusers &&
	    strcmp(c->server.users[user].name, s->user) == 0)
		s->egress = conf_egress_ref(c->server.users[user].egress);
	if (flows > 0)
		s->env->stats.reused++;
	s->can_reuse = req->can_reuse && c->server.reuse > 1;
	/* Bytes behind the header in the same read are the client's first
	 * payload (early data) for the target; framed (version 3), they
	 * are read through the outer stream. */
	if (req->version == PROTO_VERSION_3) {
		if (req->kind != PROTO_KIND_TCP) {
			buf_free(&s->hdr);
			loop_timer_cancel(s->env->loop, &s->timer);
			sess_answer(s, PROTO_ERR_UNSUPPORTED,
			    "unsupported kind", 0);
			return;
		}
		s->framed = true;
		s->early_framed = early > 0;
		if (outer_frame_begin(s->outer, 1, 0, hdr + hlen, early) < 0) {
			sess_close(s, SESS_OOM, 0);
			return;
		}
	} else if (buf_append(&s->relay.to_fd, hdr + hlen, early) != early) {
		sess_close(s, SESS_OOM, 0);
		return;
	}
	buf_free(&s->hdr);
	loop_timer_cancel(s->env->loop, &s->timer);
	sess_route(s, req);
}

/*
 * A trojan request: the password hash is checked against every configured
 * one in constant time; a wrong one is rejected exactly like a bad native
 * header (cover site when configured).  CONNECT dials its target; UDP
 * ASSOCIATE becomes a UDP association (sess_dgram) carrying trojan UDP
 * packets, each with its own destination -- the request's is ignored, as
 * trojan peers do.
 */
static void
sess_trojan_request(struct sess *s, const struct proto_trojan_req *tr,
    size_t hlen)
{
	const struct conf	*c = s->conf;
	const uint8_t		*hdr = buf_head(&s->hdr);
	size_t			 early = buf_len(&s->hdr) - hlen;
	struct proto_req	 req;
	int			 i;

	i = proto_trojan_match(tr->hex,
	    (const char (*)[PROTO_TROJAN_HEX_LEN + 1])c->server.trojan_hex,
	    c->server.ntrojan);
	if (i < 0) {
		sess_reject(s, "bad trojan password");
		return;
	}
	sess_preauth_end(s);
	s->trojan = true;
	s->has_user = true;
	outer_trust(s->outer);
	snprintf(s->user, sizeof(s->user), "trojan#%d", i);
	s->lim_idx = (size_t)i;
	s->egress = conf_egress_ref(c->server.trojan_egress[i]);
	if (buf_append(&s->relay.to_fd, hdr + hlen, early) != early) {
		sess_close(s, SESS_OOM, 0);
		return;
	}
	buf_free(&s->hdr);
	loop_timer_cancel(s->env->loop, &s->timer);
	memset(&req, 0, sizeof(req));
	req.kind = tr->cmd == PROTO_TROJAN_CMD_UDP ? PROTO_KIND_UDP :
	    PROTO_KIND_TCP;
	req.dest = tr->dest;
	sess_route(s, &req);
}

/* 1: a complete trojan request was handled; 0: more bytes needed; -1:
 * not trojan (the native parser decides). */
static int
sess_trojan_header(struct sess *s)
{
	struct proto_trojan_req	 tr;
	ssize_t			 hlen;

	if (s->conf->server.ntrojan == 0 ||
	    proto_trojan_detect(buf_head(&s->hdr), buf_len(&s->hdr)) != 1)
		return -1;
	hlen = proto_trojan_parse(buf_head(&s->hdr), buf_len(&s->hdr), &tr);
	if (hlen == -1) {
		sess_reject(s, "malformed trojan request");
		return 1;
	}
	if (hlen == 0)
		return 0;
	sess_trojan_request(s, &tr, (size_t)hlen);
	return 1;
}

void
sess_read_header(struct sess *s)
{
	struct proto_req	 req;
	uint8_t			*tail;
	size_t			 room;
	ssize_t			 n, hlen;

	while (s->offer_left > 0) {	/* a reused connection's offer */
		static const uint8_t offer[2] = { OUTER_FRAME_OFFER >> 8,
		    OUTER_FRAME_OFFER & 0xff };

		n = outer_write(s->outer, offer + 2 - s->offer_left,
		    s->offer_left);
		if (n == -1 && errno == EAGAIN) {
			sess_watch_outer(s);
			return;
		}
		if (n == -1) {
			s->err = errno;
			sess_close(s, "client error", 0);
			return;
		}
		s->offer_left -= (uint8_t)n;
	}
	for (;;) {
		/* The buffer holds PROTO_REQ_MAX: a complete header fits. */
		if ((tail = buf_tail(&s->hdr, &room)) == NULL) {
			sess_reject(s, "header too long");
			return;
		}
		n = outer_read(s->outer, tail, room);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* Clients write the whole header in one record, so
			 * everything readable and still no whole header is no
			 * header: to the cover site at once, as nginx would
			 * answer at once (no waiting for the rest). */
			if (buf_len(&s->hdr) > 0) {
				sess_reject(s, "incomplete header");
				return;
			}
			sess_watch_outer(s);
			return;
		}
		if (n == -1) {
			s->err = errno;
			sess_close(s, "read error before request", 0);
			return;
		}
		if (n == 0 && buf_len(&s->hdr) == 0) {
			/* close_notify before a single byte: an unused warm
			 * connection (ours, or a browser's preconnect).  A web
			 * server just closes too; not a probe. */
			sess_close(s, outer_flows(s->outer) > 0 ? SESS_BETWEEN :
			    SESS_UNUSED, 0);
			return;
		}
		if (n == 0) {
			s->relay.outer_eof = true;	/* for the fallback */
			sess_reject(s, "end of stream in header");
			return;
		}
		/* The request is judged by the generation of the
		 * configuration live when it arrives, not the one of the
		 * accept: a warm pool connection may wait across a reload
		 * (one that tightened the egress policy, say). */
		if (buf_len(&s->hdr) == 0 && s->conf != s->env->conf) {
			conf_unref(s->conf);
			s->conf = conf_ref(s->env->conf);
		}
		buf_commit(&s->hdr, (size_t)n);
		switch (outer_flows(s->outer) > 0 ? -1 :
		    sess_trojan_header(s)) {
		case 1:
			return;
		case 0:
			continue;
		default:
			break;
		}
		hlen = proto_req_parse(buf_head(&s->hdr), buf_len(&s->hdr), &req);
		if (hlen == -1) {
			sess_reject(s, "malformed header");
			return;
		}
		if (hlen > 0) {
			sess_request(s, &req, (size_t)hlen);
			return;
		}
	}
}
