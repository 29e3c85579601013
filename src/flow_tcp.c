/*
 * Client TCP flows: lwIP pcb <-> outer stream.  See flow_tcp.h for the
 * ownership and backpressure rules.
 *
 * Life of a flow: the app's handshake completes in lwIP (fast connect) and
 * the flow dials its outbound at once (client.protocol):
 *
 *   tunsplit  TLS to the server; the request header and whatever the app
 *             already sent leave together; the first byte back is the
 *             server's connect status: non-zero resets the app's connection.
 *   trojan    the same with trojan's request, which has no status.
 *   socks5    its own plain TCP connection to the proxy, the SOCKS5
 *             negotiation (flow_socks5.c); the CONNECT reply is the status.
 *   direct    a plain TCP connection to the destination itself, marked
 *             (client.mark) so that it leaves outside the TUN.
 *   block     no flow at all: the SYN is answered with an RST.
 */
#include "flow_tcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>

#include <sodium.h>

#include "lwip/tcp.h"
#include "lwip/pbuf.h"

#include "conf.h"
#include "flow_socks5.h"
#include "flow_udp.h"
#include "frame.h"
#include "log.h"
#include "loop.h"
#include "outer.h"
#include "pool.h"
#include "proto_trojan.h"
#include "socks5.h"
#include "tsnetif.h"
#include "sock.h"

#define FLOW_EARLY_MS	2	/* header waits this long for first bytes */
#define FLOW_LIMIT_LOG_MS	10000	/* refusal messages at most this often */
#define FLOW_MEM_MIN	1024	/* smallest download read under a budget */

enum flow_phase {
	FLOW_CONNECT,		/* outer TCP connect in progress */
	FLOW_TLS,		/* TLS handshake */
	FLOW_SOCKS,		/* SOCKS5 negotiation with the proxy */
	FLOW_RELAY,		/* header sent or queued; relaying */
};

struct flow {
	uint64_t	 id;
	struct flow_env	*env;
	struct flow	*next, *prev;		/* env->all, or env->reap */
	struct flow	*dirty_next;
	bool		 dirty;
	bool		 closing;

	enum flow_phase	 phase;
	struct tcp_pcb	*pcb;			/* NULL once lwIP freed it */
	struct outer	*out;
	int		 fd;
	struct loop_fd	 lfd;
	struct loop_timer timer;
	struct loop_timer early;		/* header waits for first bytes */
	struct flow_socks5 *socks;		/* FLOW_SOCKS only */
	bool		 pooled;		/* outer came from the warm pool */
	/* connect_mode faithful: the app's SYN is held (no pcb yet) until the
	 * server reports the target connected; then it is fed to lwIP again. */
	bool		 held;
	uint8_t		*syn;
	size_t		 syn_len;
	struct addr	 app;			/* the app's end, to match the pcb */
	struct addr	 dst;

	/* app -> server: header bytes first, then queued pbufs.  The pbufs
	 * are linked through ->next by hand (see flow_queue_append); only
	 * ->len of each is meaningful. */
	uint8_t		*hdr;
	size_t		 hdr_len, hdr_off;
	struct pbuf	*inq, *inq_tail;
	size_t		 inq_len;
	size_t		 retry_len;		/* blocked write to repeat */

	bool		 app_fin;		/* app sent FIN */
	bool		 out_shut;		/* close_notify sent */
	bool		 out_eof;		/* server finished sending */
	bool		 app_shut;		/* FIN queued to the app */
	bool		 status_ok;		/* server connected the target */
	bool		 down_blocked;		/* waiting for lwIP send room */
	bool		 write_blocked;		/* outer write wants an event */
	bool		 hup;			/* socket hung up: no more events */
	bool		 ack_pending;

	uint64_t	 start_ms, last_ms;
	uint64_t	 dial_us;		/* outer connect started */
	uint64_t	 up, down;

	/* client.max_buffer_memory (env->mem): inq_len is charged too. */
	size_t		 mem_down;		/* written to lwIP, not acked */
	size_t		 recved_owed;		/* window held back, for memory */
	struct limit_waiter mw;
};

static void flow_mark_dirty(struct flow *);
static void flow_update_events(struct flow *);

