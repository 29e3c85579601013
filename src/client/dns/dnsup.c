/*
 * DNS over TCP, TLS and HTTPS to the stream upstreams (see dnsup.h).
 */
#include "config.h"

#include "client/dns/dnsup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "client/ostream.h"
#include "client/outbound.h"
#include "client/route.h"
#include "conf/conf.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "rules/rules.h"
#include "tls/outer.h"
#include "wire/dns.h"
#include "wire/dnsstream.h"

#define DNSUP_RX	(DNSSTREAM_HEAD_MAX + DNSSTREAM_MSG_MAX + 2)
#define DNSUP_HEAD	(DNSSTREAM_HEAD_MAX / 4)	/* our POST's head */

struct dnsup_up;

struct dnsup_query {
	TAILQ_ENTRY(dnsup_query) entry;
	struct dnsup_up		*up;
	struct dnsup_conn	*conn;		/* sent on it, or NULL */
	struct loop_timer	 timer;
	bool			 retried;
	uint16_t		 app_id, wire_id;
	size_t			 ctxlen, len;
	uint8_t			 ctx[DNSUP_CTX_MAX];
	uint8_t			 msg[];
};

TAILQ_HEAD(dnsup_queries, dnsup_query);

struct dnsup_conn {
	SLIST_ENTRY(dnsup_conn)	 dead_entry;
	struct dnsup_up		*up;
	struct ostream		*s;
	struct buf		 rx;
	unsigned		 answered;
	unsigned		 inflight;
	bool			 opened;	/* was ready once */
	bool			 dead;
};

struct dnsup_up {
	struct dnsup			*d;
	int				 index;
	const struct conf_dns_upstream	*cu;
	struct ssl_ctx_st		*ctx;		/* tls, https */
	struct dnsup_conn		*conn;		/* the live one */
	struct dnsup_queries		 q;
	unsigned			 nq;
	uint16_t			 next_id;
	struct loop_timer		 idle;
};

struct dnsup {
	struct loop		*loop;
	const struct conf	*conf;
	struct outbounds	*obs;
	dnsup_done		*done;
	void			*arg;
	bool			 retired;
	size_t			 nup;
	struct dnsup_up		*up;		/* one per upstream, then
						 * client.dns's server */
	struct conf_dns_upstream server;	/* that server, over TCP */
	SLIST_HEAD(, dnsup_conn) dead;
};

int
dnsup_wants(const struct conf *c, int i)
{
	return i >= 0 && (size_t)i < c->client.ndns_upstreams &&
	    c->client.dns_upstreams[i].protocol != CONF_DNS_UDP;
}

/* ---- queries -------------------------------------------------------------- */

/* q answered (reply) or failed (NULL): the caller told, q gone. */
static void
dnsup_finish(struct dnsup_query *q, uint8_t *reply, size_t len)
{
	struct dnsup_up	*up = q->up;

	TAILQ_REMOVE(&up->q, q, entry);
	up->nq--;
	if (q->conn != NULL)
		q->conn->inflight--;
	loop_timer_cancel(up->d->loop, &q->timer);
	if (reply != NULL) {
		reply[0] = (uint8_t)(q->app_id >> 8);
		reply[1] = (uint8_t)q->app_id;
	}
	q->msg[0] = (uint8_t)(q->app_id >> 8);
	q->msg[1] = (uint8_t)q->app_id;
	up->d->done(up->d->arg, q->ctx, q->msg, q->len, reply, len);
	free(q);
	/* The last one: the connection waits for more, a while. */
	if (TAILQ_EMPTY(&up->q) && up->conn != NULL && !up->d->retired)
		loop_timer_set(up->d->loop, &up->idle, DNSUP_IDLE_MS);
}

static void dnsup_conn_kill(struct dnsup_conn *, const char *why);
static void dnsup_kick(struct dnsup_up *up);

static void
dnsup_on_timeout(struct loop_timer *t)
{
	struct dnsup_query	*q = container_of(t, struct dnsup_query, timer);
	struct dnsup_conn	*c = q->conn;

	log_info("dns upstream %s: no answer in %u ms", q->up->cu->name,
	    DNSUP_TIMEOUT_MS);
	dnsup_finish(q, NULL, 0);
	/* https answers in order: this one's answer would be taken for
	 * the next query's. */
	if (c != NULL && c->up->cu->protocol == CONF_DNS_HTTPS)
		dnsup_conn_kill(c, NULL);
}

/* ---- connections ---------------------------------------------------------- */

