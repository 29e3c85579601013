/*
 * Resource limit accounting.  See limit.h.
 */
#include "config.h"

#include "core/limit.h"

#include <sys/socket.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/addr.h"

static const char *const limit_names[LIMIT_NKINDS] = {
	[LIMIT_CONNS] = "conns",
	[LIMIT_SOURCE] = "source",
	[LIMIT_USER_CONNS] = "user_conns",
	[LIMIT_UDP] = "udp",
	[LIMIT_USER_UDP] = "user_udp",
	[LIMIT_MEMORY] = "memory",
	[LIMIT_COVER_SOURCE] = "cover_source",
	[LIMIT_COVER_MEMORY] = "cover_memory",
	[LIMIT_PREAUTH_SOURCE] = "preauth_source",
	[LIMIT_PREAUTH] = "preauth",
};

const char *
limit_kind_name(enum limit_kind k)
{
	return (unsigned)k < LIMIT_NKINDS ? limit_names[k] : "?";
}

static _Thread_local unsigned limit_slot;

void
limit_set_slot(unsigned slot)
{
	limit_slot = slot < LIMIT_SLOTS ? slot : 0;
}

bool
limit_count_take(_Atomic unsigned *n, unsigned max)
{
	unsigned	 v = atomic_load(n);

	do {
		if (max != 0 && v >= max)
			return false;
	} while (!atomic_compare_exchange_weak(n, &v, v + 1));
	return true;
}

/* ---- counts per key ------------------------------------------------- */

_Static_assert(crypto_shorthash_KEYBYTES == 16, "SipHash key size");

int
limit_tab_init(struct limit_tab *t, size_t nbucket)
{
	size_t	 n = 1, i;

	while (n < nbucket && n < ((size_t)1 << 24))
		n <<= 1;
	memset(t, 0, sizeof(*t));
	if ((t->bucket = calloc(n, sizeof(*t->bucket))) == NULL)
		return -1;
	for (i = 0; i < LIMIT_TAB_STRIPES; i++)
		pthread_mutex_init(&t->lock[i], NULL);
	t->nbucket = n;
	randombytes_buf(t->hkey, sizeof(t->hkey));
	return 0;
}

