/*
 * One snapshot added into another: the client's worker processes, each
 * with its own loop, lwIP, flows and pools, shown as one client
 * (status.h).  Worker 0's snapshot is `into`; every other worker's, as
 * status_unpack made it, is `add`, merged in worker order.
 *
 * The rule for every field.  "sum" is a + b; "into" keeps worker 0's;
 * "OR" for a has_ flag: shown when any worker has it.
 *
 *   identity: role, version, pid, uptime_ms, draining,
 *     generation, server, users, cover (the string)      into
 *   counters: total, refused, failed, internal, unused, waited,
 *     bytes_up/down, pooled, failures and rejects (by
 *     reason; past STATS_REASONS_MAX: "other"), handshake
 *     (bucket by bucket, count, sum), tun (but listeners,
 *     offload), pool's and dialer's counters, udp, dns_cache,
 *     dns upstreams' queries and failed (by index, when both
 *     list the same upstreams; else into's), resolver's,
 *     cover_relayed/failed, reuse_*, limit_refused,
 *     mem_denied, cover_mem_denied                      sum
 *   gauges of live things: active, tun.listeners, pool's
 *     ready/connecting/target, dialer.active,
 *     udp.active, dns_cache.entries, mem_used, sources,
 *     udp_sessions, preauth, cover_sessions,
 *     cover_mem_used, resolver waiting/running/cached    sum
 *   peaks: mem_peak, cover_mem_peak                      sum: an upper
 *     bound (each worker's peak came at its own moment)
 *   per-process capacities: max (max_flows), mem_max,
 *     cover_mem_max, udp_max, preauth_max, pool_size (the
 *     pools' ceilings), dialer.threads, resolver.threads  sum: right when
 *     each worker holds its share (max_flows / N, the memory budget / N)
 *     or its own threads and pools, as the client's workers do
 *   a flag: tun.offload                                  the larger
 *   has_* flags, contact_kept                            OR
 *   ages: contact (age, Unix time), contact failure (age,
 *     Unix time, reason), pool's contact (loop ms)       the newest
 *   fake-IP table (replicated; only worker 0 issues):
 *     has_fakeip, answers, issued, evictions, saves,
 *     save_errors, entries, capacity                     into
 *     hits, misses (flows in every worker look up)       sum
 *   DNS (only worker 0 answers it): has_dns, dns_up,
 *     ndns_up                                            into
 *   rules: hits                                          sum by index,
 *     when both list the same rules (match and outbound); else into's (a
 *     reload half done: the next snapshot agrees)
 *   outbounds, when both list the same names in the same order (else
 *     into's): name, protocol, server, final, and health (state, down_ms,
 *     why, first-byte and retransmit evidence, degraded, group, members,
 *     active_member, balance: a group's members are judged from every
 *     worker's flows (group.h); worker 0's is shown)     into
 *     opened, failed, bytes, handshake, pool counters,
 *     downs (each counted by the worker whose flows
 *     took it down)                                      sum
 *     active, pool gauges, dialling, dial_waiting        sum
 *     pool_size                                          sum (as above)
 *   workers, worker_total[], worker_active[]              into's (or, with
 *     none yet, into's total and active as worker 0) followed by add's
 *     (or add's total and active), up to STATUS_WORKERS_MAX
 *   flows (the list, when into has one)                  joined, up to
 *     mem->flows_max (STATUS_FLOWS_MAX); flow ids are per worker
 *
 * into's arrays are copied into mem before they are written (they may be
 * worker 0's live counters), and every string taken from add is copied
 * there too, so add may be freed right after.
 */
#include "config.h"

#include "daemon/status.h"

#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

/* A merge in progress: where it keeps things, and whether anything was
 * left out for want of memory. */
struct merge {
	struct status_merge_mem	*mem;
	int			 rc;
};

