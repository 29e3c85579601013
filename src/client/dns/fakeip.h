/*
 * The fake-IP table (client.dns.mode: fake-ip): names the client answered
 * for itself, each with an address from the IPv4 range and, when there is
 * one, the IPv6 range, so that a flow to such an address can be sent on
 * by its name.
 *
 * Slot i of the table owns offset i + 1 of both ranges (offset 0, and an
 * IPv4 range's last address, are never issued), so an address finds its
 * slot by arithmetic and a name by a keyed hash (SipHash, a random key:
 * an app cannot aim at one chain): both ways O(1).  The table holds at
 * most `size` names; a new one takes the least recently used slot (its
 * old name is forgotten, an eviction).  Issuing a name or finding one by
 * its address makes it the most recently used.
 *
 * The mapping is saved to a file (atomically: a temporary, fsync, rename)
 * and loaded at start, so that what apps cached before a restart still
 * maps to the same names.  Loop thread only.
 */
#ifndef TUNSPLIT_FAKEIP_H
#define TUNSPLIT_FAKEIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/addr.h"

#define FAKEIP_TTL	1	/* seconds, in every answer */
#define FAKEIP_SIZE_MAX	(1u << 20)

struct conf;
struct loop;

struct fakeip_stats {
	uint64_t	 answers;	/* queries answered from the table */
	uint64_t	 issued;	/* names given a slot */
	uint64_t	 hits;		/* flows to a fake address, name found */
	uint64_t	 misses;	/* ... with no name: refused */
	uint64_t	 evictions;	/* names forgotten for a new one */
	uint64_t	 saves, save_errors;
	size_t		 entries;	/* names held now */
	size_t		 capacity;
};

/* A table over range4 and range6 (NULL: IPv4 only) of at most size
 * names (fewer if a range has fewer addresses); NULL when a range holds
 * fewer than 2 addresses to issue, or without memory. */
struct fakeip *fakeip_new(const struct cidr *range4,
    const struct cidr *range6, unsigned size);
void fakeip_free(struct fakeip *t);	/* NULL ok */

/* name's addresses (issued now if it had none): a4, and a6 when the table
 * has an IPv6 range.  name: lower-case, as dns_query_parse made it. */
int  fakeip_issue(struct fakeip *t, const char *name, uint8_t a4[4],
    uint8_t a6[16]);
/* Whether addr lies in one of the ranges. */
bool fakeip_contains(const struct fakeip *t, int family, const void *addr);
/* The name addr stands for, or NULL (not in a range, or no name there:
 * evicted or never issued); a hit or a miss is counted. */
const char *fakeip_name(struct fakeip *t, int family, const void *addr);

/*
 * The answer to the DNS query msg (a UDP payload an app sent to port 53)
 * when the table answers it: an A or AAAA query of class IN for a host
 * name not in c's fake_ip_exclude nor sent direct by c's rules, answered with the name's addresses
 * and a TTL of FAKEIP_TTL (AAAA without an IPv6 range: no address).
 * Returns the answer's length in out (DNS_ANSWER_MAX is enough), or 0:
 * not ours, to be forwarded as any other query.
 */
size_t fakeip_answer(struct fakeip *t, const struct conf *c,
    const uint8_t *msg, size_t len, uint8_t *out, size_t outlen);
/* Whether name is in c's fake_ip_exclude: itself, or under a ".suffix". */
bool fakeip_excluded(const struct conf *c, const char *name);
/* Whether c's rules send name's flows to a direct outbound (by the name
 * alone), which needs real answers. */
bool fakeip_direct(const struct conf *c, const char *name);

/* Writes the mapping to path (atomically).  0, or -1 with errno. */
int  fakeip_save(struct fakeip *t, const char *path);
/* Reads path into an empty table: 0 (also when there is no file), or -1
 * with why (the table is left empty: a corrupt file is not fatal). */
int  fakeip_load(struct fakeip *t, const char *path, char *why,
    size_t whylen);
bool fakeip_dirty(const struct fakeip *t);

struct fakeip_stats *fakeip_stats(struct fakeip *t);

/*
 * Worker processes (client.workers > 1, src/client/workers.h): worker 0
 * alone answers DNS, so it alone issues; on_issue tells the others (each
 * holds a copy of the table) before the answer leaves, and they put the
 * name in the same slot with fakeip_adopt (whatever the slot held, and
 * the name's old slot, go).  on_miss runs when an address in a range has
 * no name: true if news was taken in, and the address is looked up again.
 */
void fakeip_hooks(struct fakeip *t,
    void (*on_issue)(void *arg, uint32_t slot, const char *name),
    bool (*on_miss)(void *arg), void *arg);
int  fakeip_adopt(struct fakeip *t, uint32_t slot, const char *name);

/*
 * The client's table for configuration c (NULL when dns.mode is not
 * fake-ip, or on failure, logged): loaded from dns.fake_ip_file, saved
 * there every FAKEIP_SAVE_MS while it changed and by fakeip_close --
 * once attached to a loop (loop here, or fakeip_attach later: a table
 * never attached is never saved, as the workers' copies).
 */
#define FAKEIP_SAVE_MS	30000
struct fakeip *fakeip_open(struct loop *loop, const struct conf *c);
void fakeip_attach(struct fakeip *t, struct loop *loop);
void fakeip_close(struct fakeip *t);	/* saves, frees; NULL ok */

#endif
