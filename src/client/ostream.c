/*
 * A TCP stream through an outbound, opened by the client itself (see
 * ostream.h).
 */
#include "config.h"

#include "client/ostream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <sodium.h>

#include "client/group.h"
#include "client/outbound.h"
#include "client/pool.h"
#include "client/tcp/flow_socks5.h"
#include "conf/conf.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/sock.h"
#include "tls/outer.h"
#include "tls/tlsmem.h"
#include "wire/frame.h"
#include "wire/proto.h"

enum os_step {
	OS_CONNECT,	/* TCP connect to the server, proxy or target */
	OS_HANDSHAKE,	/* TLS to the server, or SOCKS5 */
	OS_STATUS,	/* tunsplit: the status byte */
	OS_TLS,		/* TLS to the target, inside */
	OS_OPEN,
	OS_FAILED,
};

struct ostream {
	struct loop		*loop;
	struct outbound		*ob;
	struct proto_dest	 dst;
	enum os_step		 step;
	const char		*why;
	struct outer		*out;
	int			 fd;
	struct loop_fd		 lfd;
	struct loop_timer	 timer;
	struct flow_socks5	*socks;
	struct tlsmem		*tls;
	struct buf		 tx;		/* raw bytes for the outer */
	size_t			 retry_len;	/* a blocked write's length */
	bool			 requested;	/* the request is queued */
	ostream_cb		*cb;
	void			*arg;
};

static void os_update(struct ostream *s);

static void
os_fail(struct ostream *s, const char *why)
{
	if (s->step == OS_FAILED)
		return;
	if (s->step < OS_STATUS && s->ob->has_server)
		outbound_fail(s->ob, why);
	s->step = OS_FAILED;
	s->why = why;
	loop_fd_del(s->loop, &s->lfd);
	loop_timer_cancel(s->loop, &s->timer);
	s->cb(s, s->arg);
}

/* Raw bytes out, as far as the socket takes them.  -1: failed. */
static int
os_flush(struct ostream *s)
{
	ssize_t	w;
	size_t	n;

	while ((n = buf_len(&s->tx)) > 0) {
		if (s->retry_len != 0)
			n = s->retry_len;
		if ((w = outer_write(s->out, buf_head(&s->tx), n)) < 0) {
			if (errno != EAGAIN)
				return -1;
			s->retry_len = n;
			return 0;
		}
		s->retry_len = 0;
		buf_consume(&s->tx, (size_t)w);
	}
	buf_release_if_empty(&s->tx);
	return 0;
}

/* What inner TLS has to send, into tx.  -1: no room. */
static int
os_tls_take(struct ostream *s)
{
	uint8_t	*tail;
	size_t	 room, n;

	while ((tail = buf_tail(&s->tx, &room)) != NULL &&
	    (n = tlsmem_take(s->tls, tail, room)) > 0)
		buf_commit(&s->tx, n);
	return tail == NULL ? -1 : 0;
}

/* The request header that goes first: tunsplit's, trojan's. */
static int
os_request(struct ostream *s)
{
	uint8_t buf[PROTO_REQ_MAX];
	ssize_t n;

	n = outbound_tcp_request(s->ob, s->out, &s->dst, buf, sizeof(buf));
	if (n <= 0 || buf_append(&s->tx, buf, (size_t)n) != (size_t)n) {
		sodium_memzero(buf, sizeof(buf));
		return -1;
	}
	sodium_memzero(buf, sizeof(buf));
	s->requested = true;
	return 0;
}

/* The outbound's part is done: TLS to the target, or ready. */
static void
os_through(struct ostream *s)
{
	if (s->ob->has_server)
		outbound_ok(s->ob);
	if (s->tls == NULL) {
		s->step = OS_OPEN;
		loop_timer_cancel(s->loop, &s->timer);
		s->cb(s, s->arg);
		return;
	}
	s->step = OS_TLS;
	if (tlsmem_handshake(s->tls) == -1 || os_tls_take(s) == -1)
		os_fail(s, "TLS handshake with the upstream failed");
}

