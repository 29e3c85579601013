/*
 * Association transports over one TLS stream to the server (assoc_int.h):
 *
 *   tunsplit  the native request header (kind 2 UDP, 3 ICMP), then frames
 *             (frame.h) both ways; the server's status byte comes first.
 *   trojan    a trojan request with command 3 (UDP ASSOCIATE) naming the
 *             first destination (trojan servers ignore it), then trojan UDP
 *             packets both ways (proto_trojan.h); each names its own
 *             destination or source, so the association is full cone.
 *             There is no status: ready once TLS is up.
 *
 * Steps: TCP connect, TLS handshake, relay.  The request goes to the front
 * of the queue when TLS is up, so the datagrams queued meanwhile follow it
 * in the same records.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>

#include <sodium.h>

#include "client/dgram/assoc_int.h"
#include "client/outbound.h"
#include "wire/auth.h"
#include "conf/conf.h"
#include "wire/frame.h"
#include "core/log.h"
#include "tls/outer.h"
#include "wire/proto_trojan.h"
#include "core/sock.h"

enum { STEP_CONNECT, STEP_TLS, STEP_RELAY };

#define RX_NATIVE	(1 + FRAME_MAX)			/* status + a frame */
#define RX_TROJAN	PROTO_TROJAN_UDP_MAX

static bool
is_trojan(const struct assoc *a)
{
	return a->tp == &assoc_tp_trojan;
}

/* ---- toward the server ------------------------------------------------- */

static int
stream_pump_up(struct assoc *a)
{
	uint8_t	*stage = a->env->stage;
	size_t	 n;
	ssize_t	 w;

	a->write_blocked = false;
	while (dq_bytes(&a->q) > 0) {
		/* Several datagrams per TLS record; a blocked write is
		 * retried with the same bytes, as outer_write() requires. */
		n = dq_gather(&a->q, stage, a->retry_len ? a->retry_len :
		    ASSOC_STAGE);
		w = outer_write(a->out, stage, n);
		if (w < 0) {
			if (errno != EAGAIN)
				return -1;
			a->retry_len = n;
			a->write_blocked = true;
			return 0;
		}
		a->retry_len = 0;
		assoc_q_consume(a, (size_t)w);
	}
	return 0;
}

/* ---- from the server --------------------------------------------------- */

/* Delivers the complete datagrams in rx.  -1: the server broke the
 * framing. */
static int
stream_datagrams(struct assoc *a)
{
	struct proto_dest	 src;
	const uint8_t		*p;
	size_t			 plen;
	ssize_t			 r;

	while (buf_len(&a->rx) > 0) {
		if (is_trojan(a))
			r = proto_trojan_udp_parse(buf_head(&a->rx),
			    buf_len(&a->rx), &src, &p, &plen);
		else
			r = frame_parse(buf_head(&a->rx), buf_len(&a->rx),
			    &src, &p, &plen);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		assoc_deliver(a, &src, p, plen);
		buf_consume(&a->rx, (size_t)r);
	}
	return 0;
}

static int
stream_pump_down(struct assoc *a, const char **why)
{
	uint8_t		*tail;
	size_t		 room;
	ssize_t		 r;
	bool		 got = false;

	for (;;) {
		if ((tail = buf_tail(&a->rx, &room)) == NULL) {
			*why = ASSOC_OOM;
			return -1;
		}
		r = outer_read(a->out, tail, room);
		if (r == 0) {
			*why = "server closed";
			return -1;
		}
		if (r < 0) {
			if (errno == EAGAIN)
				break;
			*why = "server reset";
			return -1;
		}
		buf_commit(&a->rx, (size_t)r);
		got = true;
		if (!a->ready) {
			/* Native only: trojan is ready at TLS. */
			if (buf_head(&a->rx)[0] != PROTO_OK) {
				*why = proto_status_str(buf_head(&a->rx)[0]);
				return -1;
			}
			buf_consume(&a->rx, 1);
			assoc_ready(a);
		}
		if (stream_datagrams(a) < 0) {
			*why = is_trojan(a) ? "malformed UDP packet from "
			    "trojan server" : "malformed frame from server";
			return -1;
		}
	}
	if (got)
		assoc_touch(a);
	buf_release_if_empty(&a->rx);
	return 0;
}

/* ---- events ------------------------------------------------------------ */

static void
stream_update_events(struct assoc *a)
{
	uint32_t	ev = 0;

	if (a->closing || a->phase == ASSOC_HOLD)
		return;
	if (a->hup) {
		loop_fd_del(a->env->loop, &a->lfd);
		return;
	}
	switch (a->step) {
	case STEP_CONNECT:
		ev = EPOLLOUT;
		break;
	case STEP_TLS:
		ev = outer_events(a->out);
		break;
	case STEP_RELAY:
		ev = EPOLLIN;
		if (a->write_blocked)
			ev |= EPOLLOUT | outer_events(a->out);
		break;
	}
	loop_fd_mod(a->env->loop, &a->lfd, ev);
}

static void
stream_work(struct assoc *a)
{
	const char	*why = "server write failed";

	if (a->step != STEP_RELAY)
		return;
	if (stream_pump_up(a) < 0) {
		assoc_fail(a, why);
		return;
	}
	if (stream_pump_down(a, &why) < 0) {
		/* A clean end from the server needs no hold-down -- unless
		 * a trojan server closed before sending anything back, the
		 * way a rejecting one (or its cover site) may: redialling at
		 * once for every datagram would only repeat that. */
		if (strcmp(why, "server closed") == 0 &&
		    (!is_trojan(a) || a->down_d > 0))
			assoc_end(a, why);
		else
			assoc_fail(a, why);
		return;
	}
	stream_update_events(a);
}

