/*
 * The server's user table (keys by user id) and its replay cache: who a
 * request header comes from, and whether it was seen before.
 *
 * Replay cache.  A header is accepted at most once.  users_check() rejects
 * a header whose timestamp is more than W = time_window_s away from the
 * server clock (USERS_STALE) before it looks at the cache, so the cache only
 * has to remember nonces for as long as their header could still pass that
 * test.  A header with timestamp ts passes while now is in [ts-W, ts+W]; it
 * was first accepted at some t1 >= ts-W, so it can be replayed until at most
 * t1+2W.  Entries therefore live 2W after insertion, then their slots are
 * reused.
 *
 * The cache is bounded (USERS_REPLAY_CAP nonces).  When it is full of live
 * entries the oldest one is evicted, never the new header refused: refusing
 * would let one user with a valid key lock every other user out.  Only
 * headers with a valid MAC reach the cache, so filling it takes a key, and
 * what such a user gains is a chance to replay headers older than the last
 * USERS_REPLAY_CAP accepted ones (which are themselves at most 2W old).
 *
 * Layout: a FIFO ring of (nonce, insertion time) in insertion order, so the
 * oldest entry is always at the head, plus an open-addressing index
 * (linear probing, load <= 1/2) of ring positions.  The index hashes the
 * nonce with a keyed SipHash so an authenticated client cannot choose
 * nonces that pile up in one probe run.
 */
#include "config.h"

#include "server/users.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "conf/conf.h"
#include "core/log.h"
#include "wire/auth.h"

#define USERS_REPLAY_CAP		65536u	/* nonces remembered */
#define USERS_REPLAY_IDX		(2 * USERS_REPLAY_CAP) /* power of 2 */
#define USERS_REPLAY_EMPTY	UINT32_MAX

struct users_ent {
	uint8_t		 id[PROTO_USER_ID_LEN];
	uint8_t		 key[PROTO_KEY_LEN];
	size_t		 index;		/* in conf->server.users */
};

struct replay_ent {
	uint8_t		 nonce[PROTO_NONCE_LEN];
	uint64_t	 t;		/* server time of insertion */
};

struct users {
	/* Replaced whole by users_reload(); the replay cache stays. */
	pthread_rwlock_t	 users_lock;
	struct users_ent	*users;		/* sorted by id */
	char			(*names)[CONF_NAME_MAX]; /* by conf index */
	size_t			 nusers;
	uint64_t		 window_s;
	bool			 accept_v1;	/* server.accept_v1 */
	uint64_t		 keep_s;	/* replay entries: 2 x the
						 * largest window ever used */

	/* Shared by all server workers: a replay sent to another worker
	 * must still be caught. */
	pthread_mutex_t		 lock;
	struct replay_ent	*ring;
	uint32_t		 head, count;
	uint32_t		*index;
	uint8_t			 hkey[crypto_shorthash_KEYBYTES];
};

static int
users_ent_cmp(const void *a, const void *b)
{
	const struct users_ent	*ua = a, *ub = b;

	return memcmp(ua->id, ub->id, PROTO_USER_ID_LEN);
}

static void
users_table_free(struct users_ent *users, char (*names)[CONF_NAME_MAX],
    size_t n)
{
	if (users != NULL) {
		sodium_memzero(users, n * sizeof(*users));
		free(users);
	}
	free(names);
}

