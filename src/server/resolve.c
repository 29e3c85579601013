/*
 * Asynchronous name resolution (see resolve.h).
 *
 * A query moves through three states, and who may touch what follows them:
 *
 *   WAITING   on r->waiting, for a worker        \ list links and state:
 *   RUNNING   a worker is in getaddrinfo for it   > under r->mu only
 *   DONE      on r->done, for the loop           /
 *
 * name and res belong to the worker while RUNNING and to the loop after;
 * cb, arg and the timer belong to the loop thread alone.  A query whose
 * caller gave up (cancel, timeout) has cb == NULL: a WAITING one is freed
 * at once, a RUNNING one when its answer arrives (into the cache only).
 */
#include "config.h"

#include "server/resolve.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/log.h"
#include "core/loop.h"

#define RESOLVE_JOIN_MS	1000	/* resolver_free waits this long for threads */

enum rq_state { RQ_WAITING, RQ_RUNNING, RQ_DONE };

struct resolve_query {
	TAILQ_ENTRY(resolve_query) entry;	/* waiting or done list */
	struct resolver		*r;
	enum rq_state		 state;
	resolve_cb		 cb;		/* NULL: nobody waits for it */
	void			*arg;
	struct loop_timer	 timer;
	uint32_t		 hash;
	char			 name[RESOLVE_NAME_MAX + 1];
	struct resolve_result	 res;
};

TAILQ_HEAD(rq_list, resolve_query);

struct rc_entry {
	uint32_t		 hash;		/* 0: free */
	uint64_t		 expires_ms;
	enum resolve_status	 status;	/* OK or NOTFOUND */
	uint8_t			 n;
	struct resolve_ip	 ip[RESOLVE_MAX_ADDRS];
	char			 name[RESOLVE_NAME_MAX + 1];
};

struct resolver {
	struct loop		*loop;
	struct resolve_conf	 conf;
	int			 efd;		/* eventfd: answers are ready */
	struct loop_fd		 lfd;
	struct rc_entry		*cache;
	struct resolve_stats	 st;

	/* Shared with the workers. */
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	struct rq_list		 waiting;
	struct rq_list		 done;
	unsigned		 nwaiting;
	unsigned		 nrunning;
	unsigned		 nidle;
	unsigned		 nthreads;
	bool			 stop;
	pthread_t		*threads;
};

/* ---- names and the cache ------------------------------------------------ */

/*
 * Host names as DNS and /etc/hosts have them: labels of letters, digits,
 * '-' and '_' (SRV-style names exist in hosts files), 1..63 each, one
 * optional trailing dot.  Copied to out in lower case (the cache key).
 */
static bool
resolve_name_ok(const char *name, char *out)
{
	size_t	i, n = strlen(name), label = 0;
	char	ch;

	if (n > 0 && name[n - 1] == '.')
		n--;
	if (n == 0 || n > RESOLVE_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		ch = name[i];
		if (ch == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '_')
			label++;
		else if (ch >= 'A' && ch <= 'Z') {
			ch = (char)(ch - 'A' + 'a');
			label++;
		} else
			return false;
		if (label > 63)
			return false;
		out[i] = ch;
	}
	out[n] = '\0';
	return label > 0;
}

void
resolve_name_vis(char *name)
{
	for (; *name != '\0'; name++)
		if (*name < 0x20 || *name > 0x7e)
			*name = '?';
}

static uint32_t
resolve_hash(const char *s)
{
	uint32_t	h = 2166136261u;	/* FNV-1a */

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h != 0 ? h : 1;
}

/*
 * A name lives in one of RC_WAYS slots from hash % cache_size on, so a
 * lookup (one per request or datagram to a name, on the loop's thread)
 * costs the same with a cache of a million names as with one of ten.
 */
#define RC_WAYS		16

static struct rc_entry *
cache_slot(const struct resolver *r, uint32_t hash, unsigned i)
{
	return &r->cache[(hash % r->conf.cache_size + i) % r->conf.cache_size];
}

