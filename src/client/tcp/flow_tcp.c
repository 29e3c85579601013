/*
 * Client TCP flows, the relay: lwIP pcb <-> outer stream.  See flow_tcp.h
 * for the ownership and backpressure rules; flow_tcp_open.c makes flows
 * (SYN, accept, the outbound and its handshakes) and hands them over in
 * FLOW_RELAY.  What this file does not know is the outbound: apart from
 * the native protocol's status byte, every outbound is an outer stream.
 */
#include "config.h"

#include "client/tcp/flow_tcp.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <sodium.h>

#include "lwip/tcp.h"
#include "lwip/pbuf.h"

#include "conf/conf.h"
#include "client/tcp/flow_socks5.h"
#include "client/tcp/flow_tcp_int.h"
#include "client/outbound.h"
#include "client/dialer.h"
#include "client/pool.h"
#include "client/route.h"
#include "rules/rules.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "core/sock.h"
#include "stack/tsnetif.h"

#define FLOW_EARLY_MS	10	/* header waits this long for first bytes */
#define FLOW_MEM_MIN	1024	/* smallest download read under a budget */
#define FLOW_ROOM_MIN	1024	/* smaller lwIP room: wait for the app's acks */
#define FLOW_RETRY_MS	20	/* lwIP out of memory: try again after */

_Static_assert(FLOW_UP_ROOM >= OUTER_HEADROOM,
    "the upload's gather has the outer's headroom");
_Static_assert(FLOW_UP_MAX == OUTER_WRITE_CHUNKS * OUTER_CHUNK_MAX,
    "the upload's gather is one outer_write of full chunks");
_Static_assert(FLOW_STAGE > OUTER_CHUNK_MAX,
    "a pbuf written as it is makes more than one chunk (in place)");

const char *
flow_dst(const struct flow *f, char *buf, size_t len)
{
	return addr_ip_fmt(&f->dst, buf, len);
}

const char *
flow_domain(const struct flow *f)
{
	return f->domain != NULL ? f->domain : "";
}

int
flow_set_domain(struct flow *f, const char *name)
{
	free(f->domain);
	f->domain = strdup(name);
	return f->domain != NULL ? 0 : -1;
}