static void
dnsup_conn_kill(struct dnsup_conn *c, const char *why)
{
	struct dnsup_up		*up = c->up;
	struct dnsup_query	*q, *tmp;

	if (c->dead)
		return;
	c->dead = true;
	if (up->conn == c)
		up->conn = NULL;
	SLIST_INSERT_HEAD(&up->d->dead, c, dead_entry);
	if (why != NULL)
		log_info("dns upstream %s: %s", up->cu->name, why);
	/* Sent and not answered: once more on a new connection when this
	 * one had served before (the upstream closed it idle), else
	 * failed.  One that never opened fails every query waiting: no
	 * second try at once, which would fail the same way. */
	for (q = TAILQ_FIRST(&up->q); q != NULL; q = tmp) {
		tmp = TAILQ_NEXT(q, entry);
		if (q->conn != c && c->opened)
			continue;
		if (q->conn == c) {
			q->conn = NULL;
			c->inflight--;
		}
		if (c->answered > 0 && !q->retried)
			q->retried = true;
		else
			dnsup_finish(q, NULL, 0);
	}
	if (!up->d->retired && !TAILQ_EMPTY(&up->q))
		dnsup_kick(up);
}

static void
dnsup_conn_free(struct dnsup_conn *c)
{
	ostream_free(c->s);
	buf_free(&c->rx);
	free(c);
}

static struct dnsup_query *
dnsup_by_id(struct dnsup_conn *c, uint16_t id)
{
	struct dnsup_query	*q;

	TAILQ_FOREACH(q, &c->up->q, entry)
		if (q->conn == c && q->wire_id == id)
			return q;
	return NULL;
}

static struct dnsup_query *
dnsup_oldest_sent(struct dnsup_conn *c)
{
	struct dnsup_query	*q;

	TAILQ_FOREACH(q, &c->up->q, entry)
		if (q->conn == c)
			return q;
	return NULL;
}

/* The whole messages in rx.  -1: the upstream broke the framing. */
static int
dnsup_conn_parse(struct dnsup_conn *c)
{
	struct dnsup_query	*q;
	const uint8_t		*msg;
	uint8_t			 copy[DNSSTREAM_MSG_MAX];
	size_t			 len;
	ssize_t			 r;
	int			 status = 0, close = 0;

	while (!c->dead && buf_len(&c->rx) > 0) {
		if (c->up->cu->protocol == CONF_DNS_HTTPS)
			r = dnsstream_http_parse(buf_head(&c->rx),
			    buf_len(&c->rx), &status, &msg, &len, &close);
		else
			r = dnsstream_tcp_parse(buf_head(&c->rx),
			    buf_len(&c->rx), &msg, &len);
		if (r <= 0)
			return (int)r;
		memcpy(copy, msg, len);
		buf_consume(&c->rx, (size_t)r);
		c->answered++;
		if (c->up->cu->protocol == CONF_DNS_HTTPS) {
			if ((q = dnsup_oldest_sent(c)) == NULL)
				return -1;	/* an answer nobody asked */
			if (status != 200 || len < DNS_HDR_LEN) {
				log_info("dns upstream %s: HTTP status %d",
				    c->up->cu->name, status);
				dnsup_finish(q, NULL, 0);
			} else {
				dnsup_finish(q, copy, len);
			}
			if (close)
				dnsup_conn_kill(c, NULL);
		} else if ((q = dnsup_by_id(c, (uint16_t)(copy[0] << 8 |
		    copy[1]))) != NULL) {
			dnsup_finish(q, copy, len);
		}
		/* else: the answer to a query that timed out */
	}
	return 0;
}

static void
dnsup_conn_read(struct dnsup_conn *c)
{
	uint8_t		*tail;
	size_t		 room;
	ssize_t		 n;

	while (!c->dead) {
		if ((tail = buf_tail(&c->rx, &room)) == NULL) {
			dnsup_conn_kill(c, "answer too long");
			return;
		}
		if ((n = ostream_read(c->s, tail, room)) < 0 &&
		    errno == EAGAIN)
			break;
		if (n <= 0) {
			dnsup_conn_kill(c, c->answered > 0 ? NULL :
			    "closed before answering");
			return;
		}
		buf_commit(&c->rx, (size_t)n);
		if (dnsup_conn_parse(c) == -1) {
			dnsup_conn_kill(c, "malformed answer (framing)");
			return;
		}
	}
}

/* Queries not sent yet go out: all of them (tcp, tls), or the first
 * when none is in flight (https). */