/* The user table of c: keys, ids (sorted) and names.  0 or -1. */
static int
users_table_make(const struct conf *c, struct users_ent **usersp,
    char (**namesp)[CONF_NAME_MAX])
{
	struct users_ent	*users = NULL;
	char			(*names)[CONF_NAME_MAX] = NULL;
	size_t			 i, n = c->server.nusers;

	if (n > 0 && ((users = calloc(n, sizeof(*users))) == NULL ||
	    (names = calloc(n, sizeof(*names))) == NULL)) {
		users_table_free(users, names, n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		memcpy(users[i].key, c->server.users[i].key, PROTO_KEY_LEN);
		auth_user_id(users[i].key, users[i].id);
		users[i].index = i;
		snprintf(names[i], sizeof(names[i]), "%s",
		    c->server.users[i].name);
	}
	if (n > 1)
		qsort(users, n, sizeof(*users), users_ent_cmp);
	*usersp = users;
	*namesp = names;
	return 0;
}

struct users *
users_new(const struct conf *c)
{
	struct users	*a;

	if (c == NULL)
		return NULL;
	if (sodium_init() < 0) {
		log_warnx("libsodium initialisation failed");
		return NULL;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		log_warn("users_new");
		return NULL;
	}
	if (pthread_mutex_init(&a->lock, NULL) != 0) {
		log_warnx("users_new: mutex");
		free(a);
		return NULL;
	}
	if (pthread_rwlock_init(&a->users_lock, NULL) != 0) {
		log_warnx("users_new: lock");
		pthread_mutex_destroy(&a->lock);
		free(a);
		return NULL;
	}
	a->window_s = c->server.time_window_s;
	a->accept_v1 = c->server.accept_v1;
	a->keep_s = 2 * a->window_s;
	if (users_table_make(c, &a->users, &a->names) == -1)
		goto fail;
	a->nusers = c->server.nusers;

	a->ring = calloc(USERS_REPLAY_CAP, sizeof(*a->ring));
	a->index = malloc(USERS_REPLAY_IDX * sizeof(*a->index));
	if (a->ring == NULL || a->index == NULL)
		goto fail;
	memset(a->index, 0xff, USERS_REPLAY_IDX * sizeof(*a->index));
	crypto_shorthash_keygen(a->hkey);
	return a;

fail:
	log_warn("users_new");
	users_free(a);
	return NULL;
}

/*
 * Key rotation: the new table replaces the old one at once, so a removed
 * key stops working for new headers while sessions that authenticated
 * with it go on.  The replay cache is kept: nonces are global, and a
 * header accepted before the reload must stay unreplayable after it.
 */
int
users_reload(struct users *a, const struct conf *c)
{
	struct users_ent	*users, *old;
	char			(*names)[CONF_NAME_MAX], (*old_names)[CONF_NAME_MAX];
	size_t			 old_n;

	if (a == NULL || c == NULL)
		return -1;
	if (users_table_make(c, &users, &names) == -1) {
		log_warn("users_reload");
		return -1;
	}
	pthread_rwlock_wrlock(&a->users_lock);
	old = a->users;
	old_names = a->names;
	old_n = a->nusers;
	a->users = users;
	a->names = names;
	a->nusers = c->server.nusers;
	a->window_s = c->server.time_window_s;
	a->accept_v1 = c->server.accept_v1;
	pthread_rwlock_unlock(&a->users_lock);
	/* A shorter window must not expire nonces that the old one could
	 * still let through. */
	pthread_mutex_lock(&a->lock);
	if (a->keep_s < 2 * (uint64_t)c->server.time_window_s)
		a->keep_s = 2 * (uint64_t)c->server.time_window_s;
	pthread_mutex_unlock(&a->lock);
	users_table_free(old, old_names, old_n);
	return 0;
}

const char *
users_name(const struct users *a, size_t user)
{
	if (a == NULL || user >= a->nusers)
		return "?";
	return a->names[user];
}

size_t
users_count(const struct users *a)
{
	return a != NULL ? a->nusers : 0;
}

void
users_free(struct users *a)
{
	if (a == NULL)
		return;
	users_table_free(a->users, a->names, a->nusers);
	free(a->ring);
	free(a->index);
	sodium_memzero(a->hkey, sizeof(a->hkey));
	pthread_rwlock_destroy(&a->users_lock);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static uint32_t
replay_home(const struct users *a, const uint8_t nonce[PROTO_NONCE_LEN])
{
	uint8_t		h[crypto_shorthash_BYTES];
	uint32_t	v;

	crypto_shorthash(h, nonce, PROTO_NONCE_LEN, a->hkey);
	v = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
	    (uint32_t)h[3] << 24;
	return v & (USERS_REPLAY_IDX - 1);
}

static bool
replay_find(const struct users *a, const uint8_t nonce[PROTO_NONCE_LEN])
{
	uint32_t	i, pos;

	for (i = replay_home(a, nonce);; i = (i + 1) & (USERS_REPLAY_IDX - 1)) {
		if ((pos = a->index[i]) == USERS_REPLAY_EMPTY)
			return false;
		if (memcmp(a->ring[pos].nonce, nonce, PROTO_NONCE_LEN) == 0)
			return true;
	}
}

/* Removes the ring head from the index (backward-shift deletion, so
 * probe runs stay unbroken without tombstones) and pops it. */
static void
replay_pop(struct users *a)
{
	const uint32_t	 mask = USERS_REPLAY_IDX - 1;
	uint32_t	 i, j, k;

	i = replay_home(a, a->ring[a->head].nonce);
	while (a->index[i] != a->head)
		i = (i + 1) & mask;
	for (j = i;;) {
		j = (j + 1) & mask;
		if (a->index[j] == USERS_REPLAY_EMPTY)
			break;
		k = replay_home(a, a->ring[a->index[j]].nonce);
		/* Entry at j stays when its home lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		a->index[i] = a->index[j];
		i = j;
	}
	a->index[i] = USERS_REPLAY_EMPTY;
	a->head = (a->head + 1) % USERS_REPLAY_CAP;
	a->count--;
}

static void
replay_expire(struct users *a, uint64_t now)
{
	while (a->count > 0 && now > a->ring[a->head].t &&
	    now - a->ring[a->head].t > a->keep_s)
		replay_pop(a);
}

static void
replay_insert(struct users *a, const uint8_t nonce[PROTO_NONCE_LEN],
    uint64_t now)
{
	uint32_t	i, pos;

	if (a->count == USERS_REPLAY_CAP)
		replay_pop(a);		/* evict the oldest; see top */
	pos = (a->head + a->count) % USERS_REPLAY_CAP;
	memcpy(a->ring[pos].nonce, nonce, PROTO_NONCE_LEN);
	a->ring[pos].t = now;
	a->count++;
	for (i = replay_home(a, nonce); a->index[i] != USERS_REPLAY_EMPTY;)
		i = (i + 1) & (USERS_REPLAY_IDX - 1);
	a->index[i] = pos;
}

/* First user with this id, or NULL.  Ids of distinct keys collide with
 * probability 2^-64 per pair; the caller tries every match anyway. */
static const struct users_ent *
users_find(const struct users *a, const uint8_t id[PROTO_USER_ID_LEN])
{
	size_t	lo = 0, hi = a->nusers, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (memcmp(a->users[mid].id, id, PROTO_USER_ID_LEN) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < a->nusers &&
	    memcmp(a->users[lo].id, id, PROTO_USER_ID_LEN) == 0)
		return &a->users[lo];
	return NULL;
}

int
users_check(struct users *a, const uint8_t *hdr, size_t len,
    const struct proto_req *r, const uint8_t *bind, uint64_t now_s,
    size_t *user)
{
	return users_check_name(a, hdr, len, r, bind, now_s, user, NULL, 0);
}

int
users_check_name(struct users *a, const uint8_t *hdr, size_t len,
    const struct proto_req *r, const uint8_t *bind, uint64_t now_s,
    size_t *user, char *name, size_t namelen)
{
	const struct users_ent	*u, *end;
	uint64_t		 skew;
	size_t			 index;
	bool			 replay;
	int			 rc;

	if (a == NULL || hdr == NULL || r == NULL)
		return USERS_UNKNOWN;
	pthread_rwlock_rdlock(&a->users_lock);
	/* Version 1 is valid on any TLS connection: after a restart (an
	 * empty replay cache) a recorded one would pass again. */
	if (r->version == PROTO_VERSION_1 && !a->accept_v1) {
		rc = USERS_V1;
		goto out;
	}
	if ((u = users_find(a, r->user_id)) == NULL) {
		rc = USERS_UNKNOWN;
		goto out;
	}
	rc = USERS_BAD_MAC;
	if (len < r->len)
		goto out;
	for (end = a->users + a->nusers; u < end; u++) {
		if (memcmp(u->id, r->user_id, PROTO_USER_ID_LEN) != 0)
			goto out;
		if (proto_req_verify_mac(hdr, r->len, u->key, bind) == 0)
			break;
	}
	if (u == end)
		goto out;
	index = u->index;

	skew = now_s > r->ts ? now_s - r->ts : r->ts - now_s;
	if (skew > a->window_s) {
		rc = USERS_STALE;
		goto out;
	}

	pthread_mutex_lock(&a->lock);
	replay_expire(a, now_s);
	replay = replay_find(a, r->nonce);
	if (!replay)
		replay_insert(a, r->nonce, now_s);
	pthread_mutex_unlock(&a->lock);
	rc = USERS_REPLAY;
	if (replay)
		goto out;
	if (user != NULL)
		*user = index;
	if (name != NULL && namelen > 0)
		snprintf(name, namelen, "%s", index < a->nusers ?
		    a->names[index] : "?");
	rc = USERS_OK;
out:
	pthread_rwlock_unlock(&a->users_lock);
	return rc;
}

const char *
users_result_str(int res)
{
	switch (res) {
	case USERS_OK:
		return "ok";
	case USERS_UNKNOWN:
		return "unknown user";
	case USERS_BAD_MAC:
		return "bad MAC";
	case USERS_STALE:
		return "timestamp outside the window";
	case USERS_REPLAY:
		return "replayed header";
	case USERS_V1:
		return "version 1 header";
	default:
		return "unknown result";
	}
}

void
users_limits(const struct conf *c, bool trojan, size_t idx,
    const char *name, unsigned *max_conns, unsigned *max_udp)
{
	struct conf_limits	 l = { 0, 0 };

	if (trojan && idx < c->server.ntrojan && c->server.trojan_limits != NULL)
		l = c->server.trojan_limits[idx];
	else if (!trojan && idx < c->server.nusers &&
	    strcmp(c->server.users[idx].name, name) == 0) {
		l.max_conns = c->server.users[idx].max_conns;
		l.max_udp = c->server.users[idx].max_udp;
	}
	*max_conns = l.max_conns != 0 ? l.max_conns :
	    c->server.max_conns_per_user;
	*max_udp = l.max_udp != 0 ? l.max_udp : c->server.max_udp_per_user;
}