static void
flow_detach_pcb(struct flow *f, bool abort_app)
{
	struct tcp_pcb *pcb = f->pcb;

	if (pcb == NULL)
		return;
	f->pcb = NULL;
	tcp_arg(pcb, NULL);
	tcp_recv(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
	if (!abort_app && tcp_close(pcb) == ERR_OK)
		return;
	tcp_abort(pcb);
}

/* Health: how much its outer connection had to send again (health.h). */
static void
flow_health_retrans(struct flow *f)
{
	uint32_t segs, rtx;

	if (f->obr != NULL && f->obr->has_server && f->status_ok &&
	    sock_tcp_retrans(f->fd, &segs, &rtx) == 0)
		outbound_retrans(f->obr, segs, rtx);
}

/* What was kept for a retry goes (the status came, or the flow ends). */
static void
flow_replay_free(struct flow *f)
{
	limit_mem_give(&f->env->mem, f->replay_len);
	free(f->replay);
	f->replay = NULL;
	f->replay_len = 0;
}

/*
 * A pooled connection before the server's status: the app's bytes among
 * the n just written at data (after what was left of the header) are
 * kept, charged like the queue they left, up to FLOW_REPLAY_MAX.
 */
static void
flow_replay_keep(struct flow *f, const uint8_t *data, size_t n)
{
	size_t h = f->hdr_len - f->hdr_off;
	uint8_t *r;

	if (!f->pooled || f->status_ok || f->replay_lost || n <= h)
		return;
	data += h;
	n -= h;
	if (f->replay_len + n > FLOW_REPLAY_MAX ||
	    (r = realloc(f->replay, f->replay_len + n)) == NULL) {
		flow_replay_free(f);
		f->replay_lost = true;
		return;
	}
	memcpy(r + f->replay_len, data, n);
	f->replay = r;
	f->replay_len += n;
	limit_mem_force(&f->env->mem, n);
}

int
flow_replay_requeue(struct flow *f)
{
	size_t n = f->replay_len;
	struct pbuf *p;

	if (n == 0)
		return 0;
	if ((p = pbuf_alloc(PBUF_RAW, (u16_t)n, PBUF_RAM)) == NULL)
		return -1;
	memcpy(p->payload, f->replay, n);
	p->next = f->inq;
	f->inq = p;
	if (f->inq_tail == NULL)
		f->inq_tail = p;
	/* The charge moves with the bytes, from the replay to the queue. */
	f->inq_len += n;
	f->up -= n;
	f->requeued += n;
	free(f->replay);
	f->replay = NULL;
	f->replay_len = 0;
	return 0;
}

/*
 * The single teardown.  abort: reset both sides (RST to the app, RST on
 * the outer stream); otherwise close both gracefully.  Idempotent; the
 * struct is freed at the end of the loop iteration.
 */
void
flow_close(struct flow *f, bool abort, const char *reason)
{
	struct flow_env *env = f->env;
	char dst[ADDR_STRLEN], why[128];

	if (f->closing)
		return;
	f->closing = true;
	flow_detach_pcb(f, abort);
	loop_fd_del(env->loop, &f->lfd);
	dialer_cancel(f->dial);		/* its stream dies with the job */
	f->dial = NULL;
	flow_ungate(f);
	loop_timer_cancel(env->loop, &f->timer);
	loop_timer_cancel(env->loop, &f->early);
	loop_timer_cancel(env->loop, &f->retry);
	flow_health_retrans(f);
	if (f->out != NULL) {
		/* A framed flow that ended cleanly: its connection may carry
		 * the next one (pool.h). */
		if (!abort && outer_framed(f->out) && f->obr != NULL &&
		    pool_give(f->obr->pool, f->out) == 0)
			f->out = NULL;
		else if (abort)
			outer_abort(f->out);
		else {
			if (outer_frame_idle(f->out)) {
				outer_frame_end(f->out);
				(void)outer_shutdown_write(f->out);
			}
			outer_free(f->out);
		}
		f->out = NULL;
	} else if (f->fd >= 0) {
		sock_close_rst(f->fd);
	}
	f->fd = -1;
	if (f->inq != NULL)
		pbuf_free(f->inq);
	f->inq = f->inq_tail = NULL;
	limit_mem_give(&env->mem, f->inq_len + f->mem_down + f->pend_len);
	f->inq_len = f->mem_down = f->pend_len = f->pend_off = 0;
	free(f->pend);
	f->pend = NULL;
	flow_replay_free(f);
	limit_mem_unwait(&env->mem, &f->mw);
	if (f->hdr != NULL)	/* the request: a MAC, or trojan's hash */
		sodium_memzero(f->hdr, f->hdr_len);
	free(f->hdr);
	f->hdr = NULL;
	flow_held_del(f);
	free(f->syn);
	f->syn = NULL;
	flow_socks5_free(f->socks);
	f->socks = NULL;
	env->nflows--;
	if (env->all_flows != NULL)
		atomic_fetch_sub(env->all_flows, 1);
	env->stats.bytes_up += f->up;
	env->stats.bytes_down += f->down;
	if (f->obr != NULL)
		outbound_close(f->obr, f->failed, f->up, f->down);
	log_at(f->internal ? LOG_LVL_WARN : log_flow_level(),
	    "flow %llu %s%s%s%s: %s, up %llu down %llu bytes, %llu ms, "
	    "outbound %s, %s",
	    (unsigned long long)f->id, flow_dst(f, dst, sizeof(dst)),
	    f->domain != NULL ? " (" : "", flow_domain(f),
	    f->domain != NULL ? ")" : "", reason,
	    (unsigned long long)f->up, (unsigned long long)f->down,
	    (unsigned long long)(loop_now(env->loop) - f->start_ms),
	    f->obr != NULL ? outbound_name(f->obr) : "none",
	    f->obr == NULL ? "not chosen" :
	    client_route_why(f->obr, f->rule, why, sizeof(why)));
	LIST_REMOVE(f, entry);
	LIST_INSERT_HEAD(&env->reap, f, entry);
}

void
flow_fail(struct flow *f, const char *reason)
{
	if (f->closing)
		return;
	if (flow_retry(f, reason) == 0)
		return;
	f->failed = true;
	f->env->stats.failed++;
	if (f->internal)
		f->env->stats.internal++;
	stats_reason_add(&f->env->stats.failures, reason);
	/* Health (health.h): its server or proxy never answered. */
	if (!f->internal && !f->status_ok && !f->answered && f->obr != NULL &&
	    f->obr->has_server)
		outbound_fail(f->obr, reason);
	/* The server (or proxy) could not be reached or did not finish
	 * its handshake: what status shows next to the last contact. */
	if (!f->internal && f->phase != FLOW_RELAY && f->ob->handshake != NULL)
		stats_contact_fail(&f->env->stats.contact,
		    loop_now(f->env->loop), reason);
	flow_close(f, true, reason);
}

void
flow_fail_internal(struct flow *f, const char *reason)
{
	f->internal = true;
	flow_fail(f, reason);
}

/* ---- lwIP callbacks: queue and mark, never tear down ----------------- */

/* Appends a pbuf chain without pbuf_cat(): pbuf_cat walks the whole queue
 * to fix tot_len, which is quadratic in the queue length; we track the
 * queue's length ourselves and never use tot_len of queued pbufs. */
static void
flow_queue_append(struct flow *f, struct pbuf *p)
{
	struct pbuf *last;

	/* Already received: charged even past the budget (see flow_recved). */
	limit_mem_force(&f->env->mem, p->tot_len);
	f->inq_len += p->tot_len;
	for (last = p; last->next != NULL; last = last->next)
		;
	if (f->inq_tail != NULL)
		f->inq_tail->next = p;
	else
		f->inq = p;
	f->inq_tail = last;
}

static err_t
flow_on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct flow *f = arg;

	if (p == NULL) {
		f->app_fin = true;
	} else if (err != ERR_OK) {
		pbuf_free(p);
		return ERR_OK;
	} else {
		flow_queue_append(f, p);
		f->ack_pending = true;
		/* Relaying, the flow's pass in this iteration ACKs what the
		 * whole TUN batch brought, with the window its writes opened. */
		if (f->phase == FLOW_RELAY && !f->closing)
			tsnetif_ack_defer(pcb);
	}
	flow_mark_dirty(f);
	return ERR_OK;
}

