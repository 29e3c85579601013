/*
 * DNS over TCP answered by the client (see flow_dns.h).
 */
#include "config.h"

#include "client/tcp/flow_dns.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "lwip/pbuf.h"
#include "lwip/tcp.h"

#include "client/dgram/flow_udp.h"
#include "client/dns/fakeip.h"
#include "client/tcp/flow_tcp.h"
#include "conf/conf.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/loop.h"
#include "wire/dns.h"
#include "wire/dnsstream.h"

#define DNS_PORT	53

struct flow_dns_out {
	STAILQ_ENTRY(flow_dns_out) entry;
	size_t			 len, off;
	uint8_t			 data[];
};

struct flow_dns {
	LIST_ENTRY(flow_dns)	 entry;
	struct flow_env		*env;
	struct tcp_pcb		*pcb;		/* NULL: gone */
	struct loop_timer	 idle;
	unsigned		 pending;	/* queries not answered yet */
	unsigned		 nout;		/* answers in out */
	bool			 fin;		/* the app sent its last */
	bool			 busy;		/* in flow_dns_work */
	STAILQ_HEAD(, flow_dns_out) out;	/* answers lwIP had no room for */
	size_t			 rxlen;
	uint8_t			 rx[2 + DNSSTREAM_MSG_MAX];
};

/* The loop thread's served flows (one client per process). */
static LIST_HEAD(, flow_dns) flow_dns_all = LIST_HEAD_INITIALIZER(flow_dns_all);
static unsigned flow_dns_n;

bool
flow_dns_wanted(const struct flow_env *env, const struct addr *dst)
{
	const void	*ip;
	size_t		 len;

	if (env->udp == NULL || env->draining || !env->conf->client.has_dns ||
	    addr_port(dst) != DNS_PORT)
		return false;
	ip = addr_ip(dst, &len);
	/* A fake address is a name's, not a resolver. */
	return env->fakeip == NULL || ip == NULL ||
	    !fakeip_contains(env->fakeip, addr_family(dst), ip);
}

static void
flow_dns_free(struct flow_dns *fd)
{
	struct flow_dns_out	*o;

	loop_timer_cancel(fd->env->loop, &fd->idle);
	while ((o = STAILQ_FIRST(&fd->out)) != NULL) {
		STAILQ_REMOVE_HEAD(&fd->out, entry);
		free(o);
	}
	fd->nout = 0;
	LIST_REMOVE(fd, entry);
	flow_dns_n--;
	free(fd);
}

/* Our callbacks off the pcb; abort: with an RST, else a FIN after what
 * is queued.  true when the pcb was aborted. */
