/*
 * The fake-IP table (see fakeip.h).
 *
 * The file, text, least recently used first so that loading it in order
 * rebuilds the LRU order:
 *
 *   tunsplit-fakeip 1 RANGE4 RANGE6|- CAPACITY
 *   SLOT NAME
 *   ...
 *
 * A file made for other ranges is ignored (the addresses would mean other
 * names); one made for another capacity keeps the slots that still exist.
 */
#include "config.h"

#include "client/dns/fakeip.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <sodium.h>

#include "conf/conf.h"
#include "core/log.h"
#include "core/loop.h"
#include "rules/rules.h"
#include "wire/dns.h"

#define NIL		UINT32_MAX
#define FAKEIP_MAGIC	"tunsplit-fakeip 1"
#define FAKEIP_NAME_MAX	253

struct fakeip_slot {
	char		*name;		/* NULL: free */
	uint32_t	 hnext;		/* hash chain */
	uint32_t	 prev, next;	/* LRU list: prev is more recent */
};

struct fakeip {
	struct cidr	 r4, r6;
	bool		 has6;
	uint32_t	 cap;
	uint32_t	 used;		/* slots ever taken: 0..used-1 */
	uint32_t	 freel;		/* free slots below used (by hnext) */
	uint32_t	 head, tail;	/* most, least recently used */
	struct fakeip_slot *slot;
	uint32_t	*bucket;	/* slot index or NIL */
	uint32_t	 nbucket;	/* a power of two */
	uint8_t		 hkey[crypto_shorthash_KEYBYTES];
	bool		 dirty;
	struct fakeip_stats st;
	/* Workers (client.workers > 1): worker 0 tells the others of each
	 * name it issues; they look again after a miss. */
	void		(*on_issue)(void *arg, uint32_t slot, const char *name);
	bool		(*on_miss)(void *arg);
	void		*hook_arg;
	/* fakeip_open */
	struct loop	*loop;
	struct loop_timer timer;
	char		*path;
	bool		 save_failing;	/* logged once */
};

/* ---- ranges ---------------------------------------------------------- */

static void
cidr_base(struct cidr *c)
{
	size_t	len = c->family == AF_INET ? 4 : 16, i;
	unsigned bits;

	for (i = 0; i < len; i++) {
		bits = i * 8 >= c->prefix ? 0 :
		    (c->prefix - i * 8 >= 8 ? 8 : c->prefix - i * 8);
		c->bytes[i] &= (uint8_t)(0xff00 >> bits);
	}
	memset(c->bytes + len, 0, 16 - len);
}

/* Addresses a range can issue: offsets 1 .. n (an IPv4 range's last is
 * its broadcast address, left out too). */
static uint64_t
range_usable(const struct cidr *c)
{
	unsigned	host = (c->family == AF_INET ? 32u : 128u) - c->prefix;
	uint64_t	n;

	if (host >= 32)
		return FAKEIP_SIZE_MAX;
	n = ((uint64_t)1 << host);
	return c->family == AF_INET ? (n >= 2 ? n - 2 : 0) : n - 1;
}

static void
range_addr(const struct cidr *c, uint32_t off, uint8_t *out)
{
	size_t	len = c->family == AF_INET ? 4 : 16;
	unsigned carry = 0, i, v;

	memcpy(out, c->bytes, len);
	for (i = 0; i < len; i++) {
		v = out[len - 1 - i] + (i < 4 ? (off >> (8 * i)) & 0xff : 0) +
		    carry;
		out[len - 1 - i] = (uint8_t)v;
		carry = v >> 8;
	}
}

/* The offset of ip in c (which holds it), up to 32 bits; UINT64_MAX past
 * that. */