/* Inner TLS handshake: what the target sent goes in.  -1: failed. */
static int
os_tls_step(struct ostream *s)
{
	uint8_t	buf[4096];
	ssize_t	n;
	int	rc;

	while ((n = outer_read(s->out, buf, sizeof(buf))) > 0)
		if (tlsmem_feed(s->tls, buf, (size_t)n) == -1)
			return -1;
	if (n == 0 || errno != EAGAIN)
		return -1;
	if ((rc = tlsmem_handshake(s->tls)) == -1 || os_tls_take(s) == -1)
		return -1;
	if (rc == 1) {
		s->step = OS_OPEN;
		loop_timer_cancel(s->loop, &s->timer);
		s->cb(s, s->arg);
	}
	return 0;
}

static void
os_step(struct ostream *s)
{
	const char *why = NULL;
	char detail[192];
	uint8_t st, rep;
	ssize_t n;
	int rc;

	switch (s->step) {
	case OS_CONNECT:
		if ((rc = sock_connect_error(s->fd)) != 0) {
			os_fail(s, s->ob->co->protocol == CONF_PROTO_DIRECT ?
			    "upstream unreachable" : "server unreachable");
			return;
		}
		s->step = OS_HANDSHAKE;
		/* FALLTHROUGH */
	case OS_HANDSHAKE:
		if (s->ob->co->protocol == CONF_PROTO_SOCKS5) {
			if (s->socks == NULL && (s->socks = flow_socks5_new(
			    s->ob->co, &s->dst)) == NULL) {
				os_fail(s, "out of memory");
				return;
			}
			rc = flow_socks5_step(s->socks, s->out, &why, detail,
			    sizeof(detail), &rep);
			if (rc < 0) {
				log_info("dns upstream via %s: %s",
				    outbound_name(s->ob), detail);
				os_fail(s, why);
				return;
			}
			if (rc == 0)
				return;
			flow_socks5_free(s->socks);
			s->socks = NULL;
		} else if (s->ob->co->protocol != CONF_PROTO_DIRECT &&
		    !s->requested) {
			if ((rc = outer_handshake(s->out)) < 0) {
				os_fail(s, "TLS handshake with server failed");
				return;
			}
			if (rc == 0)
				return;
			if (os_request(s) == -1) {
				os_fail(s, "out of memory");
				return;
			}
		}
		if (s->ob->co->protocol == CONF_PROTO_TUNSPLIT) {
			s->step = OS_STATUS;
			break;
		}
		os_through(s);
		return;
	case OS_STATUS:
		if ((n = outer_read(s->out, &st, 1)) < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			os_fail(s, "server closed before connect status");
			return;
		}
		st = outbound_status(s->ob, s->out, st);
		if (st != PROTO_OK) {
			log_info("dns upstream via %s: server: %s",
			    outbound_name(s->ob), proto_status_str(st));
			os_fail(s, proto_status_reason(st));
			return;
		}
		os_through(s);
		return;
	case OS_TLS:
		if (os_tls_step(s) == -1)
			os_fail(s, "TLS handshake with the upstream failed");
		return;
	case OS_OPEN:
		s->cb(s, s->arg);
		return;
	case OS_FAILED:
		return;
	}
}

static void
os_on_io(struct loop_fd *lfd, uint32_t revents)
{
	struct ostream *s = container_of(lfd, struct ostream, lfd);

	(void)revents;
	if (s->step > OS_CONNECT && os_flush(s) == -1) {
		os_fail(s, "write failed");
		return;
	}
	os_step(s);
	if (s->step != OS_FAILED && s->step > OS_HANDSHAKE &&
	    os_flush(s) == -1)
		os_fail(s, "write failed");
	os_update(s);
}

static void
os_on_timer(struct loop_timer *t)
{
	struct ostream *s = container_of(t, struct ostream, timer);

	os_fail(s, "connect timeout");
}

static void
os_update(struct ostream *s)
{
	uint32_t ev;

	if (s->step == OS_FAILED)
		return;
	if (s->step == OS_CONNECT)
		ev = EPOLLOUT;
	else
		ev = EPOLLIN | outer_events(s->out) |
		    (buf_len(&s->tx) > 0 ? EPOLLOUT : 0);
	if (ev != s->lfd.events && loop_fd_mod(s->loop, &s->lfd, ev) == -1)
		os_fail(s, "epoll failed");
}