static err_t
flow_on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	struct flow *f = arg;

	size_t acked = len < f->mem_down ? len : f->mem_down;

	(void)pcb;
	limit_mem_give(&f->env->mem, acked);
	f->mem_down -= acked;
	if (f->down_blocked || f->pend_len > 0)
		flow_mark_dirty(f);
	return ERR_OK;
}

static void
flow_on_err(void *arg, err_t err)
{
	struct flow *f = arg;

	/* lwIP has already freed the pcb. */
	f->pcb = NULL;
	if (err == ERR_CLSD) {
		/* A graceful end of both directions on the app's side (see
		 * flow_work): what is queued still goes to the server. */
		f->app_fin = f->app_shut = true;
		flow_mark_dirty(f);
		return;
	}
	flow_close(f, true, err == ERR_RST ? "app reset" : "app connection aborted");
}

/* ---- app -> server ---------------------------------------------------- */

/* Copies up to max pending bytes (header first, then queue) to out. */
static size_t
flow_gather(struct flow *f, uint8_t *out, size_t max)
{
	size_t n = 0, k;
	struct pbuf *q;

	if (f->hdr_off < f->hdr_len) {
		k = f->hdr_len - f->hdr_off;
		if (k > max)
			k = max;
		memcpy(out, f->hdr + f->hdr_off, k);
		n = k;
	}
	for (q = f->inq; q != NULL && n < max; q = q->next) {
		k = q->len;
		if (k > max - n)
			k = max - n;
		memcpy(out + n, q->payload, k);
		n += k;
	}
	return n;
}

/*
 * Opens the app's window by n bytes, which have left.  Over the memory
 * budget the window stays shut instead (the app's TCP waits, nothing is
 * dropped) and opens once memory is free (flow_on_memory).
 */
static void
flow_recved(struct flow *f, size_t n)
{
	struct limit_mem *m = &f->env->mem;
	size_t k;

	n += f->recved_owed;
	f->recved_owed = 0;
	if (f->pcb == NULL)
		return;
	if (m->max != 0 && m->used + m->unit > m->max) {
		f->recved_owed = n;
		m->denied++;
		limit_mem_wait(m, &f->mw);
		return;
	}
	while (n > 0) {
		k = n > 0xffff ? 0xffff : n;
		tcp_recved(f->pcb, (u16_t)k);
		n -= k;
	}
}

/* Memory is free again: the flow's paused side goes on. */
static void
flow_on_memory(struct limit_waiter *w)
{
	struct flow *f = container_of(w, struct flow, mw);

	if (f->recved_owed > 0) {
		flow_recved(f, 0);
		f->ack_pending = true;
	}
	flow_mark_dirty(f);
}

/*
 * What the download may take from the budget now: up to want, at least
 * FLOW_MEM_MIN, or 0 (the flow waits for memory).  Charged; the caller
 * gives back what it did not use.
 */
static size_t
flow_mem_take(struct flow *f, size_t want)
{
	struct limit_mem *m = &f->env->mem;
	size_t avail;

	if (m->max == 0) {
		limit_mem_force(m, want);
		return want;
	}
	avail = m->used < m->max ? m->max - m->used : 0;
	if (avail > want)
		avail = want;
	if (avail < FLOW_MEM_MIN)
		m->denied++;
	else if (limit_mem_take(m, avail))	/* counts a refusal too */
		return avail;
	limit_mem_wait(m, &f->mw);
	return 0;
}

/* Takes n bytes written out off the queue; returns how many of them
 * were the app's (not the header), for the window update. */