static uint64_t
range_off(const struct cidr *c, const uint8_t *ip)
{
	size_t	len = c->family == AF_INET ? 4 : 16, i;
	uint64_t off = 0;

	for (i = 0; i < len; i++) {
		if (i + 4 < len) {
			if ((ip[i] ^ c->bytes[i]) != 0)
				return UINT64_MAX;
			continue;
		}
		off = off << 8 | (uint8_t)(ip[i] - c->bytes[i]);
	}
	return off;
}

bool
fakeip_contains(const struct fakeip *t, int family, const void *addr)
{
	if (family == AF_INET)
		return cidr_match(&t->r4, AF_INET, addr);
	return family == AF_INET6 && t->has6 &&
	    cidr_match(&t->r6, AF_INET6, addr);
}

/* ---- the table --------------------------------------------------------- */

static uint32_t
name_hash(const struct fakeip *t, const char *name)
{
	uint8_t	 h[crypto_shorthash_BYTES];
	uint32_t v;

	crypto_shorthash(h, (const uint8_t *)name, strlen(name), t->hkey);
	memcpy(&v, h, sizeof(v));
	return v & (t->nbucket - 1);
}

struct fakeip *
fakeip_new(const struct cidr *range4, const struct cidr *range6,
    unsigned size)
{
	struct fakeip	*t;
	uint64_t	 cap = size;
	uint32_t	 i;

	if (range4 == NULL || range4->family != AF_INET ||
	    (range6 != NULL && range6->family != AF_INET6))
		return NULL;
	if (cap > FAKEIP_SIZE_MAX)
		cap = FAKEIP_SIZE_MAX;
	if (range_usable(range4) < cap)
		cap = range_usable(range4);
	if (range6 != NULL && range_usable(range6) < cap)
		cap = range_usable(range6);
	if (cap < 2 || (t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->r4 = *range4;
	cidr_base(&t->r4);
	if (range6 != NULL) {
		t->r6 = *range6;
		cidr_base(&t->r6);
		t->has6 = true;
	}
	t->cap = (uint32_t)cap;
	for (t->nbucket = 1; t->nbucket < t->cap; t->nbucket <<= 1)
		;
	t->slot = calloc(t->cap, sizeof(*t->slot));
	t->bucket = malloc(t->nbucket * sizeof(*t->bucket));
	if (t->slot == NULL || t->bucket == NULL) {
		fakeip_free(t);
		return NULL;
	}
	for (i = 0; i < t->nbucket; i++)
		t->bucket[i] = NIL;
	t->freel = t->head = t->tail = NIL;
	t->st.capacity = t->cap;
	crypto_shorthash_keygen(t->hkey);
	loop_timer_init(&t->timer, NULL);
	return t;
}

static void
fakeip_clear(struct fakeip *t)
{
	uint32_t i;

	for (i = 0; i < t->used; i++) {
		free(t->slot[i].name);
		t->slot[i].name = NULL;
	}
	for (i = 0; i < t->nbucket; i++)
		t->bucket[i] = NIL;
	t->used = 0;
	t->freel = t->head = t->tail = NIL;
	t->st.entries = 0;
}

void
fakeip_free(struct fakeip *t)
{
	if (t == NULL)
		return;
	if (t->slot != NULL)
		fakeip_clear(t);
	free(t->slot);
	free(t->bucket);
	free(t->path);
	free(t);
}

static void
lru_unlink(struct fakeip *t, uint32_t i)
{
	struct fakeip_slot *s = &t->slot[i];

	if (s->prev != NIL)
		t->slot[s->prev].next = s->next;
	else
		t->head = s->next;
	if (s->next != NIL)
		t->slot[s->next].prev = s->prev;
	else
		t->tail = s->prev;
}

static void
lru_push(struct fakeip *t, uint32_t i)
{
	struct fakeip_slot *s = &t->slot[i];

	s->prev = NIL;
	s->next = t->head;
	if (t->head != NIL)
		t->slot[t->head].prev = i;
	t->head = i;
	if (t->tail == NIL)
		t->tail = i;
}

static void
lru_touch(struct fakeip *t, uint32_t i)
{
	if (t->head == i)
		return;
	lru_unlink(t, i);
	lru_push(t, i);
}

static uint32_t
hash_find(const struct fakeip *t, const char *name)
{
	uint32_t i;

	for (i = t->bucket[name_hash(t, name)]; i != NIL; i = t->slot[i].hnext)
		if (strcmp(t->slot[i].name, name) == 0)
			return i;
	return NIL;
}

static void
hash_del(struct fakeip *t, uint32_t i)
{
	uint32_t *p = &t->bucket[name_hash(t, t->slot[i].name)];

	while (*p != i)
		p = &t->slot[*p].hnext;
	*p = t->slot[i].hnext;
}

/* Puts name (not in the table) into slot i: a free one, or the least
 * recently used, whose name goes.  0 or -1 (memory). */
static int
slot_fill(struct fakeip *t, uint32_t i, const char *name)
{
	struct fakeip_slot *s = &t->slot[i];
	char		*copy;
	uint32_t	 b;

	if ((copy = strdup(name)) == NULL)
		return -1;
	if (s->name != NULL) {
		hash_del(t, i);
		lru_unlink(t, i);
		free(s->name);
		t->st.evictions++;
		t->st.entries--;
	}
	s->name = copy;
	b = name_hash(t, name);
	s->hnext = t->bucket[b];
	t->bucket[b] = i;
	lru_push(t, i);
	t->st.entries++;
	t->dirty = true;
	return 0;
}

static void
slot_addrs(const struct fakeip *t, uint32_t i, uint8_t a4[4], uint8_t a6[16])
{
	if (a4 != NULL)
		range_addr(&t->r4, i + 1, a4);
	if (a6 != NULL && t->has6)
		range_addr(&t->r6, i + 1, a6);
}

int
fakeip_issue(struct fakeip *t, const char *name, uint8_t a4[4],
    uint8_t a6[16])
{
	uint32_t i;

	if (*name == '\0' || strlen(name) > FAKEIP_NAME_MAX)
		return -1;
	if ((i = hash_find(t, name)) != NIL) {
		lru_touch(t, i);
	} else {
		if ((i = t->freel) != NIL)
			t->freel = t->slot[i].hnext;
		else
			i = t->used < t->cap ? t->used : t->tail;
		if (slot_fill(t, i, name) == -1) {
			if (t->slot[i].name == NULL && i < t->used) {
				t->slot[i].hnext = t->freel;
				t->freel = i;
			}
			return -1;
		}
		if (i == t->used)
			t->used++;
		t->st.issued++;
		if (t->on_issue != NULL)
			t->on_issue(t->hook_arg, i, name);
	}
	slot_addrs(t, i, a4, a6);
	return 0;
}

int
fakeip_adopt(struct fakeip *t, uint32_t slot, const char *name)
{
	struct fakeip_slot *s;
	uint32_t	 old;

	if (slot >= t->cap || *name == '\0' || strlen(name) > FAKEIP_NAME_MAX)
		return -1;
	s = &t->slot[slot];
	if (s->name != NULL && strcmp(s->name, name) == 0)
		return 0;
	/* The name moved: its old slot is free here too. */
	if ((old = hash_find(t, name)) != NIL) {
		hash_del(t, old);
		lru_unlink(t, old);
		free(t->slot[old].name);
		t->slot[old].name = NULL;
		t->st.entries--;
	}
	if (slot_fill(t, slot, name) == -1)
		return -1;
	if (slot >= t->used)
		t->used = slot + 1;
	return 0;
}

void
fakeip_hooks(struct fakeip *t,
    void (*on_issue)(void *arg, uint32_t slot, const char *name),
    bool (*on_miss)(void *arg), void *arg)
{
	t->on_issue = on_issue;
	t->on_miss = on_miss;
	t->hook_arg = arg;
}

/* Whether the address at offset off has a name. */
static bool
slot_named(const struct fakeip *t, uint64_t off)
{
	return off != 0 && off <= t->used && t->slot[off - 1].name != NULL;
}

const char *
fakeip_name(struct fakeip *t, int family, const void *addr)
{
	const struct cidr *c = family == AF_INET ? &t->r4 : &t->r6;
	uint64_t	 off;

	if (!fakeip_contains(t, family, addr))
		return NULL;
	off = range_off(c, addr);
	/* Worker 0's news of the name may be waiting: taken in, look again. */
	if (!slot_named(t, off) && t->on_miss != NULL)
		(void)t->on_miss(t->hook_arg);
	if (!slot_named(t, off)) {
		t->st.misses++;
		return NULL;
	}
	t->st.hits++;
	lru_touch(t, (uint32_t)(off - 1));
	return t->slot[off - 1].name;
}

bool
fakeip_dirty(const struct fakeip *t)
{
	return t->dirty;
}

struct fakeip_stats *
fakeip_stats(struct fakeip *t)
{
	return &t->st;
}

/* ---- answers -------------------------------------------------------------- */

bool
fakeip_excluded(const struct conf *c, const char *name)
{
	size_t		 i, n = strlen(name), sl;
	const char	*e;

	for (i = 0; i < c->client.nfake_ip_exclude; i++) {
		e = c->client.fake_ip_exclude[i];
		if (*e != '.') {
			if (strcmp(e, name) == 0)
				return true;
			continue;
		}
		sl = strlen(e);
		if (strcmp(e + 1, name) == 0 ||
		    (n > sl && strcmp(name + n - sl, e) == 0))
			return true;
	}
	return false;
}

/*
 * A name whose flows the rules send to a direct outbound (by its domain
 * alone: the address and port are not known yet), or every name when
 * final is direct and no rule takes it: a direct flow cannot go to a
 * name, so it needs the real address.
 */
bool
fakeip_direct(const struct conf *c, const char *name)
{
	struct rule_query q;
	struct rule_hit	 h;
	int		 ob;

	memset(&q, 0, sizeof(q));
	q.domain = name;
	ob = rules_match(c->client.rules, &q, (int)c->client.final, &h);
	return ob >= 0 && (size_t)ob < c->client.noutbounds &&
	    c->client.outbounds[ob].protocol == CONF_PROTO_DIRECT;
}

size_t
fakeip_answer(struct fakeip *t, const struct conf *c, const uint8_t *msg,
    size_t len, uint8_t *out, size_t outlen)
{
	struct dns_query q;
	uint8_t		 a4[4], a6[16];
	const uint8_t	*a = NULL;
	size_t		 alen = 0;
	ssize_t		 n;
	int		 rcode = DNS_NOERROR;

	if (dns_query_parse(msg, len, &q) == -1 || DNS_OPCODE(q.flags) != 0 ||
	    q.qclass != DNS_CLASS_IN || !q.plain ||
	    (q.qtype != DNS_TYPE_A && q.qtype != DNS_TYPE_AAAA) ||
	    fakeip_excluded(c, q.name) || fakeip_direct(c, q.name))
		return 0;
	if (q.has_opt && q.opt_version != 0)
		rcode = DNS_BADVERS;		/* RFC 6891 6.1.3 */
	else if (q.qtype == DNS_TYPE_AAAA && !t->has6)
		;				/* the name, no address */
	else if (fakeip_issue(t, q.name, a4, a6) == -1)
		rcode = DNS_SERVFAIL;
	else if (q.qtype == DNS_TYPE_A) {
		a = a4;
		alen = 4;
	} else {
		a = a6;
		alen = 16;
	}
	if ((n = dns_answer(out, outlen, &q, rcode, a, alen, FAKEIP_TTL)) <= 0)
		return 0;
	t->st.answers++;
	return (size_t)n;
}

/* ---- the file ---------------------------------------------------------- */

static void
fakeip_header(const struct fakeip *t, char *out, size_t len)
{
	char	r4[64], r6[64];

	cidr_fmt(&t->r4, r4, sizeof(r4));
	if (t->has6)
		cidr_fmt(&t->r6, r6, sizeof(r6));
	else
		snprintf(r6, sizeof(r6), "-");
	snprintf(out, len, FAKEIP_MAGIC " %s %s %u", r4, r6, t->cap);
}

/* The directory of path, made if it is not there (one level, 0750). */
static void
fakeip_mkdir(const char *path)
{
	char	dir[4096];
	char	*slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir) ||
	    (slash = strrchr(dir, '/')) == NULL || slash == dir)
		return;
	*slash = '\0';
	(void)mkdir(dir, 0750);
}

