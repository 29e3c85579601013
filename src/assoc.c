/*
 * Client datagram associations (see assoc.h).
 *
 * Life of an association: made by the first datagram of its app endpoint,
 * it dials the server at once; once TLS is up the request header and the
 * frames queued meanwhile leave together.  The first byte back is the
 * server's status; non-zero fails the association.  It ends when idle for
 * udp_timeout (dns_timeout for DNS-only and ICMP), when evicted for room,
 * or on a failure, after a short hold-down.
 */
#include "config.h"

#include "assoc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <sodium.h>

#include "addr.h"
#include "buf.h"
#include "conf.h"
#include "dq.h"
#include "frame.h"
#include "log.h"
#include "loop.h"
#include "outer.h"
#include "pkt.h"
#include "sock.h"
#include "tsnetif.h"

#define ASSOC_STAGE		16384	/* one TLS record */
#define ASSOC_KINDS		4	/* ops indexed by kind */
#define ASSOC_RX_CAP		(1 + FRAME_MAX)	/* status byte + one frame */

enum assoc_phase {
	ASSOC_CONNECT,		/* outer TCP connect in progress */
	ASSOC_TLS,		/* TLS handshake */
	ASSOC_RELAY,		/* header sent or queued; frames both ways */
	ASSOC_HOLD,		/* failed: no stream, datagrams dropped */
};

struct assoc {
	struct assoc_key	 key;
	struct assoc_env	*env;
	uint64_t		 id;
	struct assoc		*hnext;		/* hash chain */
	TAILQ_ENTRY(assoc)	 lru;		/* most recently used first */
	struct assoc		*dirty_next;
	struct assoc		*reap_next;
	bool			 dirty;
	bool			 closing;
	bool			 status_ok;	/* server answered 0 */
	bool			 write_blocked;
	bool			 hup;
	bool			 short_lived;	/* only DNS so far */

	enum assoc_phase	 phase;
	int			 fd;
	struct outer		*out;
	struct loop_fd		 lfd;
	struct loop_timer	 timer;
	struct proto_dest	*first;		/* header destination, until sent */
	const char		*reason;	/* why it failed */

	/* Toward the server: the request header, then frames.  The header
	 * holds no secret (its MAC goes on the wire anyway). */
	struct dq		 q;
	size_t			 retry_len;	/* blocked write to repeat */
	struct buf		 rx;

	uint64_t		 start_ms, last_ms;
	uint64_t		 up_d, up_b, down_d, down_b, drops;
	void			*ext;
};

TAILQ_HEAD(assoc_lru, assoc);

struct assoc_env {
	struct loop		*loop;
	const struct conf	*conf;
	struct ssl_ctx_st	*ssl_ctx;
	struct addr		 server;
	const uint8_t		*user_id;	/* the client's: SIGHUP updates it */
	int			(*tun_write)(const uint8_t *, size_t);
	struct assoc_ops	 ops[ASSOC_KINDS];

	struct assoc		**buckets;
	size_t			 nbuckets;	/* power of two */
	uint8_t			 hkey[crypto_shorthash_KEYBYTES];
	struct assoc_lru	 lru;
	unsigned		 n;
	uint64_t		 next_id;
	size_t			 qtotal;
	struct assoc		*dirty;
	struct assoc		*reap;
	struct assoc_stats	 st;

	uint16_t		 ipid;
	uint32_t		 frag_id;
	uint8_t			*frag;		/* TUN MTU bytes */
	uint8_t			 stage[ASSOC_STAGE];
	uint8_t			 pkt[PKT_MAX];
};

static void assoc_mark_dirty(struct assoc *);
static void assoc_update_events(struct assoc *);
static void assoc_on_timer(struct loop_timer *);
static uint64_t assoc_timeout(const struct assoc *);

const char *
assoc_kind_str(uint8_t kind)
{
	return kind == PROTO_KIND_ICMP ? "icmp" : "udp";
}

static const char *
assoc_app(const struct assoc *a, char *buf, size_t len)
{
	struct addr	sa;

	addr_from_raw(&sa, a->key.family, a->key.addr, a->key.port);
	return addr_fmt(&sa, buf, len);
}

