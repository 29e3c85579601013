/*
 * Real DNS (client.dns, mode redirect, and fake-IP's forwarded queries):
 * which resolver answers a name, and a cache of the answers.
 *
 * dnsfwd_pick: the first of client.dns.upstreams one of whose domains is
 * the name or a suffix of it at a label boundary ("corp.test" takes
 * corp.test and a.corp.test, not xcorp.test; "" -- "." in the
 * configuration -- takes every name); -1 for none (client.dns
 * server answers).  Each upstream's address is an ordinary destination:
 * client_route() picks the outbound that carries its queries.
 *
 * The cache: at most size answers, per (name, type, class), the least
 * recently used dropped first.  A positive answer is kept for its least
 * TTL (at most DNSFWD_TTL_MAX); a negative one (NXDOMAIN, or NOERROR
 * with no answer) for its least TTL (the SOA's) but at most
 * DNSFWD_NEG_TTL, DNSFWD_NEG_TTL when it has none; TTL 0, truncated
 * replies, other rcodes and names that are not plain are not kept.  An
 * answer from the cache has the query's id and question bytes (its
 * letter case) and its TTLs lowered by the seconds it was kept.  The
 * clock is the caller's (milliseconds), so tests drive it.
 */
#ifndef TUNSPLIT_DNSFWD_H
#define TUNSPLIT_DNSFWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conf;
struct dns_query;
struct dnsfwd_cache;

#define DNSFWD_TTL_MAX		86400
#define DNSFWD_NEG_TTL		30
#define DNSFWD_MSG_MAX		4096	/* larger replies are not kept */

struct dnsfwd_stats {
	uint64_t	 hits, misses;	/* queries answered here, or not */
	uint64_t	 stored, evicted, expired;
	uint64_t	 entries;	/* now */
};

int dnsfwd_pick(const struct conf *c, const char *name);

/* NULL when size is 0 or out of memory: no cache. */
struct dnsfwd_cache *dnsfwd_cache_new(unsigned size);
void dnsfwd_cache_free(struct dnsfwd_cache *);	/* accepts NULL */
void dnsfwd_cache_flush(struct dnsfwd_cache *);	/* accepts NULL */
/* The answer to q into out: its length, 0 for none (counted a miss). */
size_t dnsfwd_cache_get(struct dnsfwd_cache *, const struct dns_query *q,
    uint64_t now_ms, uint8_t *out, size_t outlen);
/* An upstream's reply, kept when it may be. */
void dnsfwd_cache_put(struct dnsfwd_cache *, const uint8_t *msg, size_t len,
    uint64_t now_ms);
const struct dnsfwd_stats *dnsfwd_cache_stats(const struct dnsfwd_cache *);

/*
 * Learnt names: the addresses real DNS answered, each with the name the
 * app asked for, so that a later flow to one is matched by the rules'
 * domain keys too (client_route, when nothing else named its domain).
 * At most size addresses; a new one takes the slot of the oldest learnt
 * (an address answered again is learnt anew, under its latest name).
 * One table per client, on the loop thread: dnsfwd_names_use makes t
 * the one client_route asks (NULL: none).
 */
struct dnsfwd_names;

#define DNSFWD_NAMES_MAX	4096

struct dnsfwd_names *dnsfwd_names_new(unsigned size);
void dnsfwd_names_free(struct dnsfwd_names *);	/* accepts NULL */
/* Every A and AAAA address of an upstream's reply, under its question's
 * name (plain names only). */
void dnsfwd_names_learn(struct dnsfwd_names *, const uint8_t *msg,
    size_t len);
/* The name ip (4 or 16 bytes by family) was learnt under, or NULL. */
const char *dnsfwd_names_find(const struct dnsfwd_names *, int family,
    const uint8_t *ip);
void dnsfwd_names_use(struct dnsfwd_names *);
const struct dnsfwd_names *dnsfwd_names_used(void);
/* Worker processes (src/client/workers.h): only worker 0 sees DNS, so
 * on_learn (set there) gets every reply something was learnt from, to
 * send to the others; on_miss (set in the others) runs when an address
 * has no name: true if news was taken in, and it is looked up again
 * (in the table in use then, which the news may have made). */
void dnsfwd_names_hooks(void (*on_learn)(const uint8_t *msg, size_t len),
    bool (*on_miss)(void));

#endif