static size_t
flow_consume(struct flow *f, size_t n)
{
	size_t k, app;

	k = f->hdr_len - f->hdr_off;
	if (k > n)
		k = n;
	f->hdr_off += k;
	n -= k;
	if (f->hdr != NULL && f->hdr_off == f->hdr_len) {
		sodium_memzero(f->hdr, f->hdr_len);
		free(f->hdr);
		f->hdr = NULL;
		f->hdr_len = f->hdr_off = 0;
	}
	f->up += n;
	f->inq_len -= n;
	limit_mem_give(&f->env->mem, n);
	k = n < f->requeued ? n : f->requeued;	/* sent once before */
	f->requeued -= k;
	app = n - k;
	while (n > 0) {
		k = n > 0xffff ? 0xffff : n;
		f->inq = pbuf_free_header(f->inq, (u16_t)k);
		n -= k;
	}
	if (f->inq == NULL)
		f->inq_tail = NULL;
	return app;
}

static void
flow_on_early(struct loop_timer *t)
{
	flow_mark_dirty(container_of(t, struct flow, early));
}

/*
 * On a warm connection the header could leave the moment the app's
 * handshake completes, a moment before the app's first bytes arrive.
 * Holding it for FLOW_EARLY_MS lets both share one TLS record, so the
 * server can forward the request as soon as the target answers, and
 * send its status with the answer (sess.c).  A header alone shows on
 * the wire as an exchange no app made: a small record, the server's
 * status at once, then the app's own first record (curl's ClientHello
 * takes a few ms after its connect).  Only a server-speaks-first
 * protocol, whose app sends nothing, pays the wait.
 */
static bool
flow_header_waits(struct flow *f)
{
	uint64_t age = loop_now(f->env->loop) - f->start_ms;

	if (f->hdr_off > 0 || f->hdr_len == 0 || f->inq_len > 0 || f->app_fin ||
	    f->held || age >= FLOW_EARLY_MS)
		return false;
	if (!loop_timer_armed(&f->early))
		loop_timer_set(f->env->loop, &f->early, FLOW_EARLY_MS - age);
	return true;
}

/* Whether p's payload has OUTER_HEADROOM bytes of its own in front of
 * it (the headers lwIP took off, bytes already consumed): not a pbuf
 * made to its size (flow_replay_requeue) or one that points elsewhere. */
static bool
flow_pbuf_room(struct pbuf *p)
{
	if (pbuf_add_header(p, OUTER_HEADROOM) != 0)
		return false;
	(void)pbuf_remove_header(p, OUTER_HEADROOM);
	return true;
}

/*
 * The next bytes to write: straight from the queue's first pbuf when it
 * holds a record's worth or more (with the TUN's offloads one pbuf is up
 * to 64 KiB of the app's data), else gathered into env->up (up to four
 * full records, sent together).  *room: the bytes have OUTER_HEADROOM
 * bytes of ours in front, so their records are sealed around them
 * (outer_write_inplace) instead of a copy of them.  A blocked write is
 * repeated with the same bytes (retry_len), which the same choice finds
 * again: the head of the queue has not moved.
 */
static uint8_t *
flow_next_up(struct flow *f, size_t *n, bool *room)
{
	uint8_t *up = f->env->up_mem + FLOW_UP_ROOM;
	size_t want = f->retry_len ? f->retry_len : FLOW_STAGE;

	if (f->hdr_off == f->hdr_len && f->inq != NULL && f->inq->len >= want) {
		*n = f->retry_len ? f->retry_len : f->inq->len;
		*room = flow_pbuf_room(f->inq);
		return f->inq->payload;
	}
	*n = flow_gather(f, up, f->retry_len ? f->retry_len : FLOW_UP_MAX);
	*room = true;
	return up;
}

static int
flow_pump_up(struct flow *f)
{
	uint8_t *data;
	size_t n, sent = 0;
	ssize_t w;
	bool room, last;
	int rc = 0;

	f->write_blocked = false;
	if (flow_header_waits(f))
		return 0;
	while (f->hdr_off < f->hdr_len || f->inq_len > 0) {
		data = flow_next_up(f, &n, &room);
		/* The app's last bytes: the end marker with them. */
		last = f->app_fin && !f->out_shut &&
		    n == f->hdr_len - f->hdr_off + f->inq_len;
		if (room)
			w = outer_write_inplace(f->out, data, n, last);
		else if (last)
			w = outer_write_last(f->out, data, n);
		else
			w = outer_write(f->out, data, n);
		if (w < 0) {
			if (errno != EAGAIN)
				rc = -1;
			if (rc < 0 && !f->status_ok)
				f->out_died = true;
			f->retry_len = n;
			f->write_blocked = true;
			break;
		}
		f->retry_len = 0;
		f->last_ms = loop_now(f->env->loop);
		flow_replay_keep(f, data, (size_t)w);
		sent += flow_consume(f, (size_t)w);
		/* tcp_recved() only announces a window opened by more than
		 * TCP_WND_UPDATE_THRESHOLD; a sender that saw a small window
		 * would otherwise wait for its persist timer (seconds, with
		 * backoff).  Announce every opening, once per iteration. */
		f->ack_pending = true;
	}
	/* The window opens once for the pass: per record, every other one
	 * crossed lwIP's threshold and was an ACK of its own to the app. */
	if (sent > 0)
		flow_recved(f, sent);
	if (rc < 0 || f->write_blocked)
		return rc;
	if (f->app_fin && !f->out_shut) {
		if (outer_shutdown_write(f->out) == 0)
			f->out_shut = true;
		else if (errno == EAGAIN)
			f->write_blocked = true;
		else
			return -1;
	}
	return 0;
}