int
fakeip_save(struct fakeip *t, const char *path)
{
	char	 tmp[4096], hdr[160];
	FILE	*fp;
	uint32_t i;
	int	 fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fakeip_mkdir(path);
	/* The names are what the apps looked up: for root's eyes. */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) < 0)
		goto fail;
	if ((fp = fdopen(fd, "w")) == NULL) {
		e = errno;
		close(fd);
		errno = e;
		goto fail_unlink;
	}
	fakeip_header(t, hdr, sizeof(hdr));
	fprintf(fp, "%s\n", hdr);
	for (i = t->tail; i != NIL; i = t->slot[i].prev)
		fprintf(fp, "%u %s\n", i, t->slot[i].name);
	if (fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
		e = errno;
		fclose(fp);
		errno = e;
		goto fail_unlink;
	}
	if (fclose(fp) != 0 || rename(tmp, path) != 0)
		goto fail_unlink;
	t->dirty = false;
	t->st.saves++;
	return 0;
fail_unlink:
	e = errno;
	(void)unlink(tmp);
	errno = e;
fail:
	t->st.save_errors++;
	return -1;
}

static bool
name_valid(const char *s)
{
	size_t	n = strlen(s), i;

	if (n == 0 || n > FAKEIP_NAME_MAX || s[0] == '.' || s[n - 1] == '.')
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		    s[i] == '_' || (s[i] == '.' && s[i + 1] != '.')))
			return false;
	return true;
}

