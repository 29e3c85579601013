/*
 * Asynchronous name resolution for the server: requests whose target is a
 * domain name (native header, native UDP frames, trojan).
 *
 * getaddrinfo() blocks, so it runs on a small fixed pool of worker threads
 * (started on first use, all signals blocked); the loop thread only queues
 * a request and later gets the answer through an eventfd.  So that
 * /etc/hosts and nsswitch are honoured exactly as for every other program
 * on the host, nothing here speaks DNS itself.
 *
 * Bounds: at most `queue` requests wait for a thread (past that a request
 * fails at once with RESOLVE_BUSY, counted); each request has a deadline
 * (RESOLVE_TIMEOUT: a worker stuck in getaddrinfo finishes later and its
 * answer only goes into the cache); the cache holds at most `cache_size`
 * names, positive answers for cache_ttl, "no such name" for negative_ttl
 * (getaddrinfo reports no TTL, so these are fixed).
 *
 * Ownership: a pending query belongs to the resolver; the caller holds a
 * handle until its callback runs, and resolve_cancel() (e.g. when its
 * session dies) guarantees the callback never runs.  Everything but the
 * workers runs on the loop's thread; callbacks run from the loop, never
 * from inside resolve_start().
 */
#ifndef TUNSPLIT_RESOLVE_H
#define TUNSPLIT_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct addr;
struct loop;
struct resolver;
struct resolve_query;

#define RESOLVE_MAX_ADDRS	8	/* kept per name, in getaddrinfo order */
#define RESOLVE_NAME_MAX	253	/* without a trailing dot */

enum resolve_status {
	RESOLVE_OK = 0,
	RESOLVE_NOTFOUND,	/* no such name, or no address for it */
	RESOLVE_FAILED,		/* the name service failed (EAI_AGAIN, ...) */
	RESOLVE_TIMEOUT,	/* no answer within timeout_ms */
	RESOLVE_BUSY,		/* request queue full */
	RESOLVE_BADNAME,	/* not a host name */
	RESOLVE_NOMEM,
};

struct resolve_conf {
	unsigned	 workers;	/* threads, >= 1 */
	unsigned	 queue;		/* requests waiting for a thread, >= 1 */
	unsigned	 timeout_ms;	/* per request, >= 1 */
	unsigned	 cache_size;	/* names; 0: no cache */
	unsigned	 cache_ttl_ms;
	unsigned	 negative_ttl_ms;	/* RESOLVE_NOTFOUND; 0: not kept */
};

struct resolve_ip {
	int		 family;	/* AF_INET or AF_INET6 */
	uint8_t		 ip[16];	/* 4 or 16 bytes used */
};

struct resolve_result {
	enum resolve_status	 status;
	int			 gai_err;	/* getaddrinfo's, for the log */
	bool			 cached;	/* answered from the cache */
	size_t			 n;		/* RESOLVE_OK: >= 1 */
	struct resolve_ip	 ip[RESOLVE_MAX_ADDRS];
};

struct resolve_stats {
	uint64_t	 lookups;	/* resolve_start calls */
	uint64_t	 cache_hits;	/* positive and negative */
	uint64_t	 ok, notfound, failed, timeouts, busy, badname;
	uint64_t	 cancelled;
	uint64_t	 late;		/* answers after a timeout or cancel */
	unsigned	 waiting;	/* queued for a thread now */
	unsigned	 running;	/* in getaddrinfo now */
	unsigned	 threads;	/* started so far */
	unsigned	 cached;	/* names in the cache */
};

typedef void (*resolve_cb)(void *arg, const struct resolve_result *res);

struct resolver *resolver_new(struct loop *l, const struct resolve_conf *rc);
/* Cancels what is pending (no callbacks) and joins the threads; a thread
 * still stuck in getaddrinfo after a second is left behind (logged) with
 * the memory it needs.  Accepts NULL. */
void resolver_free(struct resolver *r);

/*
 * Looks up name (a host name, or a numeric address).  When the answer is
 * known at once -- cache, numeric address, bad name, queue full -- it is
 * written to *res and NULL is returned; cb is not called.  Otherwise the
 * query is pending: cb(arg, res) is called once, from the loop, unless
 * resolve_cancel() comes first.  The handle is invalid after either.
 */
struct resolve_query *resolve_start(struct resolver *r, const char *name,
    struct resolve_result *res, resolve_cb cb, void *arg);
void resolve_cancel(struct resolve_query *q);	/* accepts NULL */

/* A name as a client sent it, made fit for a log line: every byte outside
 * printable ASCII becomes '?'.  Such a name is no host name before or
 * after (RESOLVE_BADNAME), so a name can be made fit before its lookup. */
void resolve_name_vis(char *name);

const struct resolve_stats *resolver_stats(struct resolver *r);
const char *resolve_status_str(enum resolve_status st);
/* ip with port into a socket address. */
void resolve_ip_to_addr(const struct resolve_ip *ip, uint16_t port,
    struct addr *a);

#endif