static const char *
flow_dst(const struct flow *f, char *buf, size_t len)
{
	return addr_fmt(&f->dst, buf, len);
}

static void
flow_list_remove(struct flow **head, struct flow *f)
{
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		*head = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	f->next = f->prev = NULL;
}

static void
flow_list_push(struct flow **head, struct flow *f)
{
	f->prev = NULL;
	f->next = *head;
	if (*head != NULL)
		(*head)->prev = f;
	*head = f;
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

/*
 * The single teardown.  abort: reset both sides (RST to the app, RST on
 * the outer stream); otherwise close both gracefully.  Idempotent; the
 * struct is freed at the end of the loop iteration.
 */
static void
flow_close(struct flow *f, bool abort, const char *reason)
{
	struct flow_env *env = f->env;
	char dst[ADDR_STRLEN];

	if (f->closing)
		return;
	f->closing = true;
	flow_detach_pcb(f, abort);
	loop_fd_del(env->loop, &f->lfd);
	loop_timer_cancel(env->loop, &f->timer);
	loop_timer_cancel(env->loop, &f->early);
	if (f->out != NULL) {
		if (abort)
			outer_abort(f->out);
		else
			outer_free(f->out);
		f->out = NULL;
	} else if (f->fd >= 0) {
		sock_close_rst(f->fd);
	}
	f->fd = -1;
	if (f->inq != NULL)
		pbuf_free(f->inq);
	f->inq = f->inq_tail = NULL;
	limit_mem_give(&env->mem, f->inq_len + f->mem_down);
	f->inq_len = f->mem_down = 0;
	limit_mem_unwait(&env->mem, &f->mw);
	free(f->hdr);
	f->hdr = NULL;
	free(f->syn);
	f->syn = NULL;
	flow_socks5_free(f->socks);
	f->socks = NULL;
	env->nflows--;
	env->stats.bytes_up += f->up;
	env->stats.bytes_down += f->down;
	log_info("flow %llu %s: %s, up %llu down %llu bytes, %llu ms",
	    (unsigned long long)f->id, flow_dst(f, dst, sizeof(dst)), reason,
	    (unsigned long long)f->up, (unsigned long long)f->down,
	    (unsigned long long)(loop_now(env->loop) - f->start_ms));
	flow_list_remove(&env->all, f);
	flow_list_push(&env->reap, f);
}

static void
flow_fail(struct flow *f, const char *reason)
{
	f->env->stats.failed++;
	stats_reason_add(&f->env->stats.failures, reason);
	flow_close(f, true, reason);
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

	(void)pcb;
	if (p == NULL) {
		f->app_fin = true;
	} else if (err != ERR_OK) {
		pbuf_free(p);
		return ERR_OK;
	} else {
		flow_queue_append(f, p);
		f->ack_pending = true;
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
	if (f->down_blocked)
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

static void
flow_consume(struct flow *f, size_t n)
{
	size_t k;

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
	flow_recved(f, n);
	while (n > 0) {
		k = n > 0xffff ? 0xffff : n;
		f->inq = pbuf_free_header(f->inq, (u16_t)k);
		n -= k;
	}
	if (f->inq == NULL)
		f->inq_tail = NULL;
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
 * server can forward the request as soon as the target answers.
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

static int
flow_pump_up(struct flow *f)
{
	uint8_t *stage = f->env->stage;
	size_t n;
	ssize_t w;

	f->write_blocked = false;
	if (flow_header_waits(f))
		return 0;
	while (f->hdr_off < f->hdr_len || f->inq_len > 0) {
		n = flow_gather(f, stage, f->retry_len ? f->retry_len : FLOW_STAGE);
		w = outer_write(f->out, stage, n);
		if (w < 0) {
			if (errno != EAGAIN)
				return -1;
			f->retry_len = n;
			f->write_blocked = true;
			return 0;
		}
		f->retry_len = 0;
		f->last_ms = loop_now(f->env->loop);
		flow_consume(f, (size_t)w);
		/* tcp_recved() only announces a window opened by more than
		 * TCP_WND_UPDATE_THRESHOLD; a sender that saw a small window
		 * would otherwise wait for its persist timer (seconds, with
		 * backoff).  Announce every opening, once per iteration. */
		f->ack_pending = true;
	}
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

/* Room lwIP can take without failing tcp_write (bytes and segments). */
static size_t
flow_app_room(const struct flow *f)
{
	size_t room = tcp_sndbuf(f->pcb);

	if (tcp_sndqueuelen(f->pcb) + 4 + FLOW_STAGE / TCP_MSS >= TCP_SND_QUEUELEN)
		return 0;
	return room > FLOW_STAGE ? FLOW_STAGE : room;
}

static int
flow_take_status(struct flow *f, uint8_t **data, ssize_t *n)
{
	char dst[ADDR_STRLEN];
	uint8_t st = (*data)[0];

	if (st != PROTO_OK) {
		log_info("flow %llu %s: server: %s", (unsigned long long)f->id,
		    flow_dst(f, dst, sizeof(dst)), proto_status_str(st));
		return -1;
	}
	f->status_ok = true;
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
		*why = "server closed before connect status";
		return -1;
	}
	if (st != PROTO_OK) {
		if (st == PROTO_ERR_REFUSED)
			tsnetif_reset_syn(f->syn, f->syn_len);
		*why = proto_status_str(st);
		return -1;
	}
	f->status_ok = true;
	tsnetif_input(f->syn, f->syn_len);
	return 0;
}

static int
flow_pump_down(struct flow *f, const char **why)
{
	struct limit_mem *m = &f->env->mem;
	uint8_t *data;
	size_t room;
	ssize_t r;

	if (f->held)
		return flow_held_status(f, why);
	f->down_blocked = false;
	while (!f->out_eof && f->pcb != NULL) {
		if ((room = flow_app_room(f)) < 1024 ||
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
				*why = "server closed before connect status";
				return -1;
			}
			break;
		}
		if (r < 0) {
			if (errno == EAGAIN)
				break;
			*why = "server reset";
			return -1;
		}
		f->last_ms = loop_now(f->env->loop);
		room = (size_t)r;
		if (!f->status_ok && flow_take_status(f, &data, &r) < 0) {
			limit_mem_give(m, room);
			*why = "target connect failed";
			return -1;
		}
		limit_mem_give(m, room - (size_t)r);	/* the status byte */
		if (r > 0 && tcp_write(f->pcb, data, (u16_t)r,
		    TCP_WRITE_FLAG_COPY) != ERR_OK) {
			limit_mem_give(m, (size_t)r);
			*why = "lwIP out of memory";
			return -1;
		}
		f->mem_down += (size_t)r;
		f->down += (uint64_t)r;
	}
	if (f->out_eof && !f->app_shut && f->pcb != NULL) {
		if (tcp_shutdown(f->pcb, 0, 1) != ERR_OK) {
			*why = "lwIP shutdown failed";
			return -1;
		}
		f->app_shut = true;
	}
	return 0;
}

/* ---- the per-iteration pass ------------------------------------------ */

static void
flow_mark_dirty(struct flow *f)
{
	if (f->dirty || f->closing)
		return;
	f->dirty = true;
	f->dirty_next = f->env->dirty;
	f->env->dirty = f;
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
		if (f->ack_pending)
			tcp_set_flags(f->pcb, TF_ACK_NOW);	/* ACK now, not at the 250 ms timer */
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

static void
flow_run_dirty(struct flow_env *env)
{
	struct flow *f, *next;

	while ((f = env->dirty) != NULL) {
		env->dirty = NULL;
		for (; f != NULL; f = next) {
			next = f->dirty_next;
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
	env->mem.max = env->conf->client.max_buffer_memory;	/* reload */
	limit_mem_wake(&env->mem);
	flow_run_dirty(env);
	while ((f = env->reap) != NULL) {
		env->reap = f->next;
		free(f);
	}
}

/* ---- outer stream events ------------------------------------------------ */

static void
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
	case FLOW_CONNECT:
		ev = EPOLLOUT;
		break;
	case FLOW_TLS:
	case FLOW_SOCKS:
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

/* What the outbound asks for: client.dns pins DNS over TCP to the
 * resolver too. */
static void
flow_target(const struct flow *f, struct addr *dst)
{
	*dst = f->dst;
	(void)flow_udp_dns_pin(f->env->conf, dst);
}

/*
 * The target is connected (socks5: the CONNECT reply; direct: the connect
 * itself).  Faithful: the held SYN goes to lwIP now, which answers it.
 */
static void
flow_connected(struct flow *f)
{
	f->status_ok = true;
	if (f->held)
		tsnetif_input(f->syn, f->syn_len);
}

static int
flow_start_relay(struct flow *f)
{
	struct flow_env *env = f->env;
	enum conf_proto proto = env->conf->client.protocol;
	struct proto_req req;
	struct addr dst;
	uint8_t buf[PROTO_REQ_MAX];
	ssize_t n;

	if (proto == CONF_PROTO_SOCKS5 || proto == CONF_PROTO_DIRECT) {
		/* No header: the stream is the target's already. */
		flow_socks5_free(f->socks);
		f->socks = NULL;
		f->phase = FLOW_RELAY;
		flow_connected(f);
		flow_mark_dirty(f);
		return 0;
	}
	memset(&req, 0, sizeof(req));
	req.kind = PROTO_KIND_TCP;
	req.ts = (uint64_t)time(NULL);
	randombytes_buf(req.nonce, sizeof(req.nonce));
	memcpy(req.user_id, env->user_id, sizeof(req.user_id));
	flow_target(f, &dst);
	frame_dest_from_addr(&req.dest, &dst);
	if (proto == CONF_PROTO_TROJAN) {
		/* No status comes back: the stream counts as connected now,
		 * and a target the server cannot reach shows as its close. */
		n = proto_trojan_encode(buf, sizeof(buf),
		    env->conf->client.trojan_hex, PROTO_TROJAN_CMD_CONNECT,
		    &req.dest);
		f->status_ok = true;
	} else
		n = proto_req_encode(buf, sizeof(buf), &req,
		    env->conf->client.key, 0);
	if (n < 0 || (f->hdr = malloc((size_t)n)) == NULL)
		return -1;
	memcpy(f->hdr, buf, (size_t)n);
	sodium_memzero(buf, sizeof(buf));
	f->hdr_len = (size_t)n;
	f->hdr_off = 0;
	f->phase = FLOW_RELAY;
	flow_mark_dirty(f);
	return 0;
}

/* The outbound's TCP connect failed with err. */
static void
flow_connect_failed(struct flow *f, int err)
{
	char dst[ADDR_STRLEN];

	errno = err;
	switch (f->env->conf->client.protocol) {
	case CONF_PROTO_SOCKS5:
		log_warn("flow %llu: connect to the socks5 proxy",
		    (unsigned long long)f->id);
		flow_fail(f, "socks5 proxy unreachable");
		break;
	case CONF_PROTO_DIRECT:
		log_info("flow %llu %s: connect: %s", (unsigned long long)f->id,
		    flow_dst(f, dst, sizeof(dst)), strerror(err));
		/* Faithful: a refusal reaches the app as the target's RST;
		 * anything else leaves it to time out, as it would. */
		if (err == ECONNREFUSED && f->held)
			tsnetif_reset_syn(f->syn, f->syn_len);
		flow_fail(f, err == ECONNREFUSED ? "target refused" :
		    "target unreachable");
		break;
	default:
		log_warn("flow %llu: connect to server",
		    (unsigned long long)f->id);
		flow_fail(f, "server unreachable");
		break;
	}
}

/* FLOW_SOCKS: one more step of the negotiation with the proxy. */
static void
flow_on_socks(struct flow *f)
{
	char detail[192], dst[ADDR_STRLEN];
	struct proto_dest pd;
	struct addr target;
	const char *why;
	uint8_t rep;
	int rc;

	if (f->socks == NULL) {
		flow_target(f, &target);
		frame_dest_from_addr(&pd, &target);
		if ((f->socks = flow_socks5_new(f->env->conf, &pd)) == NULL) {
			flow_fail(f, "out of memory");
			return;
		}
	}
	rc = flow_socks5_step(f->socks, f->out, &why, detail, sizeof(detail),
	    &rep);
	if (rc == 0)
		return;
	if (rc < 0) {
		/* The target's answer is news; the proxy's is trouble. */
		if (rep != 0)
			log_info("flow %llu %s: %s", (unsigned long long)f->id,
			    flow_dst(f, dst, sizeof(dst)), detail);
		else
			log_warnx("flow %llu %s: %s", (unsigned long long)f->id,
			    flow_dst(f, dst, sizeof(dst)), detail);
		if (rep == SOCKS5_REP_REFUSED && f->held)
			tsnetif_reset_syn(f->syn, f->syn_len);
		flow_fail(f, why);
		return;
	}
	stats_hist_add(&f->env->stats.handshake, stats_now_us() - f->dial_us);
	if (flow_start_relay(f) < 0)
		flow_fail(f, "out of memory");
}

static void
flow_on_io(struct loop_fd *lfd, uint32_t revents)
{
	struct flow *f = container_of(lfd, struct flow, lfd);
	int err, rc;

	if (f->closing)
		return;
	switch (f->phase) {
	case FLOW_CONNECT:
		if ((err = sock_connect_error(f->fd)) != 0) {
			flow_connect_failed(f, err);
			return;
		}
		if (f->env->conf->client.protocol == CONF_PROTO_SOCKS5) {
			f->phase = FLOW_SOCKS;
			flow_on_socks(f);
			break;
		}
		if (f->env->conf->client.protocol == CONF_PROTO_DIRECT) {
			stats_hist_add(&f->env->stats.handshake,
			    stats_now_us() - f->dial_us);
			if (flow_start_relay(f) < 0) {
				flow_fail(f, "out of memory");
				return;
			}
			break;
		}
		f->phase = FLOW_TLS;
		/* FALLTHROUGH */
	case FLOW_TLS:
		if ((rc = outer_handshake(f->out)) < 0) {
			flow_fail(f, "TLS handshake with server failed");
			return;
		}
		if (rc == 1)
			stats_hist_add(&f->env->stats.handshake,
			    stats_now_us() - f->dial_us);
		if (rc == 1 && flow_start_relay(f) < 0) {
			flow_fail(f, "out of memory");
			return;
		}
		break;
	case FLOW_SOCKS:
		flow_on_socks(f);
		break;
	case FLOW_RELAY:
		/* Hung up: the rest is already in the socket buffer; stop
		 * polling (level-triggered HUP would spin) and let the
		 * pumps, driven by lwIP, read it out. */
		if (revents & (EPOLLHUP | EPOLLERR))
			f->hup = true;
		flow_mark_dirty(f);
		break;
	}
	flow_update_events(f);
}

static void
flow_on_timer(struct loop_timer *t)
{
	struct flow *f = container_of(t, struct flow, timer);
	const struct conf *c = f->env->conf;
	uint64_t now = loop_now(f->env->loop), idle_at;

	if (!f->status_ok) {
		flow_fail(f, f->phase == FLOW_SOCKS ?
		    "socks5 negotiation timeout" : "connect timeout");
		return;
	}
	idle_at = f->last_ms + c->client.idle_timeout_ms;
	if (now >= idle_at) {
		flow_close(f, true, "idle timeout");
		return;
	}
	loop_timer_set(f->env->loop, &f->timer, idle_at - now);
}

/* ---- accept ------------------------------------------------------------- */

static void
flow_addr(struct addr *a, const ip_addr_t *ip, uint16_t port)
{
	if (IP_IS_V6_VAL(*ip))
		addr_from_raw(a, AF_INET6, ip_2_ip6(ip)->addr, port);
	else
		addr_from_raw(a, AF_INET, &ip_2_ip4(ip)->addr, port);
}

/*
 * A limit or a resource shortage refuses every new flow while it lasts,
 * which with busy apps is hundreds a second: one line per interval, with
 * how many were refused since the last one (the counters have them all).
 */
static void __attribute__((format(printf, 2, 3)))
flow_limit_log(struct flow_env *env, const char *fmt, ...)
{
	uint64_t now = loop_now(env->loop);
	char what[128];
	va_list ap;

	env->limit_hits++;
	if (env->limit_log_ms != 0 &&
	    now - env->limit_log_ms < FLOW_LIMIT_LOG_MS)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_warnx("%s: refusing new flows (%llu since the last message)",
	    what, (unsigned long long)env->limit_hits);
	env->limit_log_ms = now;
	env->limit_hits = 0;
}

bool
flow_tcp_syn_allowed(void *arg)
{
	struct flow_env *env = arg;

	if (env->draining)
		return false;
	if (env->conf->client.protocol == CONF_PROTO_BLOCK) {
		env->stats.blocked++;	/* RST on the SYN */
		return false;
	}
	if (env->nflows >= env->conf->client.max_flows) {
		flow_limit_log(env, "max_flows %u reached",
		    env->conf->client.max_flows);
		return false;
	}
	/* Room for what a new flow first takes, and a unit for those paused. */
	if (!limit_mem_admit(&env->mem, FLOW_STAGE)) {
		limit_refuse(&env->lst, LIMIT_MEMORY, loop_now(env->loop),
		    "flows", "max_buffer_memory: %zu of %zu bytes in use",
		    env->mem.used, env->mem.max);
		return false;
	}
	return true;
}

/* socks5, direct: a plain TCP connection to the proxy or the target.
 * 0, or -1 with f freed. */
static int
flow_new_plain(struct flow *f)
{
	struct flow_env *env = f->env;
	const struct conf *c = env->conf;
	struct addr to = env->server;

	if (c->client.protocol == CONF_PROTO_DIRECT)
		flow_target(f, &to);
	if ((f->fd = sock_connect(&to, c->client.congestion,
	    c->client.mark)) < 0) {
		flow_limit_log(env, "socket to %s: %s",
		    c->client.protocol == CONF_PROTO_DIRECT ? "target" :
		    "socks5 proxy", strerror(errno));
		free(f);
		return -1;
	}
	if ((f->out = outer_new(NULL, f->fd, true, NULL)) == NULL) {
		free(f);	/* outer_new closed the fd */
		return -1;
	}
	if (loop_fd_add(env->loop, &f->lfd, f->fd, EPOLLOUT, flow_on_io) < 0) {
		outer_abort(f->out);
		free(f);
		return -1;
	}
	return 0;
}

static struct flow *
flow_new(struct flow_env *env, const struct addr *dst)
{
	const struct conf *c = env->conf;
	struct flow *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->env = env;
	f->id = ++env->next_id;
	f->mw.fn = flow_on_memory;
	f->fd = -1;
	f->dst = *dst;
	f->dial_us = stats_now_us();
	if (c->client.protocol == CONF_PROTO_SOCKS5 ||
	    c->client.protocol == CONF_PROTO_DIRECT)
		return flow_new_plain(f) == 0 ? f : NULL;
	if ((f->out = pool_take(env->pool)) != NULL) {
		f->pooled = true;
		f->fd = outer_fd(f->out);
		if (loop_fd_add(env->loop, &f->lfd, f->fd, EPOLLIN,
		    flow_on_io) < 0) {
			outer_abort(f->out);
			goto fail;
		}
		return f;
	}
	f->fd = sock_connect(&env->server, c->client.congestion, c->client.mark);
	if (f->fd < 0) {
		flow_limit_log(env, "socket to server: %s", strerror(errno));
		goto fail;
	}
	f->out = outer_new(env->ssl_ctx, f->fd, true, c->client.sni);
	if (f->out == NULL) {
		f->fd = -1;	/* outer_new closed it */
		goto fail;
	}
	if (loop_fd_add(env->loop, &f->lfd, f->fd, EPOLLOUT, flow_on_io) < 0) {
		outer_abort(f->out);
		goto fail;
	}
	return f;
fail:
	if (f->out == NULL && f->fd >= 0)
		sock_close_rst(f->fd);
	free(f);
	return NULL;
}

static void
flow_attach_pcb(struct flow *f, struct tcp_pcb *pcb)
{
	f->pcb = pcb;
	tcp_arg(pcb, f);
	tcp_recv(pcb, flow_on_recv);
	tcp_sent(pcb, flow_on_sent);
	tcp_err(pcb, flow_on_err);
	tcp_nagle_disable(pcb);
}

/* Counts and lists a new flow, arms its timers; a pooled one starts
 * relaying at once.  -1 when that failed (the flow is closed). */
static int
flow_register(struct flow_env *env, struct flow *f)
{
	f->phase = FLOW_CONNECT;
	f->start_ms = f->last_ms = loop_now(env->loop);
	loop_timer_init(&f->early, flow_on_early);
	loop_timer_init(&f->timer, flow_on_timer);
	loop_timer_set(env->loop, &f->timer, env->conf->client.connect_timeout_ms);
	env->nflows++;
	env->stats.accepted++;
	flow_list_push(&env->all, f);
	if (f->pooled) {
		env->stats.pooled++;
		if (flow_start_relay(f) < 0) {
			flow_fail(f, "out of memory");
			return -1;
		}
	}
	return 0;
}

static struct flow *
flow_held_find(struct flow_env *env, const struct addr *dst,
    const struct addr *app)
{
	struct flow *f;

	for (f = env->all; f != NULL; f = f->next)
		if (f->held && addr_eq(&f->dst, dst) && addr_eq(&f->app, app))
			return f;
	return NULL;
}

int
flow_tcp_syn(void *arg, const uint8_t *pkt, size_t len,
    const struct ip_addr *local, const struct ip_addr *remote,
    uint16_t lport, uint16_t rport)
{
	struct flow_env *env = arg;
	struct addr dst, app;
	struct flow *f;

	if (!env->conf->client.faithful)
		return TSNETIF_SYN_PASS;
	flow_addr(&dst, local, lport);
	flow_addr(&app, remote, rport);
	if ((f = flow_held_find(env, &dst, &app)) != NULL)
		/* Our own re-injection, or the app retransmitting. */
		return f->status_ok ? TSNETIF_SYN_PASS : TSNETIF_SYN_HOLD;
	if ((f = flow_new(env, &dst)) == NULL) {
		env->stats.refused++;
		return TSNETIF_SYN_HOLD;	/* dropped; the app retries */
	}
	if ((f->syn = malloc(len)) == NULL) {
		outer_abort(f->out);
		loop_fd_del(env->loop, &f->lfd);
		free(f);	/* not registered: no event can be pending */
		env->stats.refused++;
		return TSNETIF_SYN_HOLD;
	}
	memcpy(f->syn, pkt, len);
	f->syn_len = len;
	f->held = true;
	f->app = app;
	(void)flow_register(env, f);
	return TSNETIF_SYN_HOLD;
}

err_t
flow_tcp_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct flow_env *env = arg;
	struct addr dst, app;
	struct flow *f;

	if (err != ERR_OK || pcb == NULL)
		return ERR_VAL;
	flow_addr(&dst, &pcb->local_ip, pcb->local_port);
	flow_addr(&app, &pcb->remote_ip, pcb->remote_port);
	if ((f = flow_held_find(env, &dst, &app)) != NULL) {
		/* Faithful: the target is connected, the app now too. */
		f->held = false;
		free(f->syn);
		f->syn = NULL;
		flow_attach_pcb(f, pcb);
		flow_mark_dirty(f);
		return ERR_OK;
	}
	if (env->nflows >= env->conf->client.max_flows ||
	    env->conf->client.protocol == CONF_PROTO_BLOCK ||
	    (f = flow_new(env, &dst)) == NULL) {
		env->stats.refused++;
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	flow_attach_pcb(f, pcb);
	if (flow_register(env, f) < 0)
		return ERR_ABRT;	/* flow_fail aborted the pcb */
	return ERR_OK;
}

int
flow_env_init(struct flow_env *env)
{
	limit_mem_init(&env->mem, env->conf->client.max_buffer_memory,
	    FLOW_STAGE);
	return loop_on_iteration(env->loop, flow_on_iteration, env);
}

void
flow_close_all(struct flow_env *env)
{
	while (env->all != NULL)
		flow_close(env->all, true, "shutdown");
	flow_on_iteration(env);
}

void
flow_tcp_foreach(struct flow_env *env,
    void (*cb)(void *arg, const struct flow_info *), void *arg)
{
	static const char *const phases[] = {
		[FLOW_CONNECT] = "connect", [FLOW_TLS] = "tls",
		[FLOW_SOCKS] = "socks5", [FLOW_RELAY] = "relay",
	};
	struct flow_info	 fi;
	struct flow		*f;

	for (f = env->all; f != NULL; f = f->next) {
		fi.id = f->id;
		fi.dst = &f->dst;
		fi.state = phases[f->phase];
		fi.start_ms = f->start_ms;
		fi.up = f->up;
		fi.down = f->down;
		fi.fd = f->out != NULL ? outer_fd(f->out) : -1;
		cb(arg, &fi);
	}
}