/* ---- table ------------------------------------------------------------- */

static size_t
assoc_bucket(const struct assoc_env *e, const struct assoc_key *k)
{
	uint64_t	h;

	/* Keyed: apps behind a router must not be able to aim for one
	 * chain. */
	crypto_shorthash((unsigned char *)&h, (const unsigned char *)k,
	    sizeof(*k), e->hkey);
	return (size_t)(h & (e->nbuckets - 1));
}

static struct assoc *
assoc_lookup(struct assoc_env *e, const struct assoc_key *k)
{
	struct assoc	*a;

	for (a = e->buckets[assoc_bucket(e, k)]; a != NULL; a = a->hnext)
		if (memcmp(&a->key, k, sizeof(*k)) == 0)
			return a;
	return NULL;
}

static void
assoc_unhash(struct assoc *a)
{
	struct assoc	**pp;

	pp = &a->env->buckets[assoc_bucket(a->env, &a->key)];
	for (; *pp != NULL; pp = &(*pp)->hnext) {
		if (*pp == a) {
			*pp = a->hnext;
			break;
		}
	}
	a->hnext = NULL;
}

static void
assoc_touch(struct assoc *a)
{
	struct assoc_env	*e = a->env;

	a->last_ms = loop_now(e->loop);
	if (TAILQ_FIRST(&e->lru) != a) {
		TAILQ_REMOVE(&e->lru, a, lru);
		TAILQ_INSERT_HEAD(&e->lru, a, lru);
	}
}

/* ---- teardown ---------------------------------------------------------- */

/* Ends the outer stream: gracefully (close_notify) or with a reset. */
static void
assoc_drop_stream(struct assoc *a, bool abort)
{
	loop_fd_del(a->env->loop, &a->lfd);
	if (a->out != NULL) {
		if (abort)
			outer_abort(a->out);
		else {
			if (a->phase == ASSOC_RELAY)
				(void)outer_shutdown_write(a->out);
			outer_free(a->out);
		}
	} else if (a->fd >= 0)
		sock_close_rst(a->fd);
	a->out = NULL;
	a->fd = -1;
	a->hup = a->write_blocked = false;
	a->env->qtotal -= dq_bytes(&a->q);
	a->drops += dq_clear(&a->q);
	a->retry_len = 0;
	buf_free(&a->rx);
}

/* The single teardown; idempotent.  Freed at the end of the iteration. */
static void
assoc_close(struct assoc *a, bool abort, const char *reason)
{
	struct assoc_env	*e = a->env;
	char			 app[ADDR_STRLEN];

	if (a->closing)
		return;
	a->closing = true;
	assoc_drop_stream(a, abort);
	loop_timer_cancel(e->loop, &a->timer);
	assoc_unhash(a);
	TAILQ_REMOVE(&e->lru, a, lru);
	if (a->ext != NULL && e->ops[a->key.kind].ext_free != NULL)
		e->ops[a->key.kind].ext_free(a->ext);
	a->ext = NULL;
	free(a->first);
	a->first = NULL;
	e->n--;
	e->st.active = e->n;
	log_info("%s %llu %s: %s, up %llu dgrams %llu bytes, down %llu "
	    "dgrams %llu bytes, %llu dropped, %llu ms, %u left",
	    assoc_kind_str(a->key.kind), (unsigned long long)a->id,
	    assoc_app(a, app, sizeof(app)), reason,
	    (unsigned long long)a->up_d, (unsigned long long)a->up_b,
	    (unsigned long long)a->down_d, (unsigned long long)a->down_b,
	    (unsigned long long)a->drops,
	    (unsigned long long)(loop_now(e->loop) - a->start_ms), e->n);
	a->reap_next = e->reap;
	e->reap = a;
}

/* A failure: the stream goes, the association holds its place (and drops
 * datagrams) for ASSOC_HOLD_MS, then closes. */