/* s as a string mem owns (one copy of each), NULL for NULL. */
static const char *
merge_str(struct merge *m, const char *s)
{
	struct status_merge_mem	*mem = m->mem;
	char			**nv;
	size_t			 i, cap;

	if (s == NULL)
		return NULL;
	for (i = 0; i < mem->nstrings; i++)
		if (strcmp(mem->strings[i], s) == 0)
			return mem->strings[i];
	if (mem->nstrings == mem->strings_cap) {
		cap = mem->strings_cap > 0 ? mem->strings_cap * 2 : 16;
		if ((nv = realloc(mem->strings, cap * sizeof(*nv))) == NULL)
			goto fail;
		mem->strings = nv;
		mem->strings_cap = cap;
	}
	if ((mem->strings[mem->nstrings] = strdup(s)) == NULL)
		goto fail;
	return mem->strings[mem->nstrings++];
fail:
	m->rc = -1;
	return "?";
}

/* ---- the counters' structs -------------------------------------------- */

static void
merge_reasons(struct merge *m, const struct stats_reasons **into,
    struct stats_reasons *mine, const struct stats_reasons *add)
{
	size_t	i;

	if (add == NULL)
		return;
	if (*into != mine) {
		if (*into != NULL)
			*mine = **into;
		else
			memset(mine, 0, sizeof(*mine));
		*into = mine;
	}
	stats_reasons_merge(mine, add);
	/* New reasons point into add: take them. */
	for (i = 0; i < mine->nv; i++)
		mine->v[i].reason = merge_str(m, mine->v[i].reason);
}

static void
merge_hist_ptr(const struct stats_hist **into, struct stats_hist *mine,
    const struct stats_hist *add)
{
	if (add == NULL)
		return;
	if (*into != mine) {
		if (*into != NULL)
			*mine = **into;
		else
			memset(mine, 0, sizeof(*mine));
		*into = mine;
	}
	stats_hist_merge(mine, add);
}

static void
merge_contact(struct merge *m, struct stats_contact *a,
    const struct stats_contact *b)
{
	stats_contact_merge(a, b);
	if (b->has_fail && a->fail_reason == b->fail_reason)
		a->fail_reason = merge_str(m, b->fail_reason);
}

static void
merge_pool(struct merge *m, struct pool_stats *a, const struct pool_stats *b)
{
	a->opened += b->opened;
	a->taken += b->taken;
	a->expired += b->expired;
	a->failed += b->failed;
	a->returned += b->returned;
	a->reused += b->reused;
	a->ready += b->ready;
	a->connecting += b->connecting;
	a->target += b->target;
	stats_hist_merge(&a->handshake, &b->handshake);
	merge_contact(m, &a->contact, &b->contact);
}

static void
merge_tun(struct tsnetif_stats *a, const struct tsnetif_stats *b)
{
	a->rx_packets += b->rx_packets;
	a->rx_bytes += b->rx_bytes;
	a->tx_packets += b->tx_packets;
	a->tx_bytes += b->tx_bytes;
	a->rx_malformed += b->rx_malformed;
	a->rx_unsupported += b->rx_unsupported;
	a->tx_errors += b->tx_errors;
	a->syn_refused += b->syn_refused;
	a->listeners += b->listeners;
	a->tw_reused += b->tw_reused;
	if (b->offload > a->offload)
		a->offload = b->offload;
	a->rx_gso += b->rx_gso;
	a->tx_gso += b->tx_gso;
	a->rx_vnet_bad += b->rx_vnet_bad;
}

static void
merge_dialer(struct dialer_stats *a, const struct dialer_stats *b)
{
	a->threads += b->threads;
	a->active += b->active;
	a->ready += b->ready;
	a->resumed += b->resumed;
	a->failed += b->failed;
	a->cancelled += b->cancelled;
	a->declined += b->declined;
}

static void
merge_udp(struct assoc_stats *a, const struct assoc_stats *b)
{
	a->active += b->active;
	a->created += b->created;
	a->expired += b->expired;
	a->evicted += b->evicted;
	a->failed += b->failed;
	a->internal += b->internal;
	a->dgrams_up += b->dgrams_up;
	a->dgrams_down += b->dgrams_down;
	a->bytes_up += b->bytes_up;
	a->bytes_down += b->bytes_down;
	a->drop_queue += b->drop_queue;
	a->drop_hold += b->drop_hold;
	a->drop_down += b->drop_down;
	a->drop_send += b->drop_send;
	a->drop_block += b->drop_block;
	a->drop_proto += b->drop_proto;
	a->drop_memory += b->drop_memory;
	a->tun_errors += b->tun_errors;
}