/* ---- server -> app ---------------------------------------------------- */

/* Room lwIP has for the app's download now (tsnetif_tcp_room), at most
 * one staging buffer's worth. */
static size_t
flow_app_room(const struct flow *f)
{
	size_t room = tsnetif_tcp_room(f->pcb);

	return room > FLOW_STAGE ? FLOW_STAGE : room;
}

/*
 * Too little room to be worth a read: wait for the app's acks (sent
 * callback).  Only while something is queued, or no ack would come.
 */
static bool
flow_app_full(const struct flow *f, size_t room)
{
	return room == 0 ||
	    (room < FLOW_ROOM_MIN && tcp_sndqueuelen(f->pcb) > 0);
}

static void
flow_on_retry(struct loop_timer *t)
{
	flow_mark_dirty(container_of(t, struct flow, retry));
}

/* lwIP is out of memory for the download: try again after FLOW_RETRY_MS
 * (or sooner, when the app acks something). */
static void
flow_retry_later(struct flow *f)
{
	if (!loop_timer_armed(&f->retry))
		loop_timer_set(f->env->loop, &f->retry, FLOW_RETRY_MS);
}

/*
 * tcp_write for the app.  1: lwIP took the n bytes (charged to mem_down
 * until acked).  0: lwIP is out of memory, which is backpressure, not a
 * failure: the flow tries again when the app acks something or after
 * FLOW_RETRY_MS.  -1: another error.
 */
static int
flow_app_write(struct flow *f, const uint8_t *data, size_t n)
{
	err_t err;

	err = tcp_write(f->pcb, data, (u16_t)n, TCP_WRITE_FLAG_COPY);
	if (err == ERR_OK) {
		f->mem_down += n;
		f->down += n;
		return 1;
	}
	if (err != ERR_MEM)
		return -1;
	flow_retry_later(f);
	return 0;
}

/* Keeps n bytes lwIP did not take (still charged, now as pend_len). */
static int
flow_app_keep(struct flow *f, const uint8_t *data, size_t n)
{
	if ((f->pend = malloc(n)) == NULL)
		return -1;
	memcpy(f->pend, data, n);
	f->pend_len = n;
	f->pend_off = 0;
	return 0;
}

/* Writes what waits in f->pend.  1: all of it went; 0: the flow waits. */
static int
flow_app_flush(struct flow *f)
{
	size_t room, n;
	int r;

	while (f->pend_len > 0) {
		if ((room = flow_app_room(f)) == 0)
			return 0;
		n = f->pend_len < room ? f->pend_len : room;
		if ((r = flow_app_write(f, f->pend + f->pend_off, n)) <= 0)
			return r;
		f->pend_off += n;
		f->pend_len -= n;
	}
	free(f->pend);
	f->pend = NULL;
	f->pend_off = 0;
	return 1;
}

/* A version 3 request on a new connection answered with no status (a
 * close, or bytes that are none): the server may be older than version
 * 3.  The outbound's next flows go back to version 2 and ask again. */
static void
flow_v3_doubt(struct flow *f)
{
	if (!f->status_ok && outer_framed(f->out) && outer_flows(f->out) == 1)
		f->obr->v3 = false;
}

/* Health from the server's status: it refuses work of its own (its
 * connection limit), or what answered was no tunsplit server that knows
 * our key (a status no server sends: a cover site's bytes), which is a
 * refusal; any other status, the target's fate included, says the server
 * works, and how long it took is evidence too. */
static void
flow_health_status(struct flow *f, uint8_t st)
{
	uint64_t us = stats_now_us() - f->req_us;

	if (st > PROTO_ERR_LIMIT)
		flow_v3_doubt(f);
	if (st == PROTO_ERR_LIMIT)
		outbound_fail(f->obr, "server refused (connection limit)");
	else if (st > PROTO_ERR_LIMIT)
		outbound_refused(f->obr, "refused: no tunsplit status (key "
		    "not known there?)");
	else
		outbound_answer(f->obr, us > UINT32_MAX ? UINT32_MAX :
		    us == 0 ? 1 : (uint32_t)us);
}