static void
assoc_fail(struct assoc *a, const char *reason)
{
	char	app[ADDR_STRLEN];

	if (a->closing || a->phase == ASSOC_HOLD)
		return;
	a->env->st.failed++;
	log_info("%s %llu %s: %s", assoc_kind_str(a->key.kind),
	    (unsigned long long)a->id, assoc_app(a, app, sizeof(app)), reason);
	a->reason = reason;
	assoc_drop_stream(a, true);
	a->phase = ASSOC_HOLD;
	loop_timer_set(a->env->loop, &a->timer, ASSOC_HOLD_MS);
}

/* ---- toward the server ------------------------------------------------- */

static int
assoc_pump_up(struct assoc *a)
{
	uint8_t	*stage = a->env->stage;
	size_t	 n;
	ssize_t	 w;

	a->write_blocked = false;
	while (dq_bytes(&a->q) > 0) {
		/* Several frames per TLS record; a blocked write is retried
		 * with the same bytes, as outer_write() requires. */
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
		dq_consume(&a->q, (size_t)w);
		a->env->qtotal -= (size_t)w;
	}
	return 0;
}

/* ---- from the server --------------------------------------------------- */

/* Delivers the complete frames in rx.  -1: the server broke the framing. */
static int
assoc_frames(struct assoc *a)
{
	struct assoc_env	*e = a->env;
	const struct assoc_ops	*ops = &e->ops[a->key.kind];
	struct proto_dest	 src;
	const uint8_t		*p;
	size_t			 plen;
	ssize_t			 r;

	while (buf_len(&a->rx) > 0) {
		r = frame_parse(buf_head(&a->rx), buf_len(&a->rx), &src, &p,
		    &plen);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		a->down_d++;
		a->down_b += plen;
		e->st.dgrams_down++;
		e->st.bytes_down += plen;
		if (ops->deliver == NULL ||
		    ops->deliver(ops->arg, a, &src, p, plen) < 0) {
			e->st.drop_down++;
			a->drops++;
		}
		buf_consume(&a->rx, (size_t)r);
	}
	return 0;
}