void
limit_tab_free(struct limit_tab *t)
{
	struct limit_ent	*e, *next;
	size_t			 i;

	if (t == NULL || t->bucket == NULL)
		return;
	for (i = 0; i < t->nbucket; i++)
		for (e = t->bucket[i]; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	free(t->bucket);
	for (i = 0; i < LIMIT_TAB_STRIPES; i++)
		pthread_mutex_destroy(&t->lock[i]);
	memset(t, 0, sizeof(*t));
}

static size_t
limit_tab_slot(const struct limit_tab *t, const void *key, size_t klen)
{
	uint8_t		 h[crypto_shorthash_BYTES];
	uint64_t	 v;

	crypto_shorthash(h, key, klen, t->hkey);
	memcpy(&v, h, sizeof(v));
	return (size_t)(v & (t->nbucket - 1));
}

static pthread_mutex_t *
limit_tab_lock(struct limit_tab *t, size_t slot)
{
	pthread_mutex_t	*m = &t->lock[slot % LIMIT_TAB_STRIPES];

	pthread_mutex_lock(m);
	return m;
}

static struct limit_ent *
limit_tab_chain(const struct limit_tab *t, size_t slot, const void *key,
    size_t klen)
{
	struct limit_ent	*e;

	for (e = t->bucket[slot]; e != NULL; e = e->next)
		if (e->klen == klen && memcmp(e->key, key, klen) == 0)
			return e;
	return NULL;
}

struct limit_ent *
limit_tab_find(const struct limit_tab *t, const void *key, size_t klen)
{
	struct limit_ent	*e;
	pthread_mutex_t		*m;
	size_t			 slot;

	if (t->bucket == NULL || klen > LIMIT_KEY_MAX)
		return NULL;
	slot = limit_tab_slot(t, key, klen);
	m = limit_tab_lock((struct limit_tab *)(uintptr_t)t, slot);
	e = limit_tab_chain(t, slot, key, klen);
	pthread_mutex_unlock(m);
	return e;
}

struct limit_ent *
limit_tab_get(struct limit_tab *t, const void *key, size_t klen)
{
	struct limit_ent	*e;
	pthread_mutex_t		*m;
	size_t			 slot;

	if (t->bucket == NULL || klen > LIMIT_KEY_MAX)
		return NULL;
	slot = limit_tab_slot(t, key, klen);
	m = limit_tab_lock(t, slot);
	if ((e = limit_tab_chain(t, slot, key, klen)) == NULL &&
	    (e = calloc(1, sizeof(*e) + klen)) != NULL) {
		e->klen = (uint8_t)klen;
		memcpy(e->key, key, klen);
		e->next = t->bucket[slot];
		t->bucket[slot] = e;
		t->n++;
	}
	if (e != NULL)
		e->holds++;
	pthread_mutex_unlock(m);
	return e;
}

void
limit_tab_release(struct limit_tab *t, struct limit_ent *e)
{
	struct limit_ent	**pp;
	pthread_mutex_t		*m;
	size_t			 slot;

	if (e == NULL)
		return;
	slot = limit_tab_slot(t, e->key, e->klen);
	m = limit_tab_lock(t, slot);
	if (e->holds > 0)
		e->holds--;
	if (e->holds > 0 || e->conns > 0 || e->udp > 0) {
		pthread_mutex_unlock(m);
		return;
	}
	for (pp = &t->bucket[slot]; *pp != NULL; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			t->n--;
			pthread_mutex_unlock(m);
			free(e);
			return;
		}
	fatalx("limit_tab_release: entry not in its table");
}

size_t
limit_source_key(const struct addr *a, uint8_t key[LIMIT_SOURCE_KEY_LEN])
{
	static const uint8_t	 mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t		*ip;
	size_t			 len;

	ip = addr_ip(a, &len);
	if (addr_family(a) == AF_INET6 && len == 16 &&
	    memcmp(ip, mapped, sizeof(mapped)) == 0) {
		ip += sizeof(mapped);
		len = 4;
	}
	if (len == 4) {
		key[0] = 4;
		memcpy(key + 1, ip, 4);
		return 5;
	}
	key[0] = 6;
	memcpy(key + 1, ip, 8);		/* the /64 */
	return 9;
}

/* ---- memory budget -------------------------------------------------- */

void
limit_mem_init(struct limit_mem *m, size_t max, size_t unit)
{
	size_t	 i;

	memset(m, 0, sizeof(*m));
	m->max = max;
	m->unit = unit;
	for (i = 0; i < LIMIT_SLOTS; i++)
		TAILQ_INIT(&m->q[i].waiters);
}

static void
limit_mem_peak(struct limit_mem *m, size_t used)
{
	size_t	 p = atomic_load_explicit(&m->peak, memory_order_relaxed);

	while (used > p && !atomic_compare_exchange_weak_explicit(&m->peak,
	    &p, used, memory_order_relaxed, memory_order_relaxed))
		;
}

static void
limit_mem_add(struct limit_mem *m, size_t n)
{
	limit_mem_peak(m, atomic_fetch_add(&m->used, n) + n);
}

/*
 * With waiters queued the last unit is theirs: a relay that just gave a
 * buffer back cannot take it again at once while another one waits, so
 * paused relays take turns (FIFO) instead of starving behind busy ones.
 */
bool
limit_mem_take(struct limit_mem *m, size_t n)
{
	size_t	 keep = 0, max = m->max, used;

	if (m->nwaiting > 0 && !m->q[limit_slot].waking)
		keep = m->unit;
	used = atomic_load(&m->used);
	do {
		if (max != 0 && (n > max || keep > max - n ||
		    used > max - n - keep)) {
			m->denied++;
			return false;
		}
	} while (!atomic_compare_exchange_weak(&m->used, &used, used + n));
	limit_mem_peak(m, used + n);
	return true;
}

void
limit_mem_force(struct limit_mem *m, size_t n)
{
	limit_mem_add(m, n);
}

void
limit_mem_give(struct limit_mem *m, size_t n)
{
	static atomic_flag	 warned = ATOMIC_FLAG_INIT;
	size_t			 used = atomic_load(&m->used), k;

	/* An accounting slip must not take the tunnel down: clamp, once. */
	do {
		k = n > used ? used : n;
	} while (!atomic_compare_exchange_weak(&m->used, &used, used - k));
	if (k < n && !atomic_flag_test_and_set(&warned))
		log_warnx("limit_mem_give: %zu bytes given back, %zu "
		    "charged (accounting bug)", n, used);
}

bool
limit_mem_admit(const struct limit_mem *m, size_t n)
{
	size_t	 max = m->max;

	if (max == 0)
		return true;
	if (m->unit > max || n > max - m->unit)
		return false;
	return m->used <= max - m->unit - n;
}

/* A waiter is queued and unqueued by the thread that owns it. */
void
limit_mem_wait(struct limit_mem *m, struct limit_waiter *w)
{
	struct limit_mem_q	*q = &m->q[limit_slot];

	if (w->queued)
		return;
	TAILQ_INSERT_TAIL(&q->waiters, w, entry);
	w->queued = true;
	w->gen = q->gen;
	m->nwaiting++;
}

void
limit_mem_unwait(struct limit_mem *m, struct limit_waiter *w)
{
	if (!w->queued)
		return;
	TAILQ_REMOVE(&m->q[limit_slot].waiters, w, entry);
	w->queued = false;
	m->nwaiting--;
}

void
limit_mem_wake(void *arg)
{
	struct limit_mem	*m = arg;
	struct limit_mem_q	*q = &m->q[limit_slot];
	struct limit_waiter	*w;
	uint64_t		 gen = q->gen++;
	size_t			 max;

	/* Only those queued before this call: one refused again is queued
	 * with the new generation, for the next call. */
	while ((w = TAILQ_FIRST(&q->waiters)) != NULL && w->gen <= gen) {
		max = m->max;
		if (max != 0 && m->used + m->unit > max)
			return;
		limit_mem_unwait(m, w);
		q->waking = true;
		w->fn(w);
		q->waking = false;
	}
}

bool
limit_mem_waiting(const struct limit_mem *m)
{
	return !TAILQ_EMPTY(&m->q[limit_slot].waiters);
}

int
limit_parse_size(const char *s, unsigned long long *bytes)
{
	static const struct {
		const char		*suffix;
		unsigned		 shift;
	} units[] = {
		{ "", 0 }, { "K", 10 }, { "KB", 10 }, { "KiB", 10 },
		{ "M", 20 }, { "MB", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GB", 30 }, { "GiB", 30 },
	};
	unsigned long long	 v = 0;
	size_t			 i;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (ULLONG_MAX - (unsigned)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s, units[i].suffix) != 0)
			continue;
		if (v > ULLONG_MAX >> units[i].shift)
			return -1;
		*bytes = v << units[i].shift;
		return 0;
	}
	return -1;
}

