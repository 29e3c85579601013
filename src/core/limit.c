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

/* ---- counts per key ------------------------------------------------- */

_Static_assert(crypto_shorthash_KEYBYTES == 16, "SipHash key size");

int
limit_tab_init(struct limit_tab *t, size_t nbucket)
{
	size_t	 n = 1;

	while (n < nbucket && n < ((size_t)1 << 24))
		n <<= 1;
	memset(t, 0, sizeof(*t));
	if ((t->bucket = calloc(n, sizeof(*t->bucket))) == NULL)
		return -1;
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

struct limit_ent *
limit_tab_find(const struct limit_tab *t, const void *key, size_t klen)
{
	struct limit_ent	*e;

	if (t->bucket == NULL || klen > LIMIT_KEY_MAX)
		return NULL;
	for (e = t->bucket[limit_tab_slot(t, key, klen)]; e != NULL;
	    e = e->next)
		if (e->klen == klen && memcmp(e->key, key, klen) == 0)
			return e;
	return NULL;
}

struct limit_ent *
limit_tab_get(struct limit_tab *t, const void *key, size_t klen)
{
	struct limit_ent	*e;
	size_t			 i;

	if (t->bucket == NULL || klen > LIMIT_KEY_MAX)
		return NULL;
	if ((e = limit_tab_find(t, key, klen)) != NULL)
		return e;
	if ((e = calloc(1, sizeof(*e) + klen)) == NULL)
		return NULL;
	e->klen = (uint8_t)klen;
	memcpy(e->key, key, klen);
	i = limit_tab_slot(t, key, klen);
	e->next = t->bucket[i];
	t->bucket[i] = e;
	t->n++;
	return e;
}

void
limit_tab_release(struct limit_tab *t, struct limit_ent *e)
{
	struct limit_ent	**pp;

	if (e == NULL || e->conns > 0 || e->udp > 0)
		return;
	for (pp = &t->bucket[limit_tab_slot(t, e->key, e->klen)]; *pp != NULL;
	    pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			t->n--;
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
	memset(m, 0, sizeof(*m));
	m->max = max;
	m->unit = unit;
	TAILQ_INIT(&m->waiters);
}

static void
limit_mem_add(struct limit_mem *m, size_t n)
{
	m->used += n;
	if (m->used > m->peak)
		m->peak = m->used;
}

/*
 * With waiters queued the last unit is theirs: a relay that just gave a
 * buffer back cannot take it again at once while another one waits, so
 * paused relays take turns (FIFO) instead of starving behind busy ones.
 */
bool
limit_mem_take(struct limit_mem *m, size_t n)
{
	size_t	 keep = 0;

	if (!TAILQ_EMPTY(&m->waiters) && !m->waking)
		keep = m->unit;
	if (m->max != 0 && (n > m->max || keep > m->max - n ||
	    m->used > m->max - n - keep)) {
		m->denied++;
		return false;
	}
	limit_mem_add(m, n);
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
	static bool	 warned;

	/* An accounting slip must not take the tunnel down: clamp, once. */
	if (n > m->used) {
		if (!warned)
			log_warnx("limit_mem_give: %zu bytes given back, %zu "
			    "charged (accounting bug)", n, m->used);
		warned = true;
		n = m->used;
	}
	m->used -= n;
}

bool
limit_mem_admit(const struct limit_mem *m, size_t n)
{
	if (m->max == 0)
		return true;
	if (m->unit > m->max || n > m->max - m->unit)
		return false;
	return m->used <= m->max - m->unit - n;
}

void
limit_mem_wait(struct limit_mem *m, struct limit_waiter *w)
{
	if (w->queued)
		return;
	TAILQ_INSERT_TAIL(&m->waiters, w, entry);
	w->queued = true;
	w->gen = m->gen;
}

void
limit_mem_unwait(struct limit_mem *m, struct limit_waiter *w)
{
	if (!w->queued)
		return;
	TAILQ_REMOVE(&m->waiters, w, entry);
	w->queued = false;
}

void
limit_mem_wake(void *arg)
{
	struct limit_mem	*m = arg;
	struct limit_waiter	*w;
	uint64_t		 gen = m->gen++;

	/* Only those queued before this call: one refused again is queued
	 * with the new generation, for the next call. */
	while ((w = TAILQ_FIRST(&m->waiters)) != NULL && w->gen <= gen) {
		if (m->max != 0 && m->used + m->unit > m->max)
			return;
		limit_mem_unwait(m, w);
		m->waking = true;
		w->fn(w);
		m->waking = false;
	}
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

	if ((unsigned)k >= LIMIT_NKINDS)
		return false;
	st->refused[k]++;
	l = &st->log[k];
	l->since++;
	if (l->last_ms != 0 && now_ms - l->last_ms < LIMIT_LOG_INTERVAL_MS)
		return false;
	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_warnx("limit %s: %s: refusing new %s (%llu since the last "
	    "message)", limit_names[k], what, work,
	    (unsigned long long)l->since);
	/* Loop time starts near 0 in tests: never store 0 as "logged". */
	l->last_ms = now_ms != 0 ? now_ms : 1;
	l->since = 0;
	return true;
}