/* The server closed (or reset) before its status: a tunsplit server
 * does that to a request it does not accept (a key it does not know,
 * without a cover site; the close is a reset when our first bytes came
 * with the request): refused, once the whole request was sent.  The
 * flow's failure reason, for it. */
static const char *
flow_health_unanswered(struct flow *f, bool reset)
{
	/* A pooled connection ending is no refusal yet: the server may
	 * have closed it while it waited (the flow goes again on a new
	 * connection, flow_retry, whose end judges). */
	f->out_died = true;
	if (f->hdr == NULL && f->obr != NULL && !f->pooled)
		outbound_refused(f->obr, reset ? "refused: reset right after "
		    "our request" : "refused: closed right after our "
		    "request");
	return reset ? "server reset before connect status" :
	    "server closed before connect status";
}

/* PROTO_STATUS_REUSE on an OK to a tagged version 2 request: the
 * server speaks version 3, and the outbound's next flows do too. */
static uint8_t
flow_status_byte(struct flow *f, uint8_t st)
{
	return outbound_status(f->obr, f->out, st);
}

/* The status byte.  A refusal is counted by its own reason (the status's
 * short name: "egress denied", "target refused"), not lumped together. */
static int
flow_take_status(struct flow *f, uint8_t **data, ssize_t *n,
    const char **why)
{
	char dst[ADDR_STRLEN];
	uint8_t st = flow_status_byte(f, (*data)[0]);

	stats_contact_ok(&f->env->stats.contact, loop_now(f->env->loop));
	f->answered = true;
	flow_health_status(f, st);

	if (st != PROTO_OK) {
		log_info("flow %llu %s: server: %s", (unsigned long long)f->id,
		    flow_dst(f, dst, sizeof(dst)), proto_status_str(st));
		*why = proto_status_reason(st);
		return -1;
	}
	f->status_ok = true;
	flow_replay_free(f);
	(*data)++;
	(*n)--;
	return 0;
}

/*
 * Faithful mode, SYN held: only the status byte is read.  OK: the SYN goes
 * to lwIP, which answers it (the app sees its connect succeed now, not
 * before).  Refused: the app's SYN gets an RST, as from the target.  Other
 * failures: nothing, so the app times out as it would on the direct path.
 */
static int
flow_held_status(struct flow *f, const char **why)
{
	uint8_t st;
	ssize_t r;

	f->down_blocked = true;	/* nowhere to deliver until the pcb exists */
	if (f->status_ok)
		return 0;
	if ((r = outer_read(f->out, &st, 1)) < 0 && errno == EAGAIN) {
		f->down_blocked = false;
		return 0;
	}
	if (r <= 0) {
		flow_v3_doubt(f);
		*why = flow_health_unanswered(f, r < 0);
		return -1;
	}
	st = flow_status_byte(f, st);
	stats_contact_ok(&f->env->stats.contact, loop_now(f->env->loop));
	f->answered = true;
	flow_health_status(f, st);
	if (st != PROTO_OK) {
		if (st == PROTO_ERR_REFUSED)
			tsnetif_reset_syn(f->syn, f->syn_len);
		*why = proto_status_reason(st);
		return -1;
	}
	f->status_ok = true;
	tsnetif_input(f->syn, f->syn_len);
	return 0;
}

/* The app's FIN once everything before it went; lwIP out of memory for
 * it waits like data. */
static int
flow_app_fin(struct flow *f, const char **why)
{
	err_t err;

	if (!f->out_eof || f->app_shut || f->pcb == NULL || f->pend_len > 0)
		return 0;
	if ((err = tcp_shutdown(f->pcb, 0, 1)) == ERR_OK) {
		f->app_shut = true;
		return 0;
	}
	if (err == ERR_MEM) {
		f->down_blocked = true;
		flow_retry_later(f);
		return 0;
	}
	f->internal = true;
	*why = "lwIP shutdown failed";
	return -1;
}

