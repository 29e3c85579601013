/*
 * Resource limits: connection counts per key (the server's sources and
 * users), a memory budget for relay buffers (both roles), and refusal
 * messages rate-limited per kind of limit.  Pure accounting, no I/O and no
 * loop: the callers decide what a refusal means (close at accept, an error
 * status, an RST to the app) and feed loop time in.
 */
#ifndef TUNSPLIT_LIMIT_H
#define TUNSPLIT_LIMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/log.h"

struct addr;

/* Refusal messages: at most one per kind per interval, carrying the
 * number of refusals since the previous message. */
#define LIMIT_LOG_INTERVAL_MS	10000

/* Defaults of server.max_conns_per_source, max_cover_per_source,
 * max_preauth and max_preauth_per_source; the arithmetic behind them is
 * in tunsplit.yaml(5) and doc/DESIGN.md ("Strangers"). */
#define LIMIT_SOURCE_DEFAULT		4096
#define LIMIT_COVER_SOURCE_DEFAULT	32
#define LIMIT_PREAUTH_DEFAULT		512
#define LIMIT_PREAUTH_SOURCE_DEFAULT	256

enum limit_kind {
	LIMIT_CONNS,		/* server.max_conns */
	LIMIT_SOURCE,		/* server.max_conns_per_source */
	LIMIT_USER_CONNS,	/* users[].max_conns */
	LIMIT_UDP,		/* server.max_udp */
	LIMIT_USER_UDP,		/* users[].max_udp */
	LIMIT_MEMORY,		/* max_buffer_memory: new work refused */
	LIMIT_COVER_SOURCE,	/* server.max_cover_per_source */
	LIMIT_COVER_MEMORY,	/* server.cover_buffer_memory */
	LIMIT_PREAUTH_SOURCE,	/* server.max_preauth_per_source */
	LIMIT_PREAUTH,		/* server.max_preauth: the oldest closed */
	LIMIT_NKINDS
};

/* "conns", "source", "user_conns", "udp", "user_udp", "memory",
 * "cover_source", "cover_memory", "preauth_source", "preauth". */
const char *limit_kind_name(enum limit_kind k);

/*
 * Threads.  The server's workers (one loop each) share one struct
 * limit_server: the counts are atomic, a table's chains are guarded by
 * striped locks taken only to find, create or free an entry (at an
 * accept, an authentication, a close: never per byte), and the memory
 * budget is a lock-free counter with one queue of waiters per thread
 * (limit_set_slot).  A single-threaded user (the client) sees no
 * difference.
 */
#define LIMIT_SLOTS		64	/* threads sharing a budget, at most */
#define LIMIT_TAB_STRIPES	16

/* The waiter queue this thread uses in every limit_mem (0 by default). */
void limit_set_slot(unsigned slot);

/* Takes one count on *n unless it reached max (0: no maximum); exact
 * however many threads take at once. */
bool limit_count_take(_Atomic unsigned *n, unsigned max);

/* ---- counts per key ------------------------------------------------- */

/*
 * An entry exists only while something holds it (conns + udp > 0), so the
 * table never holds more entries than there are live connections: a flood
 * from many (or spoofed-then-completed) sources costs what the connections
 * themselves cost, and nothing once they are gone.  Buckets are fixed at
 * init; the hash is keyed (SipHash with a random key), so chosen keys
 * cannot pile up in one chain.
 */
#define LIMIT_KEY_MAX	64

struct limit_ent {
	struct limit_ent	*next;		/* bucket chain */
	_Atomic unsigned	 conns;
	_Atomic unsigned	 udp;
	_Atomic unsigned	 preauth;	/* of conns: not authenticated yet */
	_Atomic unsigned	 waiting;	/* of conns: accepted, waiting for
						 * a preauth turn (server.c) */
	_Atomic unsigned	 cover;		/* of conns: relayed to the cover */
	unsigned		 holds;		/* gets not yet released (under
						 * the stripe's lock): another
						 * thread's get keeps it */
	uint8_t			 klen;
	uint8_t			 key[];
};

struct limit_tab {
	struct limit_ent	**bucket;
	size_t			 nbucket;	/* power of two */
	_Atomic size_t		 n;		/* entries */
	uint8_t			 hkey[16];
	pthread_mutex_t		 lock[LIMIT_TAB_STRIPES];	/* by bucket */
};

/* nbucket is rounded up to a power of two.  0 or -1 (out of memory). */
int  limit_tab_init(struct limit_tab *t, size_t nbucket);
void limit_tab_free(struct limit_tab *t);	/* every entry */
struct limit_ent *limit_tab_find(const struct limit_tab *t, const void *key,
    size_t klen);
/* Finds or creates (with zero counts) and holds it until the matching
 * release; NULL when out of memory or klen is past LIMIT_KEY_MAX. */
struct limit_ent *limit_tab_get(struct limit_tab *t, const void *key,
    size_t klen);
/* Drops a get's hold; frees e when nothing holds it any more (no hold,
 * no count). */
void limit_tab_release(struct limit_tab *t, struct limit_ent *e);