static int
assoc_pump_down(struct assoc *a, const char **why)
{
	uint8_t		*tail;
	size_t		 room;
	ssize_t		 r;
	bool		 got = false;

	for (;;) {
		if ((tail = buf_tail(&a->rx, &room)) == NULL) {
			*why = "out of memory";
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
		if (!a->status_ok) {
			if (buf_head(&a->rx)[0] != PROTO_OK) {
				*why = proto_status_str(buf_head(&a->rx)[0]);
				return -1;
			}
			a->status_ok = true;
			buf_consume(&a->rx, 1);
			/* From the connect deadline to the idle one. */
			loop_timer_set(a->env->loop, &a->timer,
			    assoc_timeout(a));
		}
		if (assoc_frames(a) < 0) {
			*why = "malformed frame from server";
			return -1;
		}
	}
	if (got)
		assoc_touch(a);
	buf_release_if_empty(&a->rx);
	return 0;
}

/* ---- the per-iteration pass -------------------------------------------- */

static void
assoc_mark_dirty(struct assoc *a)
{
	if (a->dirty || a->closing)
		return;
	a->dirty = true;
	a->dirty_next = a->env->dirty;
	a->env->dirty = a;
}

static void
assoc_work(struct assoc *a)
{
	const char	*why = "server write failed";

	if (a->phase != ASSOC_RELAY)
		return;
	if (assoc_pump_up(a) < 0) {
		assoc_fail(a, why);
		return;
	}
	if (assoc_pump_down(a, &why) < 0) {
		/* A clean end from the server needs no hold-down. */
		if (strcmp(why, "server closed") == 0 && a->status_ok)
			assoc_close(a, false, why);
		else
			assoc_fail(a, why);
		return;
	}
	assoc_update_events(a);
}

static void
assoc_on_iteration(void *arg)
{
	struct assoc_env	*e = arg;
	struct assoc		*a, *next;

	while ((a = e->dirty) != NULL) {
		e->dirty = NULL;
		for (; a != NULL; a = next) {
			next = a->dirty_next;
			a->dirty = false;
			if (!a->closing)
				assoc_work(a);
		}
	}
	while ((a = e->reap) != NULL) {
		e->reap = a->reap_next;
		free(a);
	}
}

/* ---- outer stream events ----------------------------------------------- */

static void
assoc_update_events(struct assoc *a)
{
	uint32_t	ev = 0;

	if (a->closing || a->phase == ASSOC_HOLD)
		return;
	if (a->hup) {
		loop_fd_del(a->env->loop, &a->lfd);
		return;
	}
	switch (a->phase) {
	case ASSOC_CONNECT:
		ev = EPOLLOUT;
		break;
	case ASSOC_TLS:
		ev = outer_events(a->out);
		break;
	case ASSOC_RELAY:
		ev = EPOLLIN;
		if (a->write_blocked)
			ev |= EPOLLOUT | outer_events(a->out);
		break;
	case ASSOC_HOLD:
		break;
	}
	loop_fd_mod(a->env->loop, &a->lfd, ev);
}

static int
assoc_start_relay(struct assoc *a)
{
	struct assoc_env	*e = a->env;
	struct proto_req	 req;
	uint8_t			 buf[PROTO_REQ_MAX];
	ssize_t			 n;

	memset(&req, 0, sizeof(req));
	req.kind = a->key.kind;
	req.ts = (uint64_t)time(NULL);
	randombytes_buf(req.nonce, sizeof(req.nonce));
	memcpy(req.user_id, e->user_id, sizeof(req.user_id));
	req.dest = *a->first;
	n = proto_req_encode(buf, sizeof(buf), &req, e->conf->client.key, 0);
	if (n < 0 || dq_push(&a->q, buf, (size_t)n, NULL, 0, true) < 0)
		return -1;
	e->qtotal += (size_t)n;
	free(a->first);
	a->first = NULL;
	a->phase = ASSOC_RELAY;
	assoc_mark_dirty(a);
	return 0;
}

static void
assoc_on_io(struct loop_fd *lfd, uint32_t revents)
{
	struct assoc	*a = container_of(lfd, struct assoc, lfd);
	int		 err, rc;

	if (a->closing)
		return;
	switch (a->phase) {
	case ASSOC_CONNECT:
		if ((err = sock_connect_error(a->fd)) != 0) {
			errno = err;
			log_warn("%s %llu: connect to server",
			    assoc_kind_str(a->key.kind),
			    (unsigned long long)a->id);
			assoc_fail(a, "server unreachable");
			return;
		}
		a->phase = ASSOC_TLS;
		/* FALLTHROUGH */
	case ASSOC_TLS:
		if ((rc = outer_handshake(a->out)) < 0) {
			assoc_fail(a, "TLS handshake with server failed");
			return;
		}
		if (rc == 1 && assoc_start_relay(a) < 0) {
			assoc_fail(a, "out of memory");
			return;
		}
		break;
	case ASSOC_RELAY:
		if (revents & (EPOLLHUP | EPOLLERR))
			a->hup = true;
		assoc_mark_dirty(a);
		break;
	case ASSOC_HOLD:
		return;
	}
	assoc_update_events(a);
}

static uint64_t
assoc_timeout(const struct assoc *a)
{
	const struct conf	*c = a->env->conf;

	if (a->key.kind == PROTO_KIND_ICMP || a->short_lived)
		return c->client.dns_timeout_ms;
	return c->client.udp_timeout_ms;
}

static void
assoc_on_timer(struct loop_timer *t)
{
	struct assoc		*a = container_of(t, struct assoc, timer);
	const struct conf	*c = a->env->conf;
	uint64_t		 now = loop_now(a->env->loop), at;

	if (a->phase == ASSOC_HOLD) {
		assoc_close(a, false, a->reason);
		return;
	}
	if (!a->status_ok) {
		at = a->start_ms + c->client.connect_timeout_ms;
		if (now >= at) {
			assoc_fail(a, "connect timeout");
			return;
		}
	} else {
		at = a->last_ms + assoc_timeout(a);
		if (now >= at) {
			a->env->st.expired++;
			assoc_close(a, false, "idle timeout");
			return;
		}
	}
	loop_timer_set(a->env->loop, t, at - now);
}

/* ---- making associations ----------------------------------------------- */

static void
assoc_dial(struct assoc *a)
{
	struct assoc_env	*e = a->env;
	const struct conf	*c = e->conf;

	a->fd = sock_connect(&e->server, c->client.congestion, c->client.mark);
	if (a->fd < 0) {
		log_warn("%s %llu: socket to server",
		    assoc_kind_str(a->key.kind), (unsigned long long)a->id);
		assoc_fail(a, "server unreachable");
		return;
	}
	a->out = outer_new(e->ssl_ctx, a->fd, true, c->client.sni);
	if (a->out == NULL) {
		a->fd = -1;	/* outer_new closed it */
		assoc_fail(a, "TLS setup failed");
		return;
	}
	if (loop_fd_add(e->loop, &a->lfd, a->fd, EPOLLOUT, assoc_on_io) < 0) {
		assoc_fail(a, "epoll");
		return;
	}
	loop_timer_set(e->loop, &a->timer, c->client.connect_timeout_ms);
}

static struct assoc *
assoc_new(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst)
{
	struct assoc	*a, *old;
	size_t		 b;

	while (e->n >= e->conf->client.max_udp &&
	    (old = TAILQ_LAST(&e->lru, assoc_lru)) != NULL) {
		e->st.evicted++;
		assoc_close(old, false, "evicted (max_udp)");
	}
	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (a->first = malloc(sizeof(*a->first))) == NULL) {
		free(a);
		return NULL;
	}
	a->key = *key;
	a->env = e;
	a->id = ++e->next_id;
	a->fd = -1;
	a->short_lived = true;
	*a->first = *dst;
	a->start_ms = a->last_ms = loop_now(e->loop);
	buf_init(&a->rx, ASSOC_RX_CAP);
	dq_init(&a->q);
	loop_timer_init(&a->timer, assoc_on_timer);
	b = assoc_bucket(e, key);
	a->hnext = e->buckets[b];
	e->buckets[b] = a;
	TAILQ_INSERT_HEAD(&e->lru, a, lru);
	e->n++;
	e->st.active = e->n;
	e->st.created++;
	a->phase = ASSOC_CONNECT;
	assoc_dial(a);
	return a;
}