/* One "SLOT NAME" line into the table; NULL or why not. */
static const char *
fakeip_load_line(struct fakeip *t, char *line)
{
	char		*sp, *end;
	unsigned long	 slot;

	if ((sp = strchr(line, ' ')) == NULL)
		return "not SLOT NAME";
	*sp = '\0';
	errno = 0;
	slot = strtoul(line, &end, 10);
	if (*line < '0' || *line > '9' || *end != '\0' || errno != 0)
		return "bad slot number";
	if (!name_valid(sp + 1))
		return "bad name";
	if (slot >= t->cap)
		return NULL;		/* the table shrank: forgotten */
	if (t->slot[slot].name != NULL)
		return "slot listed twice";
	if (hash_find(t, sp + 1) != NIL)
		return "name listed twice";
	if (slot_fill(t, (uint32_t)slot, sp + 1) == -1)
		return "out of memory";
	if (slot >= t->used)
		t->used = (uint32_t)slot + 1;
	return NULL;
}

int
fakeip_load(struct fakeip *t, const char *path, char *why, size_t whylen)
{
	char	 line[512], hdr[160];
	const char *bad = NULL;
	FILE	*fp;
	size_t	 n;
	unsigned lineno = 0;

	if ((fp = fopen(path, "re")) == NULL) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	fakeip_header(t, hdr, sizeof(hdr));
	while (fgets(line, sizeof(line), fp) != NULL) {
		lineno++;
		n = strlen(line);
		if (n == 0 || line[n - 1] != '\n') {
			bad = "line too long or not ended";
			break;
		}
		line[n - 1] = '\0';
		if (lineno == 1) {
			if (strncmp(line, FAKEIP_MAGIC " ",
			    sizeof(FAKEIP_MAGIC)) != 0) {
				bad = "not a fake-IP table";
				break;
			}
			/* Same ranges: the capacity may differ. */
			if (strncmp(line, hdr, strrchr(hdr, ' ') - hdr + 1) !=
			    0) {
				bad = "made for other ranges";
				break;
			}
			continue;
		}
		if ((bad = fakeip_load_line(t, line)) != NULL)
			break;
	}
	if (bad == NULL && ferror(fp))
		bad = strerror(errno);
	if (bad == NULL && lineno == 0)
		bad = "empty";
	fclose(fp);
	if (bad != NULL) {
		snprintf(why, whylen, "%s:%u: %s", path, lineno, bad);
		fakeip_clear(t);
		t->dirty = true;
		return -1;
	}
	/* Slots the file skipped are issued first. */
	for (n = t->used; n-- > 0; )
		if (t->slot[n].name == NULL) {
			t->slot[n].hnext = t->freel;
			t->freel = (uint32_t)n;
		}
	t->dirty = false;
	return 0;
}