/* The request goes in front of the datagrams queued during the
 * handshake, bound (version 2) to the TLS connection just made.  It holds
 * no secret worth wiping: the native MAC and the trojan hash go on the
 * wire anyway, and the exporter value is good for this connection only. */
static int
stream_start_relay(struct assoc *a)
{
	struct proto_req	 req;
	uint8_t			 buf[PROTO_REQ_MAX], bind[PROTO_BIND_LEN];
	ssize_t			 n;
	bool			 v1;

	if (is_trojan(a)) {
		n = proto_trojan_encode(buf, sizeof(buf), a->ob->co->trojan_hex,
		    PROTO_TROJAN_CMD_UDP, a->first);
	} else {
		v1 = a->ob->co->header_version == PROTO_VERSION_1;
		if (!v1 && outer_export(a->out, PROTO_BIND_LABEL, bind,
		    sizeof(bind)) < 0)
			return -1;
		memset(&req, 0, sizeof(req));
		req.kind = a->key.kind;
		req.ts = (uint64_t)time(NULL);
		randombytes_buf(req.nonce, sizeof(req.nonce));
		memcpy(req.user_id, a->ob->user_id, sizeof(req.user_id));
		req.dest = *a->first;
		n = proto_req_encode(buf, sizeof(buf), &req, a->ob->co->key,
		    v1 ? NULL : bind, proto_req_pad_random(&req));
	}
	if (n < 0 || dq_push(&a->q, buf, (size_t)n, NULL, 0, true) < 0)
		return -1;
	a->env->qtotal += (size_t)n;
	free(a->first);
	a->first = NULL;
	a->step = STEP_RELAY;
	if (is_trojan(a))
		assoc_ready(a);
	assoc_mark_dirty(a);
	return 0;
}

static void
stream_on_io(struct loop_fd *lfd, uint32_t revents)
{
	struct assoc	*a = container_of(lfd, struct assoc, lfd);
	int		 err, rc;

	if (a->closing || a->phase == ASSOC_HOLD)
		return;
	switch (a->step) {
	case STEP_CONNECT:
		if ((err = sock_connect_error(a->fd)) != 0) {
			errno = err;
			log_warn("%s %llu: connect to server", assoc_kstr(a),
			    (unsigned long long)a->id);
			assoc_fail(a, "server unreachable");
			return;
		}
		a->step = STEP_TLS;
		/* FALLTHROUGH */
	case STEP_TLS:
		if ((rc = outer_handshake(a->out)) < 0) {
			assoc_fail(a, "TLS handshake with server failed");
			return;
		}
		if (rc == 1 && stream_start_relay(a) < 0) {
			assoc_fail(a, ASSOC_OOM);
			return;
		}
		break;
	case STEP_RELAY:
		if (revents & (EPOLLHUP | EPOLLERR))
			a->hup = true;
		assoc_mark_dirty(a);
		break;
	}
	stream_update_events(a);
}

/* ---- the transport ------------------------------------------------------ */

static void
stream_open(struct assoc *a)
{
	struct assoc_env	*e = a->env;
	const struct conf	*c = e->conf;

	buf_init(&a->rx, is_trojan(a) ? RX_TROJAN : RX_NATIVE);
	a->step = STEP_CONNECT;
	a->fd = sock_connect(&a->ob->server, a->ob->co->congestion, c->client.mark);
	if (a->fd < 0) {
		log_warn("%s %llu: socket to server", assoc_kstr(a),
		    (unsigned long long)a->id);
		assoc_fail(a, "server unreachable");
		return;
	}
	a->out = outer_new(a->ob->ssl_ctx, a->fd, true, a->ob->co->sni);
	if (a->out == NULL) {
		a->fd = -1;	/* outer_new closed it */
		assoc_fail(a, "TLS setup failed");
		return;
	}
	if (loop_fd_add(e->loop, &a->lfd, a->fd, EPOLLOUT, stream_on_io) < 0)
		assoc_fail(a, "epoll");
}

/* Ends the stream: gracefully (close_notify) or with a reset. */
static void
stream_drop(struct assoc *a, bool abort)
{
	loop_fd_del(a->env->loop, &a->lfd);
	if (a->out != NULL) {
		if (abort)
			outer_abort(a->out);
		else {
			if (a->step == STEP_RELAY)
				(void)outer_shutdown_write(a->out);
			outer_free(a->out);
		}
	} else if (a->fd >= 0)
		sock_close_rst(a->fd);
	a->out = NULL;
	a->fd = -1;
}

static const char *
stream_state(const struct assoc *a)
{
	return a->step == STEP_CONNECT ? "connect" :
	    a->step == STEP_TLS ? "tls" : "relay";
}

const struct assoc_tp assoc_tp_tunsplit = {
	.name = "tunsplit",
	.icmp = true,
	.open = stream_open,
	.encode_hdr = frame_encode_hdr,
	.work = stream_work,
	.drop = stream_drop,
	.state = stream_state,
};

const struct assoc_tp assoc_tp_trojan = {
	.name = "trojan",
	.open = stream_open,
	.encode_hdr = proto_trojan_udp_encode_hdr,
	.work = stream_work,
	.drop = stream_drop,
	.state = stream_state,
};