static void
dnsup_conn_send(struct dnsup_conn *c)
{
	struct dnsup_up		*up = c->up;
	const struct conf_dns_upstream *cu = up->cu;
	struct dnsup_query	*q;
	char			 head[DNSUP_HEAD], host[ADDR_STRLEN];
	uint8_t			 pre[2], m[2];
	ssize_t			 h;

	TAILQ_FOREACH(q, &up->q, entry) {
		if (q->conn != NULL)
			continue;
		if (cu->protocol == CONF_DNS_HTTPS) {
			if (c->inflight > 0)
				return;
			h = dnsstream_http_request(head, sizeof(head),
			    cu->tls_name[0] != '\0' ? cu->tls_name :
			    addr_fmt(&cu->addr, host, sizeof(host)),
			    cu->path != NULL ? cu->path : "/dns-query",
			    q->len);
			/* RFC 8484: id 0 for caching; the app's comes back. */
			m[0] = q->msg[0];
			m[1] = q->msg[1];
			q->msg[0] = q->msg[1] = 0;
			if (h < 0 || ostream_write(c->s, head, (size_t)h) ||
			    ostream_write(c->s, q->msg, q->len)) {
				dnsup_conn_kill(c, "cannot send");
				return;
			}
			q->msg[0] = m[0];
			q->msg[1] = m[1];
		} else {
			dnsstream_tcp_prefix(pre, q->len);
			q->msg[0] = (uint8_t)(q->wire_id >> 8);
			q->msg[1] = (uint8_t)q->wire_id;
			if (ostream_write(c->s, pre, 2) ||
			    ostream_write(c->s, q->msg, q->len)) {
				dnsup_conn_kill(c, "cannot send");
				return;
			}
		}
		q->conn = c;
		c->inflight++;
	}
}

static void
dnsup_on_stream(struct ostream *s, void *arg)
{
	struct dnsup_conn	*c = arg;

	(void)s;
	if (c->dead)
		return;
	if (ostream_why(c->s) != NULL) {
		dnsup_conn_kill(c, ostream_why(c->s));
		return;
	}
	if (!ostream_ready(c->s))
		return;
	c->opened = true;
	dnsup_conn_send(c);
	dnsup_conn_read(c);
	if (!c->dead && c->up->conn == c)
		dnsup_conn_send(c);	/* https: the next one */
}

/* Opens the upstream's connection through the outbound its address takes
 * now.  Failing that, every waiting query fails. */
static void
dnsup_open(struct dnsup_up *up)
{
	struct dnsup		*d = up->d;
	struct dnsup_conn	*c;
	struct rule_query	 rq;
	struct rule_hit		 why;
	struct outbound		*ob;
	struct dnsup_query	*q;
	char			 name[256];
	size_t			 alen;

	/* Without tls_name the certificate must name the address. */
	if (up->cu->tls_name[0] != '\0')
		snprintf(name, sizeof(name), "%s", up->cu->tls_name);
	else if (inet_ntop(addr_family(&up->cu->addr), addr_ip(&up->cu->addr,
	    &alen), name, sizeof(name)) == NULL)
		name[0] = '\0';
	rules_query_flow(&rq, &up->cu->addr, NULL, RULES_NET_TCP, NULL);
	ob = client_route(d->obs, &rq, &why);
	if ((c = calloc(1, sizeof(*c))) != NULL) {
		c->up = up;
		buf_init(&c->rx, DNSUP_RX);
		c->s = ostream_open(d->loop, ob, &up->cu->addr, up->ctx, name,
		    dnsup_on_stream, c);
	}
	if (c == NULL || c->s == NULL) {
		log_info("dns upstream %s: via %s: %s", up->cu->name,
		    outbound_name(ob), errno == ECONNREFUSED ? "blocked" :
		    strerror(errno));
		if (c != NULL)
			dnsup_conn_free(c);
		while ((q = TAILQ_FIRST(&up->q)) != NULL)
			dnsup_finish(q, NULL, 0);
		return;
	}
	up->conn = c;
}

static void
dnsup_kick(struct dnsup_up *up)
{
	loop_timer_cancel(up->d->loop, &up->idle);
	if (up->conn == NULL)
		dnsup_open(up);
	else if (ostream_ready(up->conn->s))
		dnsup_conn_send(up->conn);
}

static void
dnsup_on_idle(struct loop_timer *t)
{
	struct dnsup_up	*up = container_of(t, struct dnsup_up, idle);

	if (up->conn != NULL && TAILQ_EMPTY(&up->q))
		dnsup_conn_kill(up->conn, NULL);
}

int
dnsup_query(struct dnsup *d, int i, const uint8_t *msg, size_t len,
    const void *ctx, size_t ctxlen)
{
	struct dnsup_up		*up;
	struct dnsup_query	*q, *o;

	if (d == NULL || d->retired || len < DNS_HDR_LEN ||
	    len > DNSSTREAM_MSG_MAX || ctxlen > DNSUP_CTX_MAX)
		return -1;
	if (i == DNSUP_SERVER && d->conf->client.has_dns)
		i = (int)d->nup;
	else if (i < 0 || (size_t)i >= d->nup)
		return -1;
	up = &d->up[i];
	if (up->nq >= DNSUP_QUERIES || (q = calloc(1, sizeof(*q) + len)) ==
	    NULL)
		return -1;
	q->up = up;
	q->len = len;
	memcpy(q->msg, msg, len);
	q->app_id = (uint16_t)(msg[0] << 8 | msg[1]);
	/* An id no other query of the upstream has. */
	do {
		q->wire_id = up->next_id++;
		TAILQ_FOREACH(o, &up->q, entry)
			if (o->wire_id == q->wire_id)
				break;
	} while (o != NULL);
	memcpy(q->ctx, ctx, ctxlen);
	q->ctxlen = ctxlen;
	loop_timer_init(&q->timer, dnsup_on_timeout);
	loop_timer_set(d->loop, &q->timer, DNSUP_TIMEOUT_MS);
	TAILQ_INSERT_TAIL(&up->q, q, entry);
	up->nq++;
	dnsup_kick(up);
	return 0;
}