/* ---- the client's table ------------------------------------------------ */

/* A failure is logged once until a save works again (the counters have
 * every one). */
static void
fakeip_save_log(struct fakeip *t)
{
	if (fakeip_save(t, t->path) == 0) {
		if (t->save_failing)
			log_info("dns: fake-IP table saved to %s again",
			    t->path);
		t->save_failing = false;
		return;
	}
	if (!t->save_failing)
		log_warn("dns: cannot save the fake-IP table to %s (tried "
		    "again every %d s)", t->path, FAKEIP_SAVE_MS / 1000);
	t->save_failing = true;
}

static void
fakeip_on_timer(struct loop_timer *lt)
{
	struct fakeip *t = container_of(lt, struct fakeip, timer);

	if (t->dirty)
		fakeip_save_log(t);
	loop_timer_set(t->loop, &t->timer, FAKEIP_SAVE_MS);
}

struct fakeip *
fakeip_open(struct loop *loop, const struct conf *c)
{
	struct fakeip	*t;
	char		 why[512], r4[64], r6[64];

	if (!c->client.dns_fakeip)
		return NULL;
	if ((t = fakeip_new(&c->client.fake_ip_range4,
	    c->client.has_fake_ip_range6 ? &c->client.fake_ip_range6 : NULL,
	    c->client.fake_ip_size)) == NULL) {
		log_warnx("dns: cannot set up the fake-IP table");
		return NULL;
	}
	cidr_fmt(&t->r4, r4, sizeof(r4));
	if (t->has6)
		cidr_fmt(&t->r6, r6, sizeof(r6));
	if (c->client.fake_ip_file != NULL) {
		if ((t->path = strdup(c->client.fake_ip_file)) == NULL) {
			fakeip_free(t);
			return NULL;
		}
		if (fakeip_load(t, t->path, why, sizeof(why)) == -1)
			log_warnx("dns: fake-IP table %s: ignored, starting "
			    "empty", why);
		if (loop != NULL)
			fakeip_attach(t, loop);
	}
	log_info("dns: fake-IP answers from %s%s%s, %u names (%zu kept)%s%s",
	    r4, t->has6 ? " and " : "", t->has6 ? r6 : "", t->cap,
	    t->st.entries, t->path != NULL ? ", saved to " : "",
	    t->path != NULL ? t->path : "");
	return t;
}

void
fakeip_attach(struct fakeip *t, struct loop *loop)
{
	if (t->path == NULL || t->loop != NULL)
		return;
	t->loop = loop;
	loop_timer_init(&t->timer, fakeip_on_timer);
	loop_timer_set(loop, &t->timer, FAKEIP_SAVE_MS);
}

void
fakeip_close(struct fakeip *t)
{
	if (t == NULL)
		return;
	if (t->loop != NULL) {
		loop_timer_cancel(t->loop, &t->timer);
		if (t->dirty)
			fakeip_save_log(t);
	}
	fakeip_free(t);
}