/* The key of a client address: IPv4 (also IPv4-mapped IPv6) by /32, IPv6
 * by /64 -- a site gets a /64 at least, and a host picks freely in it.
 * Returns the key length. */
#define LIMIT_SOURCE_KEY_LEN	9
size_t limit_source_key(const struct addr *a, uint8_t key[LIMIT_SOURCE_KEY_LEN]);

/* ---- memory budget -------------------------------------------------- */

struct limit_waiter;
TAILQ_HEAD(limit_waiters, limit_waiter);

/*
 * A waiter is something paused because the budget refused it memory (a
 * relay that stopped reading); limit_mem_wake() calls it again once
 * memory is free.  Embedded in its owner; never queued twice.
 */
struct limit_waiter {
	TAILQ_ENTRY(limit_waiter) entry;
	bool			 queued;
	uint64_t		 gen;		/* limit_mem's, when queued */
	void			(*fn)(struct limit_waiter *);
};

/* One thread's waiters (its slot). */
struct limit_mem_q {
	struct limit_waiters	 waiters;
	uint64_t		 gen;		/* wake calls so far */
	bool			 waking;	/* a waiter runs: its turn */
};

struct limit_mem {
	_Atomic size_t		 max;		/* 0: no limit */
	_Atomic size_t		 used;
	_Atomic size_t		 peak;
	size_t			 unit;		/* what a waiter needs to go on */
	_Atomic uint64_t	 denied;	/* takes refused (reads paused) */
	_Atomic unsigned	 nwaiting;	/* queued, all slots */
	struct limit_mem_q	 q[LIMIT_SLOTS];
};

void limit_mem_init(struct limit_mem *m, size_t max, size_t unit);
/* Takes n bytes when they fit under max -- and, while waiters are queued,
 * leave a unit for them; false (counted) otherwise. */
bool limit_mem_take(struct limit_mem *m, size_t n);
/* Takes n bytes even past max: for bytes that exist already. */
void limit_mem_force(struct limit_mem *m, size_t n);
void limit_mem_give(struct limit_mem *m, size_t n);
/* Room for n more bytes: admission of new work.  New work is refused
 * before existing work is paused: admission keeps `unit` in reserve. */
bool limit_mem_admit(const struct limit_mem *m, size_t n);
void limit_mem_wait(struct limit_mem *m, struct limit_waiter *w);
void limit_mem_unwait(struct limit_mem *m, struct limit_waiter *w);
/* Calls this thread's waiters queued before this call, oldest first,
 * while a unit fits; a waiter that is refused again queues itself again
 * (for the next call).  Meant for the end of a loop iteration. */
void limit_mem_wake(void *m);
/* This thread has waiters queued on m (another thread may free memory
 * without waking this one's loop: the caller polls while true). */
bool limit_mem_waiting(const struct limit_mem *m);

/*
 * Parses "64M", "512K", "1G", "4096" (bytes; K, M, G are powers of 1024,
 * also written KB/KiB) into *bytes; -1 when invalid or past 64 bits.
 * Whether the size fits size_t is the caller's range check: on a 32-bit
 * system "8G" is a size too large, not a malformed one.
 */
int limit_parse_size(const char *s, unsigned long long *bytes);

/* ---- refusals -------------------------------------------------------- */

struct limit_log {
	_Atomic uint64_t	 last_ms;	/* 0: never logged */
	_Atomic uint64_t	 since;		/* refusals since last_ms */
};

/* Counters and message state of every kind. */
struct limit_stats {
	_Atomic uint64_t	 refused[LIMIT_NKINDS];
	struct limit_log	 log[LIMIT_NKINDS];
};

/*
 * Counts one refusal of kind k; logs "<what>: refusing new <work> (N since
 * the last message)" unless one was logged for k less than
 * LIMIT_LOG_INTERVAL_MS ago.  Returns true when it logged.
 */
bool limit_refuse(struct limit_stats *st, enum limit_kind k, uint64_t now_ms,
    const char *work, const char *fmt, ...) LOG_PRINTF(5, 6);

/* server.cover_buffer_memory when not set: an eighth of the main
 * budget, at least 1 MiB; 32 MiB when the main one has no limit. */
size_t limit_cover_memory_default(size_t max_buffer_memory);

/* The server's limit state: server.c owns it, sess.c charges it; one
 * for all workers. */
struct limit_server {
	struct limit_tab	 sources;	/* connections per source */
	struct limit_tab	 users;		/* sessions, datagram ones */
	struct limit_mem	 mem;		/* authenticated relays' buffers */
	struct limit_mem	 cover_mem;	/* cover relays' buffers */
	struct limit_stats	 st;
	_Atomic unsigned	 conns;		/* accepted: max_conns (server.c) */
	_Atomic unsigned	 udp;		/* live datagram sessions */
	_Atomic unsigned	 preauth;	/* sessions not authenticated yet */
	_Atomic unsigned	 cover;		/* sessions relayed to the cover */
	_Atomic unsigned	 waiting;	/* accepted, waiting for a
						 * preauth turn (server.c) */
};

#endif