struct assoc *
assoc_get(struct assoc_env *e, const struct assoc_key *key,
    const struct proto_dest *dst)
{
	struct assoc	*a;

	if ((a = assoc_lookup(e, key)) == NULL &&
	    (a = assoc_new(e, key, dst)) == NULL) {
		e->st.drop_hold++;
		return NULL;
	}
	if (a->phase == ASSOC_HOLD) {
		e->st.drop_hold++;
		a->drops++;
		return NULL;
	}
	return a;
}

int
assoc_send(struct assoc *a, const struct proto_dest *dst,
    const uint8_t *data, size_t len, bool short_lived)
{
	struct assoc_env	*e = a->env;
	uint8_t			 hdr[FRAME_HDR_MAX];
	ssize_t			 hl;

	if ((hl = frame_encode_hdr(hdr, sizeof(hdr), dst, len)) < 0 ||
	    dq_bytes(&a->q) + (size_t)hl + len > ASSOC_QUEUE_MAX ||
	    e->qtotal + (size_t)hl + len > ASSOC_QUEUE_TOTAL ||
	    dq_push(&a->q, hdr, (size_t)hl, data, len, false) < 0)
		goto drop;
	e->qtotal += (size_t)hl + len;
	if (!short_lived)
		a->short_lived = false;
	a->up_d++;
	a->up_b += len;
	e->st.dgrams_up++;
	e->st.bytes_up += len;
	assoc_touch(a);
	assoc_mark_dirty(a);
	return 0;
drop:
	e->st.drop_queue++;
	a->drops++;
	return -1;
}

/* ---- accessors and the TUN ---------------------------------------------- */