static int
flow_pump_down(struct flow *f, const char **why)
{
	struct limit_mem *m = &f->env->mem;
	uint8_t *data;
	size_t room;
	ssize_t r;
	int w;

	if (f->held)
		return flow_held_status(f, why);
	f->down_blocked = false;
	if (f->pcb != NULL && (w = flow_app_flush(f)) <= 0) {
		f->down_blocked = true;
		if (w == 0)
			return 0;
		f->internal = true;
		*why = "lwIP write failed";
		return -1;
	}
	while (!f->out_eof && f->pcb != NULL) {
		/* A pass the app's packets started reads the server only
		 * if something came since its last read blocked (bytes TLS
		 * holds come without an event; after a hang-up none come). */
		if (f->out_rd_idle && !f->hup && outer_pending(f->out) == 0)
			break;
		room = flow_app_room(f);
		if (flow_app_full(f, room) ||
		    (room = flow_mem_take(f, room)) == 0) {
			f->down_blocked = true;
			break;
		}
		data = f->env->stage;
		r = outer_read(f->out, data, room);
		/* Charged from here on: what lwIP holds until the app acks. */
		limit_mem_give(m, room - (r > 0 ? (size_t)r : 0));
		if (r == 0) {
			f->out_eof = true;
			if (!f->status_ok) {
				flow_v3_doubt(f);
				*why = flow_health_unanswered(f, false);
				return -1;
			}
			break;
		}
		if (r < 0) {
			if (errno == EAGAIN) {
				f->out_rd_idle = true;
				break;
			}
			flow_v3_doubt(f);
			*why = f->status_ok ? "server reset" :
			    flow_health_unanswered(f, true);
			return -1;
		}
		f->last_ms = loop_now(f->env->loop);
		room = (size_t)r;
		if (!f->status_ok && flow_take_status(f, &data, &r, why) < 0) {
			limit_mem_give(m, room);
			return -1;
		}
		limit_mem_give(m, room - (size_t)r);	/* the status byte */
		if (r == 0)
			continue;
		if ((w = flow_app_write(f, data, (size_t)r)) == 1)
			continue;
		if (w == 0 && flow_app_keep(f, data, (size_t)r) == 0) {
			f->down_blocked = true;
			break;
		}
		limit_mem_give(m, (size_t)r);
		f->internal = true;
		*why = w == 0 ? "out of memory" : "lwIP write failed";
		return -1;
	}
	return flow_app_fin(f, why);
}

/* ---- the per-iteration pass ------------------------------------------ */

void
flow_mark_dirty(struct flow *f)
{
	if (f->dirty || f->closing)
		return;
	f->dirty = true;
	SLIST_INSERT_HEAD(&f->env->dirty, f, dirty_entry);
}

static bool
flow_done(const struct flow *f)
{
	return f->app_fin && f->out_shut && f->out_eof && f->app_shut &&
	    f->inq_len == 0;
}

static void
flow_work(struct flow *f)
{
	const char *why = "outer write failed";

	if (f->phase == FLOW_SNIFF)
		flow_sniff_work(f);
	if (f->phase != FLOW_RELAY)
		return;
	if (flow_pump_up(f) < 0) {
		flow_fail(f, why);
		return;
	}
	if (flow_pump_down(f, &why) < 0) {
		flow_fail(f, why);
		return;
	}
	if (f->pcb != NULL) {
		/* ACK now, not at the 250 ms timer -- when it says something
		 * new: tcp_recved() may have sent it already. */
		if (f->ack_pending && tsnetif_ack_owed(f->pcb))
			tcp_set_flags(f->pcb, TF_ACK_NOW);
		tcp_output(f->pcb);
	}
	f->ack_pending = false;
	/*
	 * Both FINs have passed lwIP: the app's side is finished, but upload
	 * bytes may still wait for the outer stream.  Hand the pcb back now:
	 * lwIP would otherwise end it under us -- on the app's last ACK
	 * (LAST_ACK) with ERR_CLSD, which aborted the flow and dropped those
	 * bytes (e2e_early_close), or by freeing it in TIME_WAIT without any
	 * callback at all.
	 */
	if (f->app_fin && f->app_shut && f->pcb != NULL)
		flow_detach_pcb(f, false);
	if (flow_done(f)) {
		flow_close(f, false, "closed");
		return;
	}
	flow_update_events(f);
}

/* Works each dirty flow once per round; flows marked meanwhile (by
 * lwIP callbacks, or a flow's own work) go in the next round. */
static void
flow_run_dirty(struct flow_env *env)
{
	struct flow_work_list batch;
	struct flow *f;

	while (!SLIST_EMPTY(&env->dirty)) {
		batch = env->dirty;
		SLIST_INIT(&env->dirty);
		while ((f = SLIST_FIRST(&batch)) != NULL) {
			SLIST_REMOVE_HEAD(&batch, dirty_entry);
			f->dirty = false;
			if (!f->closing)
				flow_work(f);
		}
	}
}

static void
flow_on_iteration(void *arg)
{
	struct flow_env *env = arg;
	struct flow *f;

	flow_run_dirty(env);
	/* Memory given back in this pass goes to the flows waiting for it
	 * (in turn), which then work in this same iteration. */
	env->mem.max = flow_max_memory(env);	/* reload */
	limit_mem_wake(&env->mem);
	flow_run_dirty(env);
	if (LIST_EMPTY(&env->reap))
		return;
	while ((f = LIST_FIRST(&env->reap)) != NULL) {
		LIST_REMOVE(f, entry);
		outbound_unref(f->obr);
		conf_unref(f->conf);
		free(f->domain);
		free(f);
	}
	loop_trim_hint(env->loop);
}

/* ---- outer stream events ------------------------------------------------ */