static void
merge_dns_cache(struct dnsfwd_stats *a, const struct dnsfwd_stats *b)
{
	a->hits += b->hits;
	a->misses += b->misses;
	a->stored += b->stored;
	a->evicted += b->evicted;
	a->expired += b->expired;
	a->entries += b->entries;
}

void
status_resolver_merge(struct resolve_stats *a, const struct resolve_stats *b)
{
	a->lookups += b->lookups;
	a->cache_hits += b->cache_hits;
	a->ok += b->ok;
	a->notfound += b->notfound;
	a->failed += b->failed;
	a->timeouts += b->timeouts;
	a->busy += b->busy;
	a->badname += b->badname;
	a->cancelled += b->cancelled;
	a->late += b->late;
	a->waiting += b->waiting;
	a->running += b->running;
	a->threads += b->threads;
	a->cached += b->cached;
}

/* ---- the snapshot's parts --------------------------------------------- */

static void
merge_worker_add(struct status *into, uint64_t total, uint64_t active)
{
	if (into->workers >= STATUS_WORKERS_MAX)
		return;
	into->worker_total[into->workers] = total;
	into->worker_active[into->workers] = active;
	into->workers++;
}

/* Before the totals are summed: into's own counts are worker 0's. */
static void
merge_workers(struct status *into, const struct status *add)
{
	unsigned	i;

	if (into->workers == 0)
		merge_worker_add(into, into->total, into->active);
	if (add->workers == 0)
		merge_worker_add(into, add->total, add->active);
	for (i = 0; i < add->workers && i < STATUS_WORKERS_MAX; i++)
		merge_worker_add(into, add->worker_total[i],
		    add->worker_active[i]);
}

static void
merge_flows_counts(struct merge *m, struct status *into,
    const struct status *add)
{
	into->active += add->active;
	into->total += add->total;
	into->refused += add->refused;
	into->failed += add->failed;
	into->internal += add->internal;
	into->unused += add->unused;
	into->waited += add->waited;
	into->max += add->max;
	into->bytes_up += add->bytes_up;
	into->bytes_down += add->bytes_down;
	merge_reasons(m, &into->failures, &m->mem->failures, add->failures);
	merge_hist_ptr(&into->handshake, &m->mem->handshake, add->handshake);
}

/* The newest contact and the newest failure, each with its own times. */
static void
merge_contact_ages(struct merge *m, struct status *into,
    const struct status *add)
{
	into->contact_kept = into->contact_kept || add->contact_kept;
	if (add->has_contact && (!into->has_contact ||
	    add->contact_age_ms < into->contact_age_ms)) {
		into->has_contact = true;
		into->contact_age_ms = add->contact_age_ms;
		into->contact_unix_ms = add->contact_unix_ms;
	}
	if (add->has_contact_fail && (!into->has_contact_fail ||
	    add->contact_fail_age_ms < into->contact_fail_age_ms)) {
		into->has_contact_fail = true;
		into->contact_fail_age_ms = add->contact_fail_age_ms;
		into->contact_fail_unix_ms = add->contact_fail_unix_ms;
		into->contact_fail_reason = merge_str(m,
		    add->contact_fail_reason);
	}
}

/* Whether add counts queries for the same upstreams as into. */
static bool
merge_same_dns(const struct status *into, const struct status *add)
{
	size_t	i;

	if (!into->has_dns || !add->has_dns || into->ndns_up != add->ndns_up ||
	    into->ndns_up == 0 || into->dns_up_queries == NULL ||
	    into->dns_up_failed == NULL || add->dns_up_queries == NULL ||
	    add->dns_up_failed == NULL)
		return false;
	for (i = 0; i < into->ndns_up; i++)
		if (strcmp(into->dns_up[i].name, add->dns_up[i].name) != 0)
			return false;
	return true;
}

/*
 * into's n elements of size bytes as mem's own copy mine, for the merge
 * to add to: what into pointed to before (worker 0's live counters) is
 * never written.  mine itself once into is it already; else a new copy
 * (mine freed).  NULL when out of memory (mine kept, m->rc -1).
 */