const struct assoc_key *
assoc_key(const struct assoc *a)
{
	return &a->key;
}

uint64_t
assoc_id(const struct assoc *a)
{
	return a->id;
}

void *
assoc_ext(const struct assoc *a)
{
	return a->ext;
}

void
assoc_set_ext(struct assoc *a, void *ext)
{
	a->ext = ext;
}

uint8_t *
assoc_pkt_buf(struct assoc_env *e)
{
	return e->pkt;
}

uint16_t
assoc_next_ipid(struct assoc_env *e)
{
	return ++e->ipid;
}

static int
assoc_emit(void *arg, const uint8_t *pkt, size_t len)
{
	struct assoc_env	*e = arg;

	return e->tun_write(pkt, len);
}

int
assoc_tun_write(struct assoc_env *e, const uint8_t *pkt, size_t len)
{
	if (pkt_fragment(pkt, len, e->conf->tun.mtu, ++e->frag_id, e->frag,
	    assoc_emit, e) < 0) {
		e->st.tun_errors++;
		return -1;
	}
	return 0;
}

const struct assoc_stats *
assoc_stats(const struct assoc_env *e)
{
	return &e->st;
}

void
assoc_foreach(struct assoc_env *e,
    void (*cb)(void *arg, const struct assoc_info *), void *arg)
{
	static const char *const phases[] = {
		[ASSOC_CONNECT] = "connect", [ASSOC_TLS] = "tls",
		[ASSOC_RELAY] = "relay", [ASSOC_HOLD] = "hold",
	};
	struct assoc_info	 ai;
	struct assoc		*a;

	TAILQ_FOREACH(a, &e->lru, lru) {
		ai.id = a->id;
		ai.key = &a->key;
		ai.state = phases[a->phase];
		ai.start_ms = a->start_ms;
		ai.up = a->up_b;
		ai.down = a->down_b;
		ai.fd = a->fd;
		cb(arg, &ai);
	}
}

/* ---- env ------------------------------------------------------------- */

struct assoc_env *
assoc_env_new(const struct assoc_cfg *cfg)
{
	struct assoc_env	*e;
	size_t			 nb = 256;

	if (sodium_init() < 0 || (e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	e->loop = cfg->loop;
	e->conf = cfg->conf;
	e->ssl_ctx = cfg->ssl_ctx;
	e->server = *cfg->server;
	e->user_id = cfg->user_id;
	e->tun_write = cfg->tun_write != NULL ? cfg->tun_write :
	    tsnetif_output_raw;
	while (nb < e->conf->client.max_udp && nb < (1u << 20))
		nb <<= 1;
	e->nbuckets = nb;
	crypto_shorthash_keygen(e->hkey);
	randombytes_buf(&e->ipid, sizeof(e->ipid));
	randombytes_buf(&e->frag_id, sizeof(e->frag_id));
	TAILQ_INIT(&e->lru);
	if ((e->buckets = calloc(nb, sizeof(*e->buckets))) == NULL ||
	    (e->frag = malloc(e->conf->tun.mtu)) == NULL ||
	    loop_on_iteration(e->loop, assoc_on_iteration, e) < 0) {
		free(e->buckets);
		free(e->frag);
		free(e);
		return NULL;
	}
	return e;
}

void
assoc_env_set_ops(struct assoc_env *e, uint8_t kind,
    const struct assoc_ops *ops)
{
	if (kind < ASSOC_KINDS)
		e->ops[kind] = *ops;
}

/*
 * The iteration hook stays registered on the loop (loop.h has no way to
 * remove one), so the env must outlive the loop's last iteration: free it
 * only after the loop has stopped running.
 */
void
assoc_env_free(struct assoc_env *e)
{
	struct assoc	*a;

	if (e == NULL)
		return;
	while ((a = TAILQ_FIRST(&e->lru)) != NULL)
		assoc_close(a, false, "shutdown");
	e->dirty = NULL;
	while ((a = e->reap) != NULL) {
		e->reap = a->reap_next;
		free(a);
	}
	free(e->buckets);
	free(e->frag);
	free(e);
}