static bool
flow_dns_detach(struct flow_dns *fd, bool abort)
{
	struct tcp_pcb	*pcb = fd->pcb;

	if (pcb == NULL)
		return false;
	fd->pcb = NULL;
	tcp_arg(pcb, NULL);
	tcp_recv(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
	if (!abort && tcp_close(pcb) == ERR_OK)
		return false;
	tcp_abort(pcb);
	return true;
}

/* The queued answers into lwIP, as far as its send buffer goes. */
static void
flow_dns_flush(struct flow_dns *fd)
{
	struct flow_dns_out	*o;
	size_t			 n, room;

	if (fd->pcb == NULL)
		return;
	while ((o = STAILQ_FIRST(&fd->out)) != NULL) {
		room = tcp_sndbuf(fd->pcb);
		n = o->len - o->off < room ? o->len - o->off : room;
		if (n == 0 || tcp_write(fd->pcb, o->data + o->off, (u16_t)n,
		    TCP_WRITE_FLAG_COPY) != ERR_OK)
			break;
		o->off += n;
		if (o->off < o->len)
			break;
		STAILQ_REMOVE_HEAD(&fd->out, entry);
		fd->nout--;
		free(o);
	}
	(void)tcp_output(fd->pcb);
}

static bool flow_dns_work(struct flow_dns *fd);

/* flow_udp_answer: the answer, or SERVFAIL, behind its length. */
static void
flow_dns_on_answer(void *arg, const uint8_t *query, size_t qlen,
    const uint8_t *reply, size_t len)
{
	struct flow_dns		*fd = arg;
	struct flow_dns_out	*o;
	struct dns_query	 q;
	uint8_t			 fail[DNS_ANSWER_MAX];
	ssize_t			 r;

	fd->pending--;
	if (reply == NULL) {
		/* Never another way: SERVFAIL (a query that does not parse
		 * its header back, flags QR and SERVFAIL). */
		if (dns_query_parse(query, qlen, &q) == 0 && (r = dns_answer(
		    fail, sizeof(fail), &q, DNS_SERVFAIL, NULL, 0, 0)) > 0) {
			len = (size_t)r;
		} else {
			memset(fail, 0, DNS_HDR_LEN);
			memcpy(fail, query, 2);
			fail[2] = 0x80 | (query[2] & 0x79);
			fail[3] = DNS_SERVFAIL;
			len = DNS_HDR_LEN;
		}
		reply = fail;
	}
	if (fd->pcb != NULL && len <= 0xffff &&
	    (o = malloc(sizeof(*o) + 2 + len)) != NULL) {
		dnsstream_tcp_prefix(o->data, len);
		memcpy(o->data + 2, reply, len);
		o->len = 2 + len;
		o->off = 0;
		STAILQ_INSERT_TAIL(&fd->out, o, entry);
		fd->nout++;
		flow_dns_flush(fd);
	}
	flow_dns_work(fd);
}

/* The whole queries in rx go to be answered, at most FLOW_DNS_INFLIGHT
 * at a time, answers the app has not taken yet included (an app that
 * sends and never reads must not queue answers without end: its queries
 * then wait in lwIP's window); -1: the app broke the framing. */
static int
flow_dns_parse(struct flow_dns *fd)
{
	struct flow_env	*env = fd->env;
	const uint8_t	*msg;
	uint8_t		 copy[DNSSTREAM_MSG_MAX];
	size_t		 len;
	ssize_t		 r;

	while (fd->pcb != NULL && fd->pending + fd->nout < FLOW_DNS_INFLIGHT) {
		if ((r = dnsstream_tcp_parse(fd->rx, fd->rxlen, &msg,
		    &len)) <= 0)
			return (int)r;
		memcpy(copy, msg, len);
		fd->rxlen -= (size_t)r;
		memmove(fd->rx, fd->rx + r, fd->rxlen);
		fd->pending++;
		flow_udp_dns_ask(env->udp, copy, len, flow_dns_on_answer, fd);
	}
	return 0;
}

/* What is next: more queries, the close after the app's FIN, or the end
 * of fd once its pcb is gone and nothing is pending (fd may be freed).
 * true when the pcb was aborted here. */
static bool
flow_dns_work(struct flow_dns *fd)
{
	bool	aborted = false;

	if (fd->busy)
		return false;
	fd->busy = true;
	if (fd->pcb != NULL && flow_dns_parse(fd) == -1) {
		log_info("dns over tcp: a bad length from the app: reset");
		aborted = flow_dns_detach(fd, true);
	}
	fd->busy = false;
	if (fd->pcb != NULL && fd->fin && fd->pending == 0 &&
	    STAILQ_EMPTY(&fd->out))
		aborted = flow_dns_detach(fd, false);
	if (fd->pcb == NULL && fd->pending == 0)
		flow_dns_free(fd);
	return aborted;
}

static err_t
flow_dns_on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct flow_dns	*fd = arg;

	(void)err;
	if (p == NULL) {
		fd->fin = true;
	} else {
		/* Full while FLOW_DNS_INFLIGHT queries wait: lwIP keeps p
		 * and offers it again. */
		if (p->tot_len > sizeof(fd->rx) - fd->rxlen)
			return ERR_MEM;
		fd->rxlen += pbuf_copy_partial(p, fd->rx + fd->rxlen,
		    p->tot_len, 0);
		tcp_recved(pcb, p->tot_len);
		pbuf_free(p);
		loop_timer_set(fd->env->loop, &fd->idle, FLOW_DNS_IDLE_MS);
	}
	return flow_dns_work(fd) ? ERR_ABRT : ERR_OK;
}

static err_t
flow_dns_on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	struct flow_dns	*fd = arg;

	(void)pcb;
	(void)len;
	flow_dns_flush(fd);
	return flow_dns_work(fd) ? ERR_ABRT : ERR_OK;
}

static void
flow_dns_on_err(void *arg, err_t err)
{
	struct flow_dns	*fd = arg;

	(void)err;
	fd->pcb = NULL;			/* lwIP freed it */
	flow_dns_work(fd);
}

static void
flow_dns_on_idle(struct loop_timer *t)
{
	struct flow_dns	*fd = container_of(t, struct flow_dns, idle);

	if (fd->pending > 0) {
		loop_timer_set(fd->env->loop, t, FLOW_DNS_IDLE_MS);
		return;
	}
	flow_dns_detach(fd, false);
	flow_dns_work(fd);
}

err_t
flow_dns_accept(struct flow_env *env, struct tcp_pcb *pcb)
{
	struct flow_dns	*fd;

	if (flow_dns_n >= FLOW_DNS_FLOWS ||
	    (fd = calloc(1, sizeof(*fd))) == NULL) {
		env->stats.refused++;
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	fd->env = env;
	fd->pcb = pcb;
	STAILQ_INIT(&fd->out);
	loop_timer_init(&fd->idle, flow_dns_on_idle);
	loop_timer_set(env->loop, &fd->idle, FLOW_DNS_IDLE_MS);
	LIST_INSERT_HEAD(&flow_dns_all, fd, entry);
	flow_dns_n++;
	tcp_arg(pcb, fd);
	tcp_recv(pcb, flow_dns_on_recv);
	tcp_sent(pcb, flow_dns_on_sent);
	tcp_err(pcb, flow_dns_on_err);
	return ERR_OK;
}

void
flow_dns_close_all(void)
{
	struct flow_dns	*fd, *next;

	for (fd = LIST_FIRST(&flow_dns_all); fd != NULL; fd = next) {
		next = LIST_NEXT(fd, entry);
		(void)flow_dns_detach(fd, true);
		if (fd->pending == 0)
			flow_dns_free(fd);
	}
}