/* ---- lifetime --------------------------------------------------------------- */

static void dnsup_drop(struct dnsup *d);

static void
dnsup_reap(void *arg)
{
	struct dnsup		*d = arg;
	struct dnsup_conn	*c;

	while ((c = SLIST_FIRST(&d->dead)) != NULL) {
		SLIST_REMOVE_HEAD(&d->dead, dead_entry);
		dnsup_conn_free(c);
	}
	if (d->retired) {
		loop_off_iteration(d->loop, dnsup_reap, d);
		dnsup_drop(d);
	}
}

struct dnsup *
dnsup_new(struct loop *l, const struct conf *c, struct outbounds *obs,
    dnsup_done *done, void *arg)
{
	const struct conf_dns_upstream *cu;
	struct dnsup	*d;
	size_t		 i;

	if ((d = calloc(1, sizeof(*d))) == NULL ||
	    (d->up = calloc(c->client.ndns_upstreams + 1,
	    sizeof(*d->up))) == NULL) {
		free(d);
		return NULL;
	}
	/* client.dns's server is asked over TCP, as a udp upstream is. */
	snprintf(d->server.name, sizeof(d->server.name), "server");
	d->server.addr = c->client.dns;
	d->server.protocol = CONF_DNS_UDP;
	d->loop = l;
	d->conf = conf_ref(c);
	d->obs = obs;
	d->done = done;
	d->arg = arg;
	d->nup = c->client.ndns_upstreams;
	SLIST_INIT(&d->dead);
	for (i = 0; i <= d->nup; i++) {
		cu = i < d->nup ? &c->client.dns_upstreams[i] : &d->server;
		d->up[i].d = d;
		d->up[i].index = (int)i;
		d->up[i].cu = cu;
		TAILQ_INIT(&d->up[i].q);
		loop_timer_init(&d->up[i].idle, dnsup_on_idle);
		if (cu->protocol != CONF_DNS_TLS &&
		    cu->protocol != CONF_DNS_HTTPS)
			continue;
		/* Any TLS version a resolver speaks; verified always. */
		if ((d->up[i].ctx = outer_ctx_client(cu->ca_file, false)) ==
		    NULL || outer_ctx_allow_tls12(d->up[i].ctx) == -1 ||
		    outer_ctx_alpn(d->up[i].ctx, cu->protocol ==
		    CONF_DNS_HTTPS ? "http/1.1" : "dot") == -1) {
			log_warnx("dns upstream %s: no TLS context", cu->name);
			dnsup_drop(d);
			return NULL;
		}
	}
	if (loop_on_iteration(l, dnsup_reap, d) == -1) {
		dnsup_drop(d);
		return NULL;
	}
	return d;
}

/* Every query fails, every connection is dead (not freed). */
static void
dnsup_stop(struct dnsup *d)
{
	struct dnsup_query	*q;
	size_t			 i;

	d->retired = true;
	for (i = 0; i <= d->nup; i++) {
		loop_timer_cancel(d->loop, &d->up[i].idle);
		while ((q = TAILQ_FIRST(&d->up[i].q)) != NULL)
			dnsup_finish(q, NULL, 0);
		if (d->up[i].conn != NULL)
			dnsup_conn_kill(d->up[i].conn, NULL);
	}
}

static void
dnsup_drop(struct dnsup *d)
{
	struct dnsup_conn	*c;
	size_t			 i;

	dnsup_stop(d);
	while ((c = SLIST_FIRST(&d->dead)) != NULL) {
		SLIST_REMOVE_HEAD(&d->dead, dead_entry);
		dnsup_conn_free(c);
	}
	for (i = 0; i <= d->nup; i++)
		outer_ctx_free(d->up[i].ctx);
	conf_unref(d->conf);
	free(d->up);
	free(d);
}

void
dnsup_retire(struct dnsup *d)
{
	if (d != NULL)
		dnsup_stop(d);
}

void
dnsup_free(struct dnsup *d)
{
	if (d == NULL)
		return;
	loop_off_iteration(d->loop, dnsup_reap, d);
	dnsup_drop(d);
}