static void *
merge_own(struct merge *m, const void *into, void *mine, size_t n,
    size_t size)
{
	void	*v;

	if (into == mine)
		return mine;
	if ((v = malloc(n > 0 ? n * size : 1)) == NULL) {
		m->rc = -1;
		return NULL;
	}
	memcpy(v, into, n * size);
	free(mine);
	return v;
}

static void
merge_dns(struct merge *m, struct status *into, const struct status *add)
{
	struct status_merge_mem	*mem = m->mem;
	uint64_t		*v;
	size_t			 i;

	if (!into->has_dns || !add->has_dns)
		return;
	merge_dns_cache(&into->dns_cache, &add->dns_cache);
	if (!merge_same_dns(into, add))
		return;
	if ((v = merge_own(m, into->dns_up_queries,
	    mem->dns_up_queries, into->ndns_up, sizeof(*v))) == NULL)
		return;
	into->dns_up_queries = mem->dns_up_queries = v;
	if ((v = merge_own(m, into->dns_up_failed,
	    mem->dns_up_failed, into->ndns_up, sizeof(*v))) == NULL)
		return;
	into->dns_up_failed = mem->dns_up_failed = v;
	for (i = 0; i < into->ndns_up; i++) {
		mem->dns_up_queries[i] += add->dns_up_queries[i];
		mem->dns_up_failed[i] += add->dns_up_failed[i];
	}
}

static void
merge_client(struct merge *m, struct status *into, const struct status *add)
{
	merge_contact_ages(m, into, add);
	into->has_tun = into->has_tun || add->has_tun;
	merge_tun(&into->tun, &add->tun);
	into->has_pool = into->has_pool || add->has_pool;
	into->pool_size += add->pool_size;
	into->pooled += add->pooled;
	merge_pool(m, &into->pool, &add->pool);
	into->has_dialer = into->has_dialer || add->has_dialer;
	merge_dialer(&into->dialer, &add->dialer);
	into->has_udp = into->has_udp || add->has_udp;
	merge_udp(&into->udp, &add->udp);
	if (into->has_fakeip) {
		into->fakeip.hits += add->fakeip.hits;
		into->fakeip.misses += add->fakeip.misses;
	}
	merge_dns(m, into, add);
}

static void
merge_server(struct merge *m, struct status *into, const struct status *add)
{
	merge_reasons(m, &into->rejects, &m->mem->rejects, add->rejects);
	into->has_cover = into->has_cover || add->has_cover;
	into->cover_relayed += add->cover_relayed;
	into->cover_failed += add->cover_failed;
	into->reuse_offered += add->reuse_offered;
	into->reused += add->reused;
	into->reuse_errors += add->reuse_errors;
	into->has_sources = into->has_sources || add->has_sources;
	into->sources += add->sources;
	into->udp_sessions += add->udp_sessions;
	into->udp_max += add->udp_max;
	into->preauth += add->preauth;
	into->preauth_max += add->preauth_max;
	into->cover_sessions += add->cover_sessions;
	into->cover_mem_used += add->cover_mem_used;
	into->cover_mem_peak += add->cover_mem_peak;
	into->cover_mem_max += add->cover_mem_max;
	into->cover_mem_denied += add->cover_mem_denied;
	into->has_resolver = into->has_resolver || add->has_resolver;
	status_resolver_merge(&into->resolver, &add->resolver);
}

static void
merge_limits(struct status *into, const struct status *add)
{
	size_t	i;

	into->has_limits = into->has_limits || add->has_limits;
	for (i = 0; i < LIMIT_NKINDS; i++)
		into->limit_refused[i] += add->limit_refused[i];
	into->mem_used += add->mem_used;
	into->mem_peak += add->mem_peak;
	into->mem_max += add->mem_max;
	into->mem_denied += add->mem_denied;
}