static unsigned
cache_ways(const struct resolver *r)
{
	return r->conf.cache_size < RC_WAYS ? r->conf.cache_size : RC_WAYS;
}

static struct rc_entry *
cache_find(struct resolver *r, const char *name, uint32_t hash)
{
	uint64_t	 now = loop_now(r->loop);
	struct rc_entry	*e;
	unsigned	 i;

	for (i = 0; i < cache_ways(r); i++) {
		e = cache_slot(r, hash, i);
		if (e->hash != hash || strcmp(e->name, name) != 0)
			continue;
		if (e->expires_ms <= now) {
			e->hash = 0;
			r->st.cached--;
			return NULL;
		}
		return e;
	}
	return NULL;
}

static void
cache_put(struct resolver *r, const struct resolve_query *q)
{
	uint64_t	 now = loop_now(r->loop), ttl;
	struct rc_entry	*e, *victim = NULL, *spare = NULL, *oldest = NULL;
	unsigned	 i;

	if (q->res.status == RESOLVE_OK)
		ttl = r->conf.cache_ttl_ms;
	else if (q->res.status == RESOLVE_NOTFOUND)
		ttl = r->conf.negative_ttl_ms;
	else
		return;		/* failures are not remembered */
	if (ttl == 0 || r->conf.cache_size == 0)
		return;
	/* Among the name's slots: the same name, else a free or expired
	 * one, else the entry that expires first. */
	for (i = 0; i < cache_ways(r); i++) {
		e = cache_slot(r, q->hash, i);
		if (e->hash == q->hash && strcmp(e->name, q->name) == 0) {
			victim = e;
			break;
		}
		if (e->hash == 0 || e->expires_ms <= now) {
			if (spare == NULL)
				spare = e;
		} else if (oldest == NULL || e->expires_ms < oldest->expires_ms)
			oldest = e;
	}
	if (victim == NULL)
		victim = spare != NULL ? spare : oldest;
	if (victim->hash == 0)
		r->st.cached++;
	victim->hash = q->hash;
	victim->expires_ms = now + ttl;
	victim->status = q->res.status;
	victim->n = (uint8_t)q->res.n;
	memcpy(victim->ip, q->res.ip, sizeof(victim->ip));
	memcpy(victim->name, q->name, sizeof(victim->name));
}

/* ---- workers ------------------------------------------------------------- */

static void
resolve_lookup(struct resolve_query *q)
{
	struct addrinfo		 hints, *ai = NULL, *p;
	struct resolve_result	*res = &q->res;
	const void		*ip;
	size_t			 i, len;
	int			 rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;	/* one entry per address */
	hints.ai_flags = AI_ADDRCONFIG;
	rc = getaddrinfo(q->name, NULL, &hints, &ai);
	res->gai_err = rc;
	res->n = 0;
	for (p = rc == 0 ? ai : NULL; p != NULL && res->n < RESOLVE_MAX_ADDRS;
	    p = p->ai_next) {
		if (p->ai_family == AF_INET) {
			ip = &((const struct sockaddr_in *)(const void *)
			    p->ai_addr)->sin_addr;
			len = 4;
		} else if (p->ai_family == AF_INET6) {
			ip = &((const struct sockaddr_in6 *)(const void *)
			    p->ai_addr)->sin6_addr;
			len = 16;
		} else
			continue;
		for (i = 0; i < res->n; i++)
			if (res->ip[i].family == p->ai_family &&
			    memcmp(res->ip[i].ip, ip, len) == 0)
				break;
		if (i < res->n)
			continue;
		res->ip[res->n].family = p->ai_family;
		memset(res->ip[res->n].ip, 0, sizeof(res->ip[res->n].ip));
		memcpy(res->ip[res->n].ip, ip, len);
		res->n++;
	}
	if (ai != NULL)
		freeaddrinfo(ai);
	switch (rc) {
	case 0:
		res->status = res->n > 0 ? RESOLVE_OK : RESOLVE_NOTFOUND;
		break;
	case EAI_NONAME:
#ifdef EAI_NODATA
	case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
	case EAI_ADDRFAMILY:
#endif
		res->status = RESOLVE_NOTFOUND;
		break;
	case EAI_MEMORY:
		res->status = RESOLVE_NOMEM;
		break;
	default:
		res->status = RESOLVE_FAILED;
		break;
	}
}