size_t
limit_cover_memory_default(size_t max_buffer_memory)
{
	size_t	 n = max_buffer_memory / 8;

	if (max_buffer_memory == 0)
		return (size_t)32 << 20;
	return n < ((size_t)1 << 20) ? (size_t)1 << 20 : n;
}

/* ---- refusals -------------------------------------------------------- */

bool
limit_refuse(struct limit_stats *st, enum limit_kind k, uint64_t now_ms,
    const char *work, const char *fmt, ...)
{
	struct limit_log	*l;
	char			 what[160];
	va_list			 ap;

	uint64_t		 last, since;

	if ((unsigned)k >= LIMIT_NKINDS)
		return false;
	st->refused[k]++;
	l = &st->log[k];
	l->since++;
	/* One thread logs per interval: the one that moves last_ms.  Loop
	 * time starts near 0 in tests: never store 0 as "logged". */
	last = l->last_ms;
	if (last != 0 && now_ms - last < LIMIT_LOG_INTERVAL_MS)
		return false;
	if (!atomic_compare_exchange_strong(&l->last_ms, &last,
	    now_ms != 0 ? now_ms : 1))
		return false;
	since = atomic_exchange(&l->since, 0);
	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_warnx("limit %s: %s: refusing new %s (%llu since the last "
	    "message)", limit_names[k], what, work,
	    (unsigned long long)since);
	return true;
}