static void
merge_rules(struct merge *m, struct status *into, const struct status *add)
{
	struct status_merge_mem	*mem = m->mem;
	struct status_rule	*v;
	size_t			 i;

	if (into->nrules == 0 || into->nrules != add->nrules)
		return;
	for (i = 0; i < into->nrules; i++)
		if (into->rules[i].index != add->rules[i].index ||
		    strcmp(into->rules[i].match, add->rules[i].match) != 0 ||
		    strcmp(into->rules[i].outbound,
		    add->rules[i].outbound) != 0)
			return;
	if ((v = merge_own(m, into->rules, mem->rules, into->nrules,
	    sizeof(*v))) == NULL)
		return;
	into->rules = mem->rules = v;
	for (i = 0; i < into->nrules; i++)
		mem->rules[i].hits += add->rules[i].hits;
}

static void
merge_outbound(struct merge *m, struct status_outbound *a,
    const struct status_outbound *b)
{
	a->opened += b->opened;
	a->failed += b->failed;
	a->active += b->active;
	a->bytes_up += b->bytes_up;
	a->bytes_down += b->bytes_down;
	stats_hist_merge(&a->handshake, &b->handshake);
	a->has_pool = a->has_pool || b->has_pool;
	a->pool_size += b->pool_size;
	merge_pool(m, &a->pool, &b->pool);
	a->has_gate = a->has_gate || b->has_gate;
	a->dialling += b->dialling;
	a->dial_waiting += b->dial_waiting;
	a->downs += b->downs;
}

static void
merge_outbounds(struct merge *m, struct status *into,
    const struct status *add)
{
	struct status_merge_mem	*mem = m->mem;
	struct status_outbound	*v;
	size_t			 i;

	if (into->noutbounds == 0 || into->noutbounds != add->noutbounds)
		return;
	for (i = 0; i < into->noutbounds; i++)
		if (strcmp(into->outbounds[i].name,
		    add->outbounds[i].name) != 0)
			return;
	if ((v = merge_own(m, into->outbounds, mem->outbounds,
	    into->noutbounds, sizeof(*v))) == NULL)
		return;
	into->outbounds = mem->outbounds = v;
	for (i = 0; i < into->noutbounds; i++)
		merge_outbound(m, &mem->outbounds[i], &add->outbounds[i]);
}

/* into's flow list, then add's, in one list mem owns. */
static void
merge_flow_list(struct merge *m, struct status *into,
    const struct status *add)
{
	struct status_merge_mem	*mem = m->mem;
	struct status_flow	*v;
	size_t			 max, n, i;

	if (into->flows == NULL || add->flows == NULL || add->nflows == 0)
		return;
	max = mem->flows_max > 0 ? mem->flows_max : STATUS_FLOWS_MAX;
	if (into->nflows >= max)
		return;
	n = into->nflows + (add->nflows < max - into->nflows ?
	    add->nflows : max - into->nflows);
	if (into->flows == mem->flows)
		v = realloc(mem->flows, n * sizeof(*v));
	else
		v = malloc(n * sizeof(*v));
	if (v == NULL) {
		m->rc = -1;
		return;
	}
	if (into->flows != mem->flows) {	/* the first merge */
		memcpy(v, into->flows, into->nflows * sizeof(*v));
		free(mem->flows);
	}
	mem->flows = v;
	memcpy(v + into->nflows, add->flows,
	    (n - into->nflows) * sizeof(*v));
	for (i = into->nflows; i < n; i++)
		v[i].state = merge_str(m, v[i].state);
	into->flows = v;
	into->nflows = n;
}

/* ---- the API ---------------------------------------------------------- */

int
status_merge(struct status *into, const struct status *add,
    struct status_merge_mem *mem)
{
	struct merge	m = { .mem = mem, .rc = 0 };

	merge_workers(into, add);
	merge_flows_counts(&m, into, add);
	merge_client(&m, into, add);
	merge_server(&m, into, add);
	merge_limits(into, add);
	merge_rules(&m, into, add);
	merge_outbounds(&m, into, add);
	merge_flow_list(&m, into, add);
	return m.rc;
}

void
status_merge_mem_free(struct status_merge_mem *mem)
{
	size_t	i;

	if (mem == NULL)
		return;
	for (i = 0; i < mem->nstrings; i++)
		free(mem->strings[i]);
	free(mem->strings);
	free(mem->rules);
	free(mem->outbounds);
	free(mem->flows);
	free(mem->dns_up_queries);
	free(mem->dns_up_failed);
	memset(mem, 0, sizeof(*mem));
}