static void
resolve_wake_loop(struct resolver *r)
{
	uint64_t	one = 1;
	ssize_t		n;

	/* Only fails when the counter would overflow: the loop is awake. */
	do
		n = write(r->efd, &one, sizeof(one));
	while (n == -1 && errno == EINTR);
}

static void *
resolve_worker(void *arg)
{
	struct resolver		*r = arg;
	struct resolve_query	*q;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		r->nidle++;
		while (!r->stop && TAILQ_EMPTY(&r->waiting))
			pthread_cond_wait(&r->cv, &r->mu);
		r->nidle--;
		if (r->stop)
			break;
		q = TAILQ_FIRST(&r->waiting);
		TAILQ_REMOVE(&r->waiting, q, entry);
		r->nwaiting--;
		r->nrunning++;
		q->state = RQ_RUNNING;
		pthread_mutex_unlock(&r->mu);

		resolve_lookup(q);

		pthread_mutex_lock(&r->mu);
		q->state = RQ_DONE;
		r->nrunning--;
		TAILQ_INSERT_TAIL(&r->done, q, entry);
		resolve_wake_loop(r);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Under r->mu.  Workers ignore every signal: the loop takes them. */
static int
resolve_spawn(struct resolver *r)
{
	sigset_t	 all, old;
	int		 rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&r->threads[r->nthreads], NULL, resolve_worker, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	r->nthreads++;
	return 0;
}

/* ---- the loop side ------------------------------------------------------ */

static void
resolve_free_query(struct resolver *r, struct resolve_query *q)
{
	loop_timer_cancel(r->loop, &q->timer);
	free(q);
}

static void
resolve_count(struct resolver *r, const struct resolve_result *res)
{
	switch (res->status) {
	case RESOLVE_OK:
		r->st.ok++;
		break;
	case RESOLVE_NOTFOUND:
		r->st.notfound++;
		break;
	case RESOLVE_TIMEOUT:
		r->st.timeouts++;
		break;
	case RESOLVE_BUSY:
		r->st.busy++;
		break;
	case RESOLVE_BADNAME:
		r->st.badname++;
		break;
	case RESOLVE_FAILED:
	case RESOLVE_NOMEM:
		r->st.failed++;
		break;
	}
}

static void
resolve_on_answers(struct loop_fd *lfd, uint32_t revents)
{
	struct resolver		*r = container_of(lfd, struct resolver, lfd);
	struct rq_list		 ready = TAILQ_HEAD_INITIALIZER(ready);
	struct resolve_query	*q;
	resolve_cb		 cb;
	uint64_t		 cnt;

	(void)revents;
	(void)!read(r->efd, &cnt, sizeof(cnt));
	pthread_mutex_lock(&r->mu);
	TAILQ_CONCAT(&ready, &r->done, entry);
	pthread_mutex_unlock(&r->mu);
	/* A callback may cancel a query further down this list (it is DONE:
	 * cancelling only clears cb) or start new ones (they go elsewhere). */
	while ((q = TAILQ_FIRST(&ready)) != NULL) {
		TAILQ_REMOVE(&ready, q, entry);
		cache_put(r, q);
		if ((cb = q->cb) == NULL) {
			r->st.late++;
			resolve_free_query(r, q);
			continue;
		}
		resolve_count(r, &q->res);
		loop_timer_cancel(r->loop, &q->timer);
		cb(q->arg, &q->res);
		free(q);
	}
}

/* Detaches q from its caller.  A WAITING query is freed at once. */
static void
resolve_detach(struct resolve_query *q)
{
	struct resolver	*r = q->r;
	bool		 waiting;

	q->cb = NULL;
	loop_timer_cancel(r->loop, &q->timer);
	pthread_mutex_lock(&r->mu);
	waiting = q->state == RQ_WAITING;
	if (waiting) {
		TAILQ_REMOVE(&r->waiting, q, entry);
		r->nwaiting--;
	}
	pthread_mutex_unlock(&r->mu);
	if (waiting)
		free(q);
}

static void
resolve_on_timeout(struct loop_timer *t)
{
	struct resolve_query	*q = container_of(t, struct resolve_query,
				    timer);
	struct resolver		*r = q->r;
	struct resolve_result	 res;
	resolve_cb		 cb = q->cb;
	void			*arg = q->arg;

	memset(&res, 0, sizeof(res));
	res.status = RESOLVE_TIMEOUT;
	resolve_detach(q);
	resolve_count(r, &res);
	cb(arg, &res);
}

void
resolve_cancel(struct resolve_query *q)
{
	if (q == NULL)
		return;
	q->r->st.cancelled++;
	resolve_detach(q);
}

/* A numeric address needs no thread. */
static bool
resolve_numeric(const char *name, struct resolve_result *res)
{
	uint8_t	ip[16];

	memset(ip, 0, sizeof(ip));
	if (inet_pton(AF_INET, name, ip) == 1)
		res->ip[0].family = AF_INET;
	else if (inet_pton(AF_INET6, name, ip) == 1)
		res->ip[0].family = AF_INET6;
	else
		return false;
	memcpy(res->ip[0].ip, ip, sizeof(ip));
	res->n = 1;
	res->status = RESOLVE_OK;
	return true;
}

struct resolve_query *
resolve_start(struct resolver *r, const char *name, struct resolve_result *res,
    resolve_cb cb, void *arg)
{
	struct resolve_query	*q;
	struct rc_entry		*e;
	char			 key[RESOLVE_NAME_MAX + 1];
	uint32_t		 hash;
	bool			 spawn;

	memset(res, 0, sizeof(*res));
	r->st.lookups++;
	if (resolve_numeric(name, res))
		goto now;
	if (!resolve_name_ok(name, key)) {
		res->status = RESOLVE_BADNAME;
		goto now;
	}
	hash = resolve_hash(key);
	if ((e = cache_find(r, key, hash)) != NULL) {
		r->st.cache_hits++;
		res->status = e->status;
		res->cached = true;
		res->n = e->n;
		memcpy(res->ip, e->ip, sizeof(res->ip));
		goto now;
	}
	pthread_mutex_lock(&r->mu);
	if (r->nwaiting >= r->conf.queue) {
		pthread_mutex_unlock(&r->mu);
		res->status = RESOLVE_BUSY;
		goto now;
	}
	pthread_mutex_unlock(&r->mu);
	if ((q = calloc(1, sizeof(*q))) == NULL) {
		res->status = RESOLVE_NOMEM;
		goto now;
	}
	q->r = r;
	q->cb = cb;
	q->arg = arg;
	q->hash = hash;
	memcpy(q->name, key, sizeof(key));
	loop_timer_init(&q->timer, resolve_on_timeout);
	pthread_mutex_lock(&r->mu);
	q->state = RQ_WAITING;
	TAILQ_INSERT_TAIL(&r->waiting, q, entry);
	r->nwaiting++;
	spawn = r->nidle < r->nwaiting && r->nthreads < r->conf.workers;
	if (spawn && resolve_spawn(r) == -1 && r->nthreads == 0) {
		TAILQ_REMOVE(&r->waiting, q, entry);
		r->nwaiting--;
		pthread_mutex_unlock(&r->mu);
		log_warn("resolver: cannot start a thread");
		free(q);
		res->status = RESOLVE_FAILED;
		goto now;
	}
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	loop_timer_set(r->loop, &q->timer, r->conf.timeout_ms);
	return q;
now:
	resolve_count(r, res);
	return NULL;
}

/* ---- lifetime ------------------------------------------------------------ */

struct resolver *
resolver_new(struct loop *l, const struct resolve_conf *rc)
{
	struct resolver	*r;

	if (rc->workers == 0 || rc->queue == 0 || rc->timeout_ms == 0) {
		errno = EINVAL;
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->loop = l;
	r->conf = *rc;
	r->efd = -1;
	TAILQ_INIT(&r->waiting);
	TAILQ_INIT(&r->done);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if ((r->threads = calloc(rc->workers, sizeof(*r->threads))) == NULL)
		goto fail;
	/* calloc: pages are only touched as names come in. */
	if (rc->cache_size > 0 && (r->cache = calloc(rc->cache_size,
	    sizeof(*r->cache))) == NULL)
		goto fail;
	if ((r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		goto fail;
	if (loop_fd_add(l, &r->lfd, r->efd, EPOLLIN, resolve_on_answers)
	    == -1)
		goto fail;
	return r;
fail:
	if (r->efd != -1)
		close(r->efd);
	free(r->cache);
	free(r->threads);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
	return NULL;
}

/* A thread not done by then is detached: it goes away by itself when its
 * lookup ends (it then sees stop), instead of staying a zombie. */
static bool
resolve_join(struct resolver *r)
{
	struct timespec	 ts;
	unsigned	 i;
	bool		 all = true;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += RESOLVE_JOIN_MS / 1000;
	for (i = 0; i < r->nthreads; i++)
		if (pthread_timedjoin_np(r->threads[i], NULL, &ts) != 0) {
			pthread_detach(r->threads[i]);
			all = false;
		}
	return all;
}

void
resolver_free(struct resolver *r)
{
	struct resolve_query	*q;
	unsigned		 running;

	if (r == NULL)
		return;
	loop_fd_del(r->loop, &r->lfd);
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	while ((q = TAILQ_FIRST(&r->waiting)) != NULL) {
		TAILQ_REMOVE(&r->waiting, q, entry);
		resolve_free_query(r, q);
	}
	r->nwaiting = 0;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (!resolve_join(r)) {
		/* The stuck thread still uses r, and may be writing nrunning
		 * right now: read it under the lock.  The process is ending. */
		pthread_mutex_lock(&r->mu);
		running = r->nrunning;
		pthread_mutex_unlock(&r->mu);
		log_warnx("resolver: %u lookups still running: left behind",
		    running);
		return;
	}
	while ((q = TAILQ_FIRST(&r->done)) != NULL) {
		TAILQ_REMOVE(&r->done, q, entry);
		resolve_free_query(r, q);
	}
	close(r->efd);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r->cache);
	free(r->threads);
	free(r);
}

const struct resolve_stats *
resolver_stats(struct resolver *r)
{
	pthread_mutex_lock(&r->mu);
	r->st.waiting = r->nwaiting;
	r->st.running = r->nrunning;
	r->st.threads = r->nthreads;
	pthread_mutex_unlock(&r->mu);
	return &r->st;
}

const char *
resolve_status_str(enum resolve_status st)
{
	switch (st) {
	case RESOLVE_OK:
		return "ok";
	case RESOLVE_NOTFOUND:
		return "host not found";
	case RESOLVE_FAILED:
		return "name resolution failed";
	case RESOLVE_TIMEOUT:
		return "name resolution timeout";
	case RESOLVE_BUSY:
		return "resolver busy";
	case RESOLVE_BADNAME:
		return "bad host name";
	case RESOLVE_NOMEM:
		return "out of memory";
	}
	return "?";
}

void
resolve_ip_to_addr(const struct resolve_ip *ip, uint16_t port, struct addr *a)
{
	addr_from_raw(a, ip->family, ip->ip, port);
}