struct ostream *
ostream_open(struct loop *l, struct outbound *ob, const struct addr *dst,
    struct ssl_ctx_st *tls_ctx, const char *tls_name, ostream_cb *cb,
    void *arg)
{
	const struct conf_outbound *co = ob->co;
	const struct addr *to = co->protocol == CONF_PROTO_DIRECT ? dst :
	    &ob->server;
	struct ostream *s;
	bool pooled = false;
	int e;

	/* A group none of whose members is up refuses, as block does. */
	if (outbound_blocks(ob) || outbound_is_group(ob)) {
		errno = ECONNREFUSED;
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->loop = l;
	s->ob = outbound_ref(ob);
	s->cb = cb;
	s->arg = arg;
	s->fd = -1;
	frame_dest_from_addr(&s->dst, dst);
	buf_init(&s->tx, OSTREAM_TXQ);
	loop_timer_init(&s->timer, os_on_timer);
	outbound_open(ob);
	if (tls_ctx != NULL && (s->tls = tlsmem_new(tls_ctx, tls_name)) ==
	    NULL) {
		errno = ENOMEM;
		goto fail;
	}
	if ((co->protocol == CONF_PROTO_TUNSPLIT ||
	    co->protocol == CONF_PROTO_TROJAN) &&
	    (s->out = pool_take(ob->pool)) != NULL) {
		pooled = true;
		s->fd = outer_fd(s->out);
	} else {
		if ((s->fd = sock_connect(to, co->congestion,
		    ob->conf->client.mark)) < 0)
			goto fail;
		s->out = outer_new(co->protocol == CONF_PROTO_TUNSPLIT ||
		    co->protocol == CONF_PROTO_TROJAN ? ob->ssl_ctx : NULL,
		    s->fd, true, co->sni);
		if (s->out == NULL) {
			s->fd = -1;
			errno = ENOMEM;
			goto fail;
		}
	}
	if (loop_fd_add(l, &s->lfd, s->fd, EPOLLOUT, os_on_io) == -1)
		goto fail;
	loop_timer_set(l, &s->timer, co->connect_timeout_ms);
	if (pooled) {
		/* TLS is up: the request now; the rest on the first event
		 * (the callback has no user before this returns). */
		s->step = OS_HANDSHAKE;
		if (os_request(s) == -1) {
			errno = ENOMEM;
			goto fail;
		}
	}
	return s;
fail:
	e = errno;
	ostream_free(s);
	errno = e;
	return NULL;
}

bool
ostream_ready(const struct ostream *s)
{
	return s->step == OS_OPEN;
}

const char *
ostream_why(const struct ostream *s)
{
	return s->why;
}

int
ostream_write(struct ostream *s, const void *buf, size_t len)
{
	if (s->step == OS_FAILED)
		return -1;
	if (s->tls != NULL) {
		if (s->step != OS_OPEN || tlsmem_write(s->tls, buf, len) == -1 ||
		    os_tls_take(s) == -1)
			return -1;
	} else if (buf_room(&s->tx) < len ||
	    buf_append(&s->tx, buf, len) != len) {
		return -1;
	}
	if (s->step >= OS_STATUS && os_flush(s) == -1)
		return -1;
	os_update(s);
	return 0;
}

ssize_t
ostream_read(struct ostream *s, void *buf, size_t len)
{
	uint8_t	raw[4096];
	ssize_t	n;

	if (s->step != OS_OPEN) {
		errno = s->step == OS_FAILED ? EPIPE : EAGAIN;
		return -1;
	}
	if (s->tls == NULL)
		return outer_read(s->out, buf, len);
	for (;;) {
		if ((n = tlsmem_read(s->tls, buf, len)) >= 0 ||
		    errno != EAGAIN)
			return n;
		if ((n = outer_read(s->out, raw, sizeof(raw))) <= 0) {
			if (n == 0)
				errno = EPIPE;
			return -1;
		}
		if (tlsmem_feed(s->tls, raw, (size_t)n) == -1)
			return -1;
	}
}

void
ostream_free(struct ostream *s)
{
	if (s == NULL)
		return;
	loop_fd_del(s->loop, &s->lfd);
	loop_timer_cancel(s->loop, &s->timer);
	flow_socks5_free(s->socks);
	tlsmem_free(s->tls);
	if (s->out != NULL)
		outer_abort(s->out);
	else if (s->fd >= 0)
		sock_close_rst(s->fd);
	buf_free(&s->tx);
	outbound_close(s->ob, s->step != OS_OPEN, 0, 0);
	outbound_unref(s->ob);
	free(s);
}