void
flow_update_events(struct flow *f)
{
	uint32_t ev = 0;

	if (f->closing)
		return;
	if (f->hup) {
		loop_fd_del(f->env->loop, &f->lfd);
		return;
	}
	switch (f->phase) {
	case FLOW_SNIFF:		/* nothing dialled yet */
		return;
	case FLOW_CONNECT:
		ev = EPOLLOUT;
		break;
	case FLOW_HANDSHAKE:
		ev = outer_events(f->out);
		break;
	case FLOW_RELAY:
		if (!f->out_eof && !f->down_blocked)
			ev |= EPOLLIN;
		if (f->write_blocked)
			ev |= EPOLLOUT | outer_events(f->out);
		break;
	}
	loop_fd_mod(f->env->loop, &f->lfd, ev);
}

/* ---- new flows (see flow_tcp_open.c) ----------------------------------- */

/* A new flow for dst, not yet dialled nor listed. */
struct flow *
flow_alloc(struct flow_env *env, const struct addr *dst)
{
	struct flow *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->env = env;
	/* Unique across workers: worker w's are w + 1 + k * workers. */
	f->id = ++env->next_id * (env->share > 1 ? env->share : 1) -
	    env->id_back;
	f->mw.fn = flow_on_memory;
	f->fd = -1;
	addr_pack(&f->dst, dst);
	/* The flow's generation of the configuration, for its whole life
	 * (a reload makes a new one for new flows). */
	f->conf = conf_ref(env->conf);
	/* No way out until client_route chose one (flow_tcp_open.c). */
	f->ob = flow_outbound(CONF_PROTO_BLOCK);
	f->rule = -1;
	f->dial_us = stats_now_us();
	loop_timer_init(&f->early, flow_on_early);
	loop_timer_init(&f->retry, flow_on_retry);
	if (env->fakeip != NULL && flow_fake_name(f) == -1) {
		flow_discard(f);
		errno = EHOSTUNREACH;
		return NULL;
	}
	return f;
}

void
flow_discard(struct flow *f)
{
	flow_ungate(f);
	if (f->obr != NULL)
		outbound_close(f->obr, true, 0, 0);
	outbound_unref(f->obr);
	conf_unref(f->conf);
	free(f->domain);
	free(f);
}

void
flow_attach_pcb(struct flow *f, struct tcp_pcb *pcb)
{
	f->pcb = pcb;
	tcp_arg(pcb, f);
	tcp_recv(pcb, flow_on_recv);
	tcp_sent(pcb, flow_on_sent);
	tcp_err(pcb, flow_on_err);
	tcp_nagle_disable(pcb);
}

/* With workers two may both see the last free one at once: max_flows
 * is then passed by one at most per worker, for as long as they race. */
bool
flow_room(const struct flow_env *env)
{
	unsigned n = env->all_flows != NULL ? atomic_load(env->all_flows) :
	    env->nflows;

	return n < env->conf->client.max_flows;
}

size_t
flow_max_memory(const struct flow_env *env)
{
	size_t n = env->share > 1 ? env->share : 1;

	return (env->conf->client.max_buffer_memory + n - 1) / n;
}

int
flow_env_init(struct flow_env *env)
{
	LIST_INIT(&env->all);
	SLIST_INIT(&env->dirty);
	LIST_INIT(&env->reap);
	limit_mem_init(&env->mem, flow_max_memory(env), FLOW_STAGE);
	return loop_on_iteration(env->loop, flow_on_iteration, env);
}

void
flow_close_all(struct flow_env *env)
{
	while (!LIST_EMPTY(&env->all))
		flow_close(LIST_FIRST(&env->all), true, "shutdown");
	flow_on_iteration(env);
	flow_held_free(env);
}

void
flow_tcp_foreach(struct flow_env *env,
    void (*cb)(void *arg, const struct flow_info *), void *arg)
{
	static const char *const phases[] = {
		[FLOW_CONNECT] = "connect", [FLOW_HANDSHAKE] = "handshake",
		[FLOW_RELAY] = "relay", [FLOW_SNIFF] = "sniff",
	};
	struct flow_info	 fi;
	struct flow		*f;
	struct addr		 dst;

	LIST_FOREACH(f, &env->all, entry) {
		fi.id = f->id;
		fi.dst = addr_unpack(&f->dst, &dst);
		fi.state = f->phase == FLOW_HANDSHAKE ?
		    f->ob->handshake_state : phases[f->phase];
		fi.start_ms = f->start_ms;
		fi.up = f->up;
		fi.down = f->down;
		fi.fd = f->out != NULL ? outer_fd(f->out) : -1;
		fi.domain = flow_domain(f);
		fi.outbound = f->obr != NULL ? outbound_name(f->obr) : NULL;
		fi.rule = f->rule;
		fi.obr = f->obr;
		cb(arg, &fi);
	}
}
