/*
 * The three renderings of a status snapshot, and the helpers the roles
 * fill one with.  See status.h.
 *
 * Byte counters are payload bytes: the client counts what the app sent and
 * received, without the request header and the server's status byte, so a
 * transfer of N bytes shows as N.
 */
#include "config.h"

#include "daemon/status.h"

#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "conf/conf.h"

/* ---- filling (control.c asks the role) ------------------------------- */

struct status_flow *
status_flow_add(struct status_fill *sf)
{
	struct status_flow	*f;

	if (sf->flows == NULL || sf->n == sf->cap)
		return NULL;
	f = &sf->flows[sf->n++];
	memset(f, 0, sizeof(*f));
	return f;
}

void
status_flow_tcp_info(struct status_flow *f, int fd)
{
	struct tcp_info	 ti;
	socklen_t	 len = sizeof(ti);

	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1)
		return;
	f->has_tcpi = true;
	f->rtt_us = ti.tcpi_rtt;
	f->rttvar_us = ti.tcpi_rttvar;
	f->retrans = ti.tcpi_total_retrans;
	f->cwnd = ti.tcpi_snd_cwnd;
}

void
status_fill_limits(struct status *st, const struct limit_stats *ls,
    const struct limit_mem *m)
{
	st->has_limits = true;
	memcpy(st->limit_refused, ls->refused, sizeof(st->limit_refused));
	st->mem_used = m->used;
	st->mem_peak = m->peak;
	st->mem_max = m->max;
	st->mem_denied = m->denied;
}

/* ---- text ------------------------------------------------------------- */

static const char *
status_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double	v = (double)n;
	size_t	u = 0;

	while (v >= 1024 && u < sizeof(units) / sizeof(units[0]) - 1) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", n);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

static const char *
status_age(uint64_t ms, char *buf, size_t len)
{
	uint64_t	s = ms / 1000;

	if (s < 60)
		snprintf(buf, len, "%" PRIu64 ".%01" PRIu64 "s", s,
		    (ms % 1000) / 100);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
		    (s / 60) % 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
		    (s / 3600) % 24);
	return buf;
}

static void
text_reasons(FILE *fp, const char *title, const struct stats_reasons *r)
{
	size_t	i;

	if (r == NULL || stats_reason_total(r) == 0)
		return;
	fprintf(fp, "%s:", title);
	for (i = 0; i < r->nv; i++)
		fprintf(fp, "%s %s %" PRIu64, i > 0 ? "," : "", r->v[i].reason,
		    r->v[i].n);
	if (r->other > 0)
		fprintf(fp, "%s other %" PRIu64, r->nv > 0 ? "," : "", r->other);
	fputc('\n', fp);
}

static void
text_flows(const struct status *st, FILE *fp)
{
	const struct status_flow	*f;
	char				 age[32], up[32], down[32], rtt[32];
	bool				 srv = strcmp(st->role, "server") == 0;
	size_t				 i;

	fprintf(fp, "\n%-8s %-*s %-8s %8s %10s %10s %9s %7s%s\n", "ID",
	    srv ? 47 : 40, srv ? "CLIENT -> TARGET (USER)" : "DESTINATION",
	    "STATE", "AGE", "UP", "DOWN", "RTT", "RETRANS",
	    srv ? "" : "  OUTBOUND  RULE");
	for (i = 0; i < st->nflows; i++) {
		f = &st->flows[i];
		if (f->has_tcpi)
			snprintf(rtt, sizeof(rtt), "%.1fms", f->rtt_us / 1000.0);
		else
			snprintf(rtt, sizeof(rtt), "-");
		if (srv) {
			char	who[ADDR_STRLEN * 2 + STATUS_NAME_MAX + 8];

			snprintf(who, sizeof(who), "%s -> %s (%s)", f->peer,
			    f->dst, f->user[0] != '\0' ? f->user : "-");
			fprintf(fp, "%-8" PRIu64 " %-47s", f->id, who);
		} else if (f->domain[0] != '\0') {
			char	dd[ADDR_STRLEN + sizeof(f->domain) + 4];

			snprintf(dd, sizeof(dd), "%s (%s)", f->dst, f->domain);
			fprintf(fp, "%-8" PRIu64 " %-40s", f->id, dd);
		} else
			fprintf(fp, "%-8" PRIu64 " %-40s", f->id, f->dst);
		fprintf(fp, " %-8s %8s %10s %10s %9s", f->state,
		    status_age(f->age_ms, age, sizeof(age)),
		    status_bytes(f->up, up, sizeof(up)),
		    status_bytes(f->down, down, sizeof(down)), rtt);
		if (f->has_tcpi)
			fprintf(fp, " %7" PRIu32, f->retrans);
		else
			fprintf(fp, " %7s", "-");
		if (f->outbound[0] != '\0')
			fprintf(fp, "  %s", f->outbound);
		fprintf(fp, "%s%s\n", f->rule[0] != '\0' ? "  " : "", f->rule);
	}
}

/* An outbound's health; a group's members and the one active. */
static void
text_health(const struct status_outbound *o, FILE *fp)
{
	if (o->group != NULL && o->group[0] != '\0') {
		fprintf(fp, "\n  group %s of %s: ", o->group, o->members);
		if (o->active_member[0] != '\0')
			fprintf(fp, "active %s%s", o->balance ?
			    "by destination over " : "", o->active_member);
		else
			fprintf(fp, "DOWN: %s", o->why);
		return;
	}
	if (o->fb_us > 0)
		fprintf(fp, "\n  first byte %u ms (baseline %u ms), "
		    "retransmits %u.%u %% (baseline %u.%u %%)", o->fb_us / 1000,
		    o->fb_base_us / 1000, o->rtx_pm / 10, o->rtx_pm % 10,
		    o->rtx_base_pm / 10, o->rtx_base_pm % 10);
	if (o->state == NULL || strcmp(o->state, "up") == 0)
		return;
	fprintf(fp, "\n  %s for %" PRIu64 " s (%s)", o->state,
	    o->down_ms / 1000, o->why);
}

/* The client's outbounds and what each carried. */
static void
text_outbounds(const struct status *st, FILE *fp)
{
	const struct status_outbound	*o;
	char				 up[32], down[32];
	size_t				 i;

	for (i = 0; i < st->noutbounds; i++) {
		o = &st->outbounds[i];
		fprintf(fp, "outbound %s (%s%s%s)%s: %" PRIu64 " active, %"
		    PRIu64 " opened, %" PRIu64 " failed, up %s down %s",
		    o->name, o->protocol, o->server[0] != '\0' ? " " : "",
		    o->server, o->final ? ", final" : "", o->active,
		    o->opened, o->failed, status_bytes(o->bytes_up, up,
		    sizeof(up)), status_bytes(o->bytes_down, down,
		    sizeof(down)));
		if (o->handshake.count > 0)
			fprintf(fp, ", handshakes mean %.1f ms",
			    (double)o->handshake.sum_us /
			    (double)o->handshake.count / 1000.0);
		if (o->has_pool)
			fprintf(fp, ", pool %u ready", o->pool.ready);
		if (o->dialling > 0 || o->dial_waiting > 0)
			fprintf(fp, ", dialling %u (%u flows waiting)",
			    o->dialling, o->dial_waiting);
		text_health(o, fp);
		fputc('\n', fp);
	}
}

/* The client's rules, with what each decided since the last reload. */
static void
text_rules(const struct status *st, FILE *fp)
{
	const struct status_rule	*r;
	size_t				 i;

	fprintf(fp, "rules: %zu, first match wins (hits since the last "
	    "reload)\n", st->nrules - 1);
	for (i = 0; i < st->nrules; i++) {
		r = &st->rules[i];
		if (r->index < 0)
			fprintf(fp, "  final      -> %-12s %10" PRIu64 "\n",
			    r->outbound, r->hits);
		else
			fprintf(fp, "  rule %-4d  -> %-12s %10" PRIu64 "  %s\n",
			    r->index, r->outbound, r->hits, r->match);
	}
}

static const char *
status_dns_proto(const struct conf_dns_upstream *up)
{
	static const char *const name[] = { "udp", "tcp", "tls", "https" };

	return up->protocol >= 0 && up->protocol < 4 ? name[up->protocol] :
	    "?";
}

/* The server's resolver: outcomes of its lookups, its queue now. */
static void
text_dns(const struct status *st, FILE *fp)
{
	const struct dnsfwd_stats *k = &st->dns_cache;
	char	buf[ADDR_STRLEN];
	size_t	i;

	fprintf(fp, "dns cache: %" PRIu64 " answers, %" PRIu64 " hits, %"
	    PRIu64 " misses, %" PRIu64 " stored, %" PRIu64 " evicted, %"
	    PRIu64 " expired\n", k->entries, k->hits, k->misses, k->stored,
	    k->evicted, k->expired);
	for (i = 0; i < st->ndns_up; i++)
		fprintf(fp, "dns upstream %s %s %s: %" PRIu64 " queries, %"
		    PRIu64 " failed\n", st->dns_up[i].name,
		    status_dns_proto(&st->dns_up[i]), addr_fmt(
		    &st->dns_up[i].addr, buf, sizeof(buf)), st->dns_up_queries[i],
		    st->dns_up_failed[i]);
}

static void
text_resolver(const struct resolve_stats *r, FILE *fp)
{
	fprintf(fp, "resolver: %" PRIu64 " lookups, %" PRIu64 " from the cache;"
	    " %" PRIu64 " ok, %" PRIu64 " not found, %" PRIu64 " failed, %"
	    PRIu64 " timed out, %" PRIu64 " busy, %" PRIu64 " bad names; %"
	    PRIu64 " cancelled; %u waiting, %u running, %u threads, %u names "
	    "cached\n", r->lookups, r->cache_hits, r->ok, r->notfound,
	    r->failed, r->timeouts, r->busy, r->badname, r->cancelled,
	    r->waiting, r->running, r->threads, r->cached);
}

/* The per-worker breakdown: the server's worker loops; the client's
 * worker processes when there are two or more (status_merge). */
static bool
status_has_workers(const struct status *st)
{
	return st->workers > (strcmp(st->role, "server") == 0 ? 0u : 1u);
}

/* What a worker counts: the server's sessions, the client's flows. */
static const char *
status_worker_what(const struct status *st)
{
	return strcmp(st->role, "server") == 0 ? "sessions" : "flows";
}

static void
text_limits(const struct status *st, FILE *fp)
{
	char	 a[32], b[32], c[32];
	size_t	 i;

	fprintf(fp, "buffer memory: %s in use, peak %s, limit %s; %" PRIu64
	    " allocations refused (reads paused)\n",
	    status_bytes(st->mem_used, a, sizeof(a)),
	    status_bytes(st->mem_peak, b, sizeof(b)),
	    st->mem_max != 0 ? status_bytes(st->mem_max, c, sizeof(c)) : "none",
	    st->mem_denied);
	if (status_has_workers(st)) {
		fprintf(fp, "workers: %u; %s per worker:", st->workers,
		    status_worker_what(st));
		for (i = 0; i < st->workers && i < STATUS_WORKERS_MAX; i++)
			fprintf(fp, " %" PRIu64 " (%" PRIu64 " live)",
			    st->worker_total[i], st->worker_active[i]);
		fputc('\n', fp);
	}
	if (st->has_sources) {
		fprintf(fp, "sources: %zu with connections; datagram sessions "
		    "%u (max %u)\n", st->sources, st->udp_sessions,
		    st->udp_max);
		fprintf(fp, "strangers: %u unauthenticated (max %u), %u at the "
		    "cover site; cover memory %s in use, peak %s, limit %s; %"
		    PRIu64 " allocations refused\n", st->preauth,
		    st->preauth_max, st->cover_sessions,
		    status_bytes(st->cover_mem_used, a, sizeof(a)),
		    status_bytes(st->cover_mem_peak, b, sizeof(b)),
		    st->cover_mem_max != 0 ? status_bytes(st->cover_mem_max, c,
		    sizeof(c)) : "none", st->cover_mem_denied);
	}
	fprintf(fp, "limits refused:");
	for (i = 0; i < LIMIT_NKINDS; i++)
		if (st->has_sources || i == LIMIT_MEMORY)
			fprintf(fp, " %s %" PRIu64, limit_kind_name(i),
			    st->limit_refused[i]);
	fputc('\n', fp);
}

/* "server: ADDR, last contact 3.1s ago (last failure 1m05s ago: why)",
 * like the latest handshake of `wg show`. */
static void
text_server(FILE *fp, const struct status *st)
{
	char	a[32];

	fprintf(fp, "server: %s", st->server);
	if (st->contact_kept) {
		if (st->has_contact)
			fprintf(fp, ", last contact %s ago", status_age(
			    st->contact_age_ms, a, sizeof(a)));
		else
			fprintf(fp, ", no contact yet");
		if (st->has_contact_fail)
			fprintf(fp, " (last failure %s ago: %s)", status_age(
			    st->contact_fail_age_ms, a, sizeof(a)),
			    st->contact_fail_reason != NULL ?
			    st->contact_fail_reason : "unknown");
	}
	fputc('\n', fp);
}

void
status_write_text(const struct status *st, FILE *fp)
{
	char		 a[32], b[32];
	const char	*what = strcmp(st->role, "server") == 0 ? "sessions" :
			    "flows";

	fprintf(fp, "%s: tunsplit %s, pid %ld, up %s%s\n", st->role,
	    st->version, st->pid, status_age(st->uptime_ms, a, sizeof(a)),
	    st->draining ? ", DRAINING (not accepting)" : "");
	if (st->generation > 0)
		fprintf(fp, "configuration: generation %" PRIu64 "\n",
		    st->generation);
	if (st->server[0] != '\0')
		text_server(fp, st);
	if (strcmp(st->role, "server") == 0)
		fprintf(fp, "users: %zu\n", st->users);
	fprintf(fp, "%s: %" PRIu64 " active (max %u), %" PRIu64 " total, %"
	    PRIu64 " refused, ", what, st->active, st->max, st->total,
	    st->refused);
	/* A warm pool connection retired unused is neither ok nor failed. */
	if (strcmp(st->role, "server") == 0)
		fprintf(fp, "%" PRIu64 " unused, %" PRIu64 " waited, ",
		    st->unused, st->waited);
	fprintf(fp, "%" PRIu64 " failed (%" PRIu64 " internal)\n", st->failed,
	    st->internal);
	fprintf(fp, "bytes: up %s (%" PRIu64 "), down %s (%" PRIu64 ")\n",
	    status_bytes(st->bytes_up, a, sizeof(a)), st->bytes_up,
	    status_bytes(st->bytes_down, b, sizeof(b)), st->bytes_down);
	text_reasons(fp, "failures", st->failures);
	text_reasons(fp, "rejected", st->rejects);
	if (st->has_cover)
		fprintf(fp, "cover site %s: %" PRIu64 " relayed, %" PRIu64
		    " unreachable\n", st->cover, st->cover_relayed,
		    st->cover_failed);
	if (strcmp(st->role, "server") == 0)
		fprintf(fp, "reuse: %" PRIu64 " offered, %" PRIu64 " flows on "
		    "reused connections, %" PRIu64 " errors\n",
		    st->reuse_offered, st->reused, st->reuse_errors);
	if (st->handshake != NULL && st->handshake->count > 0)
		fprintf(fp, "handshakes: %" PRIu64 ", mean %.1f ms\n",
		    st->handshake->count, (double)st->handshake->sum_us /
		    (double)st->handshake->count / 1000.0);
	if (st->has_tun)
		fprintf(fp, "tun: rx %" PRIu64 " packets (%s), tx %" PRIu64
		    " packets (%s); malformed %" PRIu64 ", unsupported %" PRIu64
		    ", tx errors %" PRIu64 ", SYNs refused %" PRIu64
		    ", listeners %" PRIu64 ", TIME_WAIT reused %" PRIu64 "\n",
		    st->tun.rx_packets,
		    status_bytes(st->tun.rx_bytes, a, sizeof(a)),
		    st->tun.tx_packets,
		    status_bytes(st->tun.tx_bytes, b, sizeof(b)),
		    st->tun.rx_malformed, st->tun.rx_unsupported,
		    st->tun.tx_errors, st->tun.syn_refused, st->tun.listeners,
		    st->tun.tw_reused);
	if (st->has_tun && st->tun.offload)
		fprintf(fp, "tun offloads: on; super-packets in %" PRIu64
		    ", out %" PRIu64 "; bad virtio headers %" PRIu64 "\n",
		    st->tun.rx_gso, st->tun.tx_gso, st->tun.rx_vnet_bad);
	else if (st->has_tun)
		fprintf(fp, "tun offloads: off\n");
	if (st->has_pool)
		fprintf(fp, "pool: %u ready, %u connecting (target %u, size %u);"
		    " %" PRIu64 " opened, %" PRIu64 " taken (%" PRIu64
		    " reused), %" PRIu64 " expired, %" PRIu64 " failed\n",
		    st->pool.ready, st->pool.connecting, st->pool.target,
		    st->pool_size, st->pool.opened, st->pool.taken,
		    st->pool.reused, st->pool.expired, st->pool.failed);
	if (st->has_dialer)
		fprintf(fp, "dialer: %u threads, %u dials in flight; %" PRIu64
		    " ready (%" PRIu64 " resumed), %" PRIu64 " failed, %"
		    PRIu64 " cancelled, %" PRIu64 " left to the loop\n",
		    st->dialer.threads, st->dialer.active, st->dialer.ready,
		    st->dialer.resumed, st->dialer.failed,
		    st->dialer.cancelled, st->dialer.declined);
	if (st->has_udp)
		fprintf(fp, "udp: %" PRIu64 " associations active, %" PRIu64
		    " total, %" PRIu64 " failed (%" PRIu64 " internal), %" PRIu64
		    " expired, %" PRIu64 " evicted; datagrams up %" PRIu64
		    " down %" PRIu64 ", bytes up %" PRIu64 " down %" PRIu64 "\n",
		    st->udp.active, st->udp.created, st->udp.failed,
		    st->udp.internal, st->udp.expired,
		    st->udp.evicted, st->udp.dgrams_up, st->udp.dgrams_down,
		    st->udp.bytes_up, st->udp.bytes_down);
	if (st->has_fakeip)
		fprintf(fp, "fake-ip: %zu names (of %zu), %" PRIu64
		    " answers, %" PRIu64 " evicted; flows to fake addresses: %"
		    PRIu64 " named, %" PRIu64 " refused (no name); %" PRIu64
		    " saves, %" PRIu64 " failed\n", st->fakeip.entries,
		    st->fakeip.capacity, st->fakeip.answers,
		    st->fakeip.evictions, st->fakeip.hits, st->fakeip.misses,
		    st->fakeip.saves, st->fakeip.save_errors);
	if (st->has_dns)
		text_dns(st, fp);
	if (st->has_limits)
		text_limits(st, fp);
	if (st->has_resolver)
		text_resolver(&st->resolver, fp);
	if (st->noutbounds > 0)
		text_outbounds(st, fp);
	if (st->nrules > 0)
		text_rules(st, fp);
	if (st->flows != NULL)
		text_flows(st, fp);
}

/* ---- JSON ------------------------------------------------------------- */

void
status_json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		unsigned char	c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

static void
json_reasons(FILE *fp, const char *key, const struct stats_reasons *r)
{
	size_t	i;

	fprintf(fp, ",\"%s\":{", key);
	for (i = 0; r != NULL && i < r->nv; i++) {
		if (i > 0)
			fputc(',', fp);
		status_json_str(fp, r->v[i].reason);
		fprintf(fp, ":%" PRIu64, r->v[i].n);
	}
	if (r != NULL && r->other > 0)
		fprintf(fp, "%s\"other\":%" PRIu64, r->nv > 0 ? "," : "",
		    r->other);
	fputc('}', fp);
}

static void json_hist(FILE *, const struct stats_hist *);

static void
json_outbounds(const struct status *st, FILE *fp)
{
	const struct status_outbound	*o;
	size_t				 i;

	fprintf(fp, ",\"outbounds\":[");
	for (i = 0; i < st->noutbounds; i++) {
		o = &st->outbounds[i];
		fprintf(fp, "%s{\"name\":", i > 0 ? "," : "");
		status_json_str(fp, o->name);
		fprintf(fp, ",\"protocol\":");
		status_json_str(fp, o->protocol);
		if (o->server[0] != '\0') {
			fprintf(fp, ",\"server\":");
			status_json_str(fp, o->server);
		}
		fprintf(fp, ",\"final\":%s,\"active\":%" PRIu64 ",\"opened\":%"
		    PRIu64 ",\"failed\":%" PRIu64 ",\"bytes_up\":%" PRIu64
		    ",\"bytes_down\":%" PRIu64, o->final ? "true" : "false",
		    o->active, o->opened, o->failed, o->bytes_up,
		    o->bytes_down);
		json_hist(fp, &o->handshake);
		if (o->has_pool)
			fprintf(fp, ",\"pool\":{\"size\":%u,\"target\":%u,"
			    "\"ready\":%u,"
			    "\"connecting\":%u,\"opened\":%" PRIu64
			    ",\"taken\":%" PRIu64 ",\"expired\":%" PRIu64
			    ",\"failed\":%" PRIu64 "}", o->pool_size,
			    o->pool.target, o->pool.ready, o->pool.connecting, o->pool.opened,
			    o->pool.taken, o->pool.expired, o->pool.failed);
		if (o->has_gate)
			fprintf(fp, ",\"dials\":{\"active\":%u,\"waiting\":%u}",
			    o->dialling, o->dial_waiting);
		if (o->state != NULL) {
			fprintf(fp, ",\"state\":");
			status_json_str(fp, o->state);
			fprintf(fp, ",\"down_ms\":%" PRIu64 ",\"downs\":%"
			    PRIu64 ",\"why\":", o->down_ms, o->downs);
			status_json_str(fp, o->why);
			fprintf(fp, ",\"first_byte_us\":%u,\"first_byte_base_us"
			    "\":%u,\"retrans_pm\":%u,\"retrans_base_pm\":%u",
			    o->fb_us, o->fb_base_us, o->rtx_pm, o->rtx_base_pm);
		}
		if (o->group != NULL && o->group[0] != '\0') {
			fprintf(fp, ",\"group\":");
			status_json_str(fp, o->group);
			fprintf(fp, ",\"members\":");
			status_json_str(fp, o->members);
			fprintf(fp, ",\"active_member\":");
			status_json_str(fp, o->active_member);
		}
		fputc('}', fp);
	}
	fputc(']', fp);
}

static void
json_hist(FILE *fp, const struct stats_hist *h)
{
	size_t	i;

	fprintf(fp, ",\"handshake\":{\"count\":%" PRIu64 ",\"sum_us\":%" PRIu64
	    ",\"buckets_us\":[", h->count, h->sum_us);
	for (i = 0; i <= STATS_HIST_NBOUNDS; i++) {
		if (i < STATS_HIST_NBOUNDS)
			fprintf(fp, "%s[%" PRIu64 ",%" PRIu64 "]", i > 0 ? "," : "",
			    stats_hist_bound(i), h->bucket[i]);
		else
			fprintf(fp, ",[null,%" PRIu64 "]", h->bucket[i]);
	}
	fprintf(fp, "]}");
}

static void
json_flow(FILE *fp, const struct status_flow *f)
{
	fprintf(fp, "{\"id\":%" PRIu64 ",\"dst\":", f->id);
	status_json_str(fp, f->dst);
	if (f->peer[0] != '\0') {
		fprintf(fp, ",\"peer\":");
		status_json_str(fp, f->peer);
	}
	if (f->user[0] != '\0') {
		fprintf(fp, ",\"user\":");
		status_json_str(fp, f->user);
	}
	if (f->domain[0] != '\0') {
		fprintf(fp, ",\"domain\":");
		status_json_str(fp, f->domain);
	}
	if (f->rule[0] != '\0') {
		fprintf(fp, ",\"rule\":");
		status_json_str(fp, f->rule);
	}
	if (f->outbound[0] != '\0') {
		fprintf(fp, ",\"outbound\":");
		status_json_str(fp, f->outbound);
	}
	fprintf(fp, ",\"state\":");
	status_json_str(fp, f->state);
	fprintf(fp, ",\"age_ms\":%" PRIu64 ",\"up\":%" PRIu64 ",\"down\":%"
	    PRIu64, f->age_ms, f->up, f->down);
	if (f->has_tcpi)
		fprintf(fp, ",\"rtt_us\":%" PRIu32 ",\"rttvar_us\":%" PRIu32
		    ",\"retrans\":%" PRIu32 ",\"cwnd\":%" PRIu32, f->rtt_us,
		    f->rttvar_us, f->retrans, f->cwnd);
	fputc('}', fp);
}

static void
json_dns(const struct status *st, FILE *fp)
{
	const struct dnsfwd_stats *k = &st->dns_cache;
	char	buf[ADDR_STRLEN];
	size_t	i;

	fprintf(fp, ",\"dns_cache\":{\"hits\":%" PRIu64 ",\"misses\":%" PRIu64
	    ",\"answers\":%" PRIu64 ",\"stored\":%" PRIu64 ",\"evicted\":%"
	    PRIu64 ",\"expired\":%" PRIu64 "}", k->hits, k->misses,
	    k->entries, k->stored, k->evicted, k->expired);
	fprintf(fp, ",\"dns_upstreams\":[");
	for (i = 0; i < st->ndns_up; i++) {
		fprintf(fp, "%s{\"name\":", i > 0 ? "," : "");
		status_json_str(fp, st->dns_up[i].name);
		fprintf(fp, ",\"address\":");
		status_json_str(fp, addr_fmt(&st->dns_up[i].addr, buf,
		    sizeof(buf)));
		fprintf(fp, ",\"queries\":%" PRIu64 ",\"protocol\":\"%s\","
		    "\"failed\":%" PRIu64 "}", st->dns_up_queries[i],
		    status_dns_proto(&st->dns_up[i]), st->dns_up_failed[i]);
	}
	fputc(']', fp);
}

static void
json_resolver(const struct resolve_stats *r, FILE *fp)
{
	fprintf(fp, ",\"resolver\":{\"lookups\":%" PRIu64 ",\"cache_hits\":%"
	    PRIu64 ",\"ok\":%" PRIu64 ",\"notfound\":%" PRIu64 ",\"failed\":%"
	    PRIu64 ",\"timeouts\":%" PRIu64 ",\"busy\":%" PRIu64 ",\"badname\":%"
	    PRIu64 ",\"cancelled\":%" PRIu64 ",\"late\":%" PRIu64
	    ",\"waiting\":%u,\"running\":%u,\"threads\":%u,\"cached\":%u}",
	    r->lookups, r->cache_hits, r->ok, r->notfound, r->failed,
	    r->timeouts, r->busy, r->badname, r->cancelled, r->late, r->waiting,
	    r->running, r->threads, r->cached);
}

static void
json_limits(const struct status *st, FILE *fp)
{
	size_t	 i;

	fprintf(fp, ",\"limits\":{\"refused\":{");
	for (i = 0; i < LIMIT_NKINDS; i++)
		fprintf(fp, "%s\"%s\":%" PRIu64, i > 0 ? "," : "",
		    limit_kind_name(i), st->limit_refused[i]);
	fprintf(fp, "},\"buffer_memory\":{\"used\":%zu,\"peak\":%zu,"
	    "\"max\":%zu,\"denied\":%" PRIu64 "}", st->mem_used, st->mem_peak,
	    st->mem_max, st->mem_denied);
	if (st->has_sources) {
		fprintf(fp, ",\"sources\":%zu,\"udp_sessions\":%u,"
		    "\"udp_max\":%u", st->sources, st->udp_sessions,
		    st->udp_max);
		fprintf(fp, ",\"preauth\":%u,\"preauth_max\":%u,"
		    "\"cover_sessions\":%u,\"cover_memory\":{\"used\":%zu,"
		    "\"peak\":%zu,\"max\":%zu,\"denied\":%" PRIu64 "}",
		    st->preauth, st->preauth_max, st->cover_sessions,
		    st->cover_mem_used, st->cover_mem_peak, st->cover_mem_max,
		    st->cover_mem_denied);
	}
	fputc('}', fp);
}

/* "contact": the last one and the last failure, ages and Unix times in
 * ms; null: never. */
static void
json_contact(FILE *fp, const struct status *st)
{
	fprintf(fp, ",\"contact\":{");
	if (st->has_contact)
		fprintf(fp, "\"last_ms\":%" PRIu64 ",\"last_unix_ms\":%"
		    PRIu64, st->contact_age_ms, st->contact_unix_ms);
	else
		fprintf(fp, "\"last_ms\":null,\"last_unix_ms\":null");
	if (st->has_contact_fail) {
		fprintf(fp, ",\"failure_ms\":%" PRIu64 ",\"failure_unix_ms\":%"
		    PRIu64 ",\"failure_reason\":", st->contact_fail_age_ms,
		    st->contact_fail_unix_ms);
		status_json_str(fp, st->contact_fail_reason != NULL ?
		    st->contact_fail_reason : "unknown");
	} else
		fprintf(fp, ",\"failure_ms\":null,\"failure_unix_ms\":null,"
		    "\"failure_reason\":null");
	fputc('}', fp);
}

void
status_write_json(const struct status *st, FILE *fp)
{
	const char	*what = strcmp(st->role, "server") == 0 ? "sessions" :
			    "flows";
	size_t		 i;

	fprintf(fp, "{\"role\":");
	status_json_str(fp, st->role);
	fprintf(fp, ",\"version\":");
	status_json_str(fp, st->version);
	fprintf(fp, ",\"pid\":%ld,\"uptime_ms\":%" PRIu64 ",\"draining\":%s"
	    ",\"generation\":%" PRIu64, st->pid, st->uptime_ms,
	    st->draining ? "true" : "false", st->generation);
	if (st->server[0] != '\0') {
		fprintf(fp, ",\"server\":");
		status_json_str(fp, st->server);
	}
	if (st->contact_kept)
		json_contact(fp, st);
	if (strcmp(st->role, "server") == 0)
		fprintf(fp, ",\"users\":%zu", st->users);
	for (i = 0; status_has_workers(st) && i < st->workers &&
	    i < STATUS_WORKERS_MAX; i++)
		fprintf(fp, "%s{\"%s\":%" PRIu64 ",\"active\":%" PRIu64
		    "}%s", i == 0 ? ",\"workers\":[" : ",",
		    status_worker_what(st), st->worker_total[i],
		    st->worker_active[i], i + 1 == st->workers ? "]" : "");
	fprintf(fp, ",\"%s\":{\"active\":%" PRIu64 ",\"total\":%" PRIu64
	    ",\"refused\":%" PRIu64, what, st->active, st->total, st->refused);
	if (strcmp(st->role, "server") == 0)
		fprintf(fp, ",\"unused\":%" PRIu64 ",\"waited\":%" PRIu64,
		    st->unused, st->waited);
	fprintf(fp, ",\"failed\":%" PRIu64 ",\"internal\":%" PRIu64
	    ",\"max\":%u}", st->failed, st->internal, st->max);
	fprintf(fp, ",\"bytes\":{\"up\":%" PRIu64 ",\"down\":%" PRIu64 "}",
	    st->bytes_up, st->bytes_down);
	json_reasons(fp, "failures", st->failures);
	if (st->rejects != NULL)
		json_reasons(fp, "rejected", st->rejects);
	if (st->has_cover) {
		fprintf(fp, ",\"cover\":{\"site\":");
		status_json_str(fp, st->cover);
		fprintf(fp, ",\"relayed\":%" PRIu64 ",\"unreachable\":%" PRIu64
		    "}", st->cover_relayed, st->cover_failed);
	}
	if (strcmp(st->role, "server") == 0)
		fprintf(fp, ",\"reuse\":{\"offered\":%" PRIu64 ",\"reused\":%"
		    PRIu64 ",\"errors\":%" PRIu64 "}", st->reuse_offered,
		    st->reused, st->reuse_errors);
	if (st->handshake != NULL)
		json_hist(fp, st->handshake);
	if (st->has_tun)
		fprintf(fp, ",\"tun\":{\"rx_packets\":%" PRIu64 ",\"rx_bytes\":%"
		    PRIu64 ",\"tx_packets\":%" PRIu64 ",\"tx_bytes\":%" PRIu64
		    ",\"rx_malformed\":%" PRIu64 ",\"rx_unsupported\":%" PRIu64
		    ",\"tx_errors\":%" PRIu64 ",\"syn_refused\":%" PRIu64
		    ",\"listeners\":%" PRIu64 ",\"tw_reused\":%" PRIu64
		    ",\"offload\":%s,\"rx_gso\":%" PRIu64 ",\"tx_gso\":%"
		    PRIu64 ",\"rx_vnet_bad\":%" PRIu64 "}",
		    st->tun.rx_packets,
		    st->tun.rx_bytes, st->tun.tx_packets, st->tun.tx_bytes,
		    st->tun.rx_malformed, st->tun.rx_unsupported,
		    st->tun.tx_errors, st->tun.syn_refused, st->tun.listeners,
		    st->tun.tw_reused, st->tun.offload ? "true" : "false",
		    st->tun.rx_gso, st->tun.tx_gso, st->tun.rx_vnet_bad);
	if (st->has_pool)
		fprintf(fp, ",\"pool\":{\"size\":%u,\"target\":%u,\"ready\":%u,"
		    "\"connecting\":%u,"
		    "\"opened\":%" PRIu64 ",\"taken\":%" PRIu64 ",\"reused\":%"
		    PRIu64 ",\"expired\":%"
		    PRIu64 ",\"failed\":%" PRIu64 ",\"pooled_flows\":%" PRIu64 "}",
		    st->pool_size, st->pool.target, st->pool.ready, st->pool.connecting,
		    st->pool.opened, st->pool.taken, st->pool.reused,
		    st->pool.expired, st->pool.failed, st->pooled);
	if (st->has_dialer)
		fprintf(fp, ",\"dialer\":{\"threads\":%u,\"active\":%u,"
		    "\"ready\":%" PRIu64 ",\"resumed\":%" PRIu64
		    ",\"failed\":%" PRIu64 ",\"cancelled\":%" PRIu64
		    ",\"declined\":%" PRIu64 "}",
		    st->dialer.threads, st->dialer.active, st->dialer.ready,
		    st->dialer.resumed, st->dialer.failed,
		    st->dialer.cancelled, st->dialer.declined);
	if (st->has_udp)
		fprintf(fp, ",\"udp\":{\"active\":%" PRIu64 ",\"total\":%" PRIu64
		    ",\"failed\":%" PRIu64 ",\"internal\":%" PRIu64 ",\"expired\":%"
		    PRIu64 ",\"evicted\":%" PRIu64 ",\"dgrams_up\":%" PRIu64
		    ",\"dgrams_down\":%" PRIu64 ",\"bytes_up\":%" PRIu64
		    ",\"bytes_down\":%" PRIu64 ",\"dropped\":%" PRIu64 "}",
		    st->udp.active, st->udp.created, st->udp.failed,
		    st->udp.internal, st->udp.expired, st->udp.evicted, st->udp.dgrams_up,
		    st->udp.dgrams_down, st->udp.bytes_up, st->udp.bytes_down,
		    st->udp.drop_queue + st->udp.drop_hold + st->udp.drop_down +
		    st->udp.drop_send + st->udp.drop_block + st->udp.drop_proto +
		    st->udp.tun_errors);
	if (st->has_fakeip)
		fprintf(fp, ",\"fakeip\":{\"names\":%zu,\"capacity\":%zu,"
		    "\"answers\":%" PRIu64 ",\"issued\":%" PRIu64
		    ",\"evictions\":%" PRIu64 ",\"hits\":%" PRIu64
		    ",\"misses\":%" PRIu64 ",\"saves\":%" PRIu64
		    ",\"save_errors\":%" PRIu64 "}", st->fakeip.entries,
		    st->fakeip.capacity, st->fakeip.answers, st->fakeip.issued,
		    st->fakeip.evictions, st->fakeip.hits, st->fakeip.misses,
		    st->fakeip.saves, st->fakeip.save_errors);
	if (st->has_dns)
		json_dns(st, fp);
	if (st->has_limits)
		json_limits(st, fp);
	if (st->has_resolver)
		json_resolver(&st->resolver, fp);
	if (st->noutbounds > 0)
		json_outbounds(st, fp);
	if (st->nrules > 0) {
		fprintf(fp, ",\"rules\":[");
		for (i = 0; i < st->nrules; i++) {
			fprintf(fp, "%s{\"rule\":%d,\"outbound\":",
			    i > 0 ? "," : "", st->rules[i].index);
			status_json_str(fp, st->rules[i].outbound);
			fprintf(fp, ",\"hits\":%" PRIu64, st->rules[i].hits);
			if (st->rules[i].index >= 0) {
				fprintf(fp, ",\"match\":");
				status_json_str(fp, st->rules[i].match);
			}
			fputc('}', fp);
		}
		fputc(']', fp);
	}
	if (st->flows != NULL) {
		fprintf(fp, ",\"flow_list\":[");
		for (i = 0; i < st->nflows; i++) {
			if (i > 0)
				fputc(',', fp);
			json_flow(fp, &st->flows[i]);
		}
		fputc(']', fp);
	}
	fprintf(fp, "}\n");
}

/* ---- Prometheus --------------------------------------------------------- */

static void
prom_label(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(fp, "\\%c", *s);
		else if (*s == '\n')
			fprintf(fp, "\\n");
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
prom_head(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP tunsplit_%s %s\n# TYPE tunsplit_%s %s\n", name, help,
	    name, type);
}

static void
prom_one(FILE *fp, const char *name, const char *type, const char *help,
    uint64_t v)
{
	prom_head(fp, name, type, help);
	fprintf(fp, "tunsplit_%s %" PRIu64 "\n", name, v);
}

static void
prom_reasons(FILE *fp, const char *name, const char *help,
    const struct stats_reasons *r)
{
	size_t	i;

	prom_head(fp, name, "counter", help);
	for (i = 0; i < r->nv; i++) {
		fprintf(fp, "tunsplit_%s{reason=", name);
		prom_label(fp, r->v[i].reason);
		fprintf(fp, "} %" PRIu64 "\n", r->v[i].n);
	}
	if (r->other > 0)
		fprintf(fp, "tunsplit_%s{reason=\"other\"} %" PRIu64 "\n", name,
		    r->other);
}

static void
prom_hist(FILE *fp, const struct stats_hist *h)
{
	uint64_t	cum = 0;
	size_t		i;

	prom_head(fp, "handshake_seconds", "histogram",
	    "Outer connection set-up time: TCP connect start to TLS done.");
	for (i = 0; i < STATS_HIST_NBOUNDS; i++) {
		cum += h->bucket[i];
		fprintf(fp, "tunsplit_handshake_seconds_bucket{le=\"%g\"} %"
		    PRIu64 "\n", (double)stats_hist_bound(i) / 1e6, cum);
	}
	cum += h->bucket[STATS_HIST_NBOUNDS];
	fprintf(fp, "tunsplit_handshake_seconds_bucket{le=\"+Inf\"} %" PRIu64
	    "\n", cum);
	fprintf(fp, "tunsplit_handshake_seconds_sum %.6f\n",
	    (double)h->sum_us / 1e6);
	fprintf(fp, "tunsplit_handshake_seconds_count %" PRIu64 "\n", h->count);
}

static void
prom_tun(FILE *fp, const struct tsnetif_stats *t)
{
	prom_head(fp, "tun_packets_total", "counter",
	    "IP packets read from (rx) and written to (tx) the TUN.");
	fprintf(fp, "tunsplit_tun_packets_total{direction=\"rx\"} %" PRIu64
	    "\ntunsplit_tun_packets_total{direction=\"tx\"} %" PRIu64 "\n",
	    t->rx_packets, t->tx_packets);
	prom_head(fp, "tun_bytes_total", "counter",
	    "Bytes read from (rx) and written to (tx) the TUN.");
	fprintf(fp, "tunsplit_tun_bytes_total{direction=\"rx\"} %" PRIu64
	    "\ntunsplit_tun_bytes_total{direction=\"tx\"} %" PRIu64 "\n",
	    t->rx_bytes, t->tx_bytes);
	prom_head(fp, "tun_dropped_total", "counter",
	    "TUN packets dropped, by reason.");
	fprintf(fp, "tunsplit_tun_dropped_total{reason=\"malformed\"} %" PRIu64
	    "\ntunsplit_tun_dropped_total{reason=\"unsupported\"} %" PRIu64
	    "\ntunsplit_tun_dropped_total{reason=\"tx_error\"} %" PRIu64 "\n",
	    t->rx_malformed, t->rx_unsupported, t->tx_errors);
	prom_one(fp, "tun_syn_refused_total", "counter",
	    "SYNs answered with RST (flow limit or draining).", t->syn_refused);
	prom_one(fp, "tun_listeners", "gauge",
	    "Ports with an on-demand lwIP listener.", t->listeners);
	prom_one(fp, "tun_timewait_reused_total", "counter",
	    "New SYNs that ended a TIME_WAIT of lwIP's on the same ports.",
	    t->tw_reused);
	prom_one(fp, "tun_offload", "gauge",
	    "1: the TUN has checksum offload and TSO (virtio-net headers).",
	    t->offload);
	prom_head(fp, "tun_gso_packets_total", "counter",
	    "TCP super-packets read from (rx) and written to (tx) the TUN.");
	fprintf(fp, "tunsplit_tun_gso_packets_total{direction=\"rx\"} %" PRIu64
	    "\ntunsplit_tun_gso_packets_total{direction=\"tx\"} %" PRIu64 "\n",
	    t->rx_gso, t->tx_gso);
	prom_one(fp, "tun_vnet_header_invalid_total", "counter",
	    "TUN reads dropped for a virtio-net header that does not fit the "
	    "packet.", t->rx_vnet_bad);
}

static void
prom_fakeip(FILE *fp, const struct fakeip_stats *f)
{
	prom_one(fp, "fakeip_names", "gauge",
	    "Names the fake-IP table holds.", f->entries);
	prom_one(fp, "fakeip_answers_total", "counter",
	    "DNS queries answered from the fake-IP table.", f->answers);
	prom_one(fp, "fakeip_evictions_total", "counter",
	    "Names forgotten for a new one (least recently used).",
	    f->evictions);
	prom_one(fp, "fakeip_hits_total", "counter",
	    "Flows and datagrams to a fake address that had a name.", f->hits);
	prom_one(fp, "fakeip_misses_total", "counter",
	    "Flows and datagrams to a fake address with no name: refused.",
	    f->misses);
	prom_one(fp, "fakeip_save_errors_total", "counter",
	    "Failed writes of the fake-IP table's file.", f->save_errors);
}

static void
prom_dns(FILE *fp, const struct status *st)
{
	size_t	i;

	prom_one(fp, "dns_cache_hits_total", "counter",
	    "DNS queries answered from the client's cache.", st->dns_cache.hits);
	prom_one(fp, "dns_cache_misses_total", "counter",
	    "DNS queries the cache could not answer.", st->dns_cache.misses);
	prom_one(fp, "dns_cache_answers", "gauge",
	    "Answers the DNS cache holds.", st->dns_cache.entries);
	if (st->ndns_up == 0)
		return;
	prom_head(fp, "dns_upstream_queries_total", "counter",
	    "DNS queries sent to each of dns.upstreams (since the last "
	    "reload).");
	for (i = 0; i < st->ndns_up; i++)
		fprintf(fp, "tunsplit_dns_upstream_queries_total{upstream=\"%s\"}"
		    " %" PRIu64 "\n", st->dns_up[i].name, st->dns_up_queries[i]);
	prom_head(fp, "dns_upstream_failures_total", "counter",
	    "DNS queries to each of dns.upstreams answered SERVFAIL by the "
	    "client: the upstream refused, failed, timed out or answered "
	    "malformed (tcp, tls, https; since the last reload).");
	for (i = 0; i < st->ndns_up; i++)
		fprintf(fp, "tunsplit_dns_upstream_failures_total{upstream="
		    "\"%s\"} %" PRIu64 "\n", st->dns_up[i].name,
		    st->dns_up_failed[i]);
}

static void
prom_udp(FILE *fp, const struct assoc_stats *u)
{
	prom_one(fp, "udp_associations_active", "gauge",
	    "Live UDP associations and ICMP echo sessions.", u->active);
	prom_head(fp, "udp_associations_total", "counter",
	    "UDP associations and ICMP echo sessions, by how they began or "
	    "ended.");
	fprintf(fp, "tunsplit_udp_associations_total{event=\"created\"} %"
	    PRIu64 "\ntunsplit_udp_associations_total{event=\"expired\"} %"
	    PRIu64 "\ntunsplit_udp_associations_total{event=\"evicted\"} %"
	    PRIu64 "\ntunsplit_udp_associations_total{event=\"failed\"} %"
	    PRIu64 "\n", u->created, u->expired, u->evicted, u->failed);
	prom_one(fp, "udp_associations_internal_failures_total", "counter",
	    "Associations failed by the client's own failure (out of memory), "
	    "counted as failed too.", u->internal);
	prom_head(fp, "udp_datagrams_total", "counter",
	    "Datagrams toward targets (up) and back (down).");
	fprintf(fp, "tunsplit_udp_datagrams_total{direction=\"up\"} %" PRIu64
	    "\ntunsplit_udp_datagrams_total{direction=\"down\"} %" PRIu64 "\n",
	    u->dgrams_up, u->dgrams_down);
	prom_head(fp, "udp_bytes_total", "counter",
	    "Datagram payload bytes toward targets (up) and back (down).");
	fprintf(fp, "tunsplit_udp_bytes_total{direction=\"up\"} %" PRIu64
	    "\ntunsplit_udp_bytes_total{direction=\"down\"} %" PRIu64 "\n",
	    u->bytes_up, u->bytes_down);
	prom_head(fp, "udp_dropped_total", "counter",
	    "Datagrams dropped, by reason.");
	fprintf(fp, "tunsplit_udp_dropped_total{reason=\"queue\"} %" PRIu64
	    "\ntunsplit_udp_dropped_total{reason=\"hold\"} %" PRIu64
	    "\ntunsplit_udp_dropped_total{reason=\"undeliverable\"} %" PRIu64
	    "\ntunsplit_udp_dropped_total{reason=\"tun_error\"} %" PRIu64
	    "\ntunsplit_udp_dropped_total{reason=\"send\"} %" PRIu64
	    "\ntunsplit_udp_dropped_total{reason=\"block\"} %" PRIu64
	    "\ntunsplit_udp_dropped_total{reason=\"no_icmp\"} %" PRIu64 "\n",
	    u->drop_queue, u->drop_hold, u->drop_down, u->tun_errors,
	    u->drop_send, u->drop_block, u->drop_proto);
}

/* rule="-1" is final: the flows no rule took. */
static void
prom_rules(FILE *fp, const struct status *st)
{
	size_t	i;

	prom_head(fp, "rule_hits_total", "counter",
	    "Flows and associations each rule decided since the last reload "
	    "(rule=\"-1\": final, none matched).");
	for (i = 0; i < st->nrules; i++) {
		fprintf(fp, "tunsplit_rule_hits_total{rule=\"%d\",outbound=",
		    st->rules[i].index);
		prom_label(fp, st->rules[i].outbound);
		fprintf(fp, "} %" PRIu64 "\n", st->rules[i].hits);
	}
}

/* A group's active member, or each of a balance group's ("a, b"). */
static void
prom_group_active(FILE *fp, const struct status_outbound *o)
{
	const char	*p = o->active_member;
	size_t		 n;

	while (*p != '\0') {
		n = strcspn(p, ",");
		fprintf(fp, "tunsplit_group_active{group=\"%s\",member=\"%.*s\"}"
		    " 1\n", o->name, (int)n, p);
		p += n;
		p += strspn(p, ", ");
	}
}

/* Per outbound, labelled outbound="NAME". */
static void
prom_outbounds(FILE *fp, const struct status *st)
{
	const struct status_outbound	*o;
	uint64_t			 cum;
	size_t				 i, j;

	prom_head(fp, "outbound_flows_total", "counter",
	    "Flows and associations started on each outbound, and of those "
	    "failed.");
	for (i = 0; i < st->noutbounds; i++) {
		o = &st->outbounds[i];
		fprintf(fp, "tunsplit_outbound_flows_total{outbound=\"%s\","
		    "event=\"opened\"} %" PRIu64 "\n"
		    "tunsplit_outbound_flows_total{outbound=\"%s\","
		    "event=\"failed\"} %" PRIu64 "\n", o->name, o->opened,
		    o->name, o->failed);
	}
	prom_head(fp, "outbound_up", "gauge",
	    "1 while an outbound is up (judged by its flows), or a group has "
	    "a member up; 0 while not.");
	for (i = 0; i < st->noutbounds; i++)
		if (st->outbounds[i].state != NULL)
			fprintf(fp, "tunsplit_outbound_up{outbound=\"%s\"} %d\n",
			    st->outbounds[i].name,
			    strcmp(st->outbounds[i].state, "up") == 0);
	prom_head(fp, "outbound_degraded", "gauge",
	    "1 while an outbound is degraded: far slower, or retransmitting "
	    "far more, than its own baseline.");
	for (i = 0; i < st->noutbounds; i++)
		if (st->outbounds[i].state != NULL)
			fprintf(fp, "tunsplit_outbound_degraded{outbound=\"%s\"} "
			    "%d\n", st->outbounds[i].name,
			    st->outbounds[i].degraded);
	prom_head(fp, "outbound_first_byte_seconds", "gauge",
	    "Request to the server's answer on each outbound: the recent "
	    "average (what fastest compares) and the baseline.");
	for (i = 0; i < st->noutbounds; i++) {
		o = &st->outbounds[i];
		if (o->fb_us == 0)
			continue;
		fprintf(fp, "tunsplit_outbound_first_byte_seconds{outbound=\"%s\","
		    "avg=\"recent\"} %.6f\n"
		    "tunsplit_outbound_first_byte_seconds{outbound=\"%s\","
		    "avg=\"baseline\"} %.6f\n", o->name, o->fb_us / 1e6,
		    o->name, o->fb_base_us / 1e6);
	}
	prom_head(fp, "group_active", "gauge",
	    "1 for the member of each group a new flow takes now (balance: "
	    "each member up).");
	for (i = 0; i < st->noutbounds; i++)
		prom_group_active(fp, &st->outbounds[i]);
	prom_head(fp, "outbound_active", "gauge",
	    "Flows and associations live on each outbound.");
	for (i = 0; i < st->noutbounds; i++)
		fprintf(fp, "tunsplit_outbound_active{outbound=\"%s\"} %"
		    PRIu64 "\n", st->outbounds[i].name,
		    st->outbounds[i].active);
	prom_head(fp, "outbound_bytes_total", "counter",
	    "Payload bytes of ended flows and associations, per outbound.");
	for (i = 0; i < st->noutbounds; i++) {
		o = &st->outbounds[i];
		fprintf(fp, "tunsplit_outbound_bytes_total{outbound=\"%s\","
		    "direction=\"up\"} %" PRIu64 "\n"
		    "tunsplit_outbound_bytes_total{outbound=\"%s\","
		    "direction=\"down\"} %" PRIu64 "\n", o->name,
		    o->bytes_up, o->name, o->bytes_down);
	}
	prom_head(fp, "outbound_handshake_seconds", "histogram",
	    "Flows' outer connection set-up time, per outbound.");
	for (i = 0; i < st->noutbounds; i++) {
		o = &st->outbounds[i];
		for (j = 0, cum = 0; j < STATS_HIST_NBOUNDS; j++) {
			cum += o->handshake.bucket[j];
			fprintf(fp, "tunsplit_outbound_handshake_seconds_bucket{"
			    "outbound=\"%s\",le=\"%g\"} %" PRIu64 "\n", o->name,
			    (double)stats_hist_bound(j) / 1e6, cum);
		}
		cum += o->handshake.bucket[STATS_HIST_NBOUNDS];
		fprintf(fp, "tunsplit_outbound_handshake_seconds_bucket{"
		    "outbound=\"%s\",le=\"+Inf\"} %" PRIu64 "\n"
		    "tunsplit_outbound_handshake_seconds_sum{outbound=\"%s\"} "
		    "%.6f\ntunsplit_outbound_handshake_seconds_count{"
		    "outbound=\"%s\"} %" PRIu64 "\n", o->name, cum, o->name,
		    (double)o->handshake.sum_us / 1e6, o->name,
		    o->handshake.count);
	}
}

/* One outbound's gauge in two states: NAME{outbound,state=A} and =B. */
static void
prom_outbound_states(FILE *fp, const char *name, const char *ob,
    const char *a, unsigned va, const char *b, unsigned vb)
{
	fprintf(fp, "tunsplit_%s{outbound=\"%s\",state=\"%s\"} %u\n"
	    "tunsplit_%s{outbound=\"%s\",state=\"%s\"} %u\n",
	    name, ob, a, va, name, ob, b, vb);
}

/* The warm pools, one series per outbound that has one. */
static void
prom_pool_outbounds(FILE *fp, const struct status *st)
{
	const struct status_outbound	*o;
	size_t				 i;

	prom_head(fp, "pool_size", "gauge", "pool: the most ready "
	    "connections kept.");
	for (i = 0; i < st->noutbounds; i++)
		if ((o = &st->outbounds[i])->has_pool)
			fprintf(fp, "tunsplit_pool_size{outbound=\"%s\"} %u\n",
			    o->name, o->pool_size);
	prom_head(fp, "pool_target", "gauge", "Warm connections the flow "
	    "arrival rate asks for now (0 when idle).");
	for (i = 0; i < st->noutbounds; i++)
		if ((o = &st->outbounds[i])->has_pool)
			fprintf(fp, "tunsplit_pool_target{outbound=\"%s\"} %u\n",
			    o->name, o->pool.target);
	prom_head(fp, "pool_connections", "gauge",
	    "Warm pool connections, by state.");
	for (i = 0; i < st->noutbounds; i++)
		if ((o = &st->outbounds[i])->has_pool)
			prom_outbound_states(fp, "pool_connections", o->name,
			    "ready", o->pool.ready, "connecting",
			    o->pool.connecting);
	prom_head(fp, "pool_events_total", "counter",
	    "Warm pool connections opened, taken by flows, expired unused, "
	    "failed.");
	for (i = 0; i < st->noutbounds; i++) {
		if (!(o = &st->outbounds[i])->has_pool)
			continue;
		fprintf(fp, "tunsplit_pool_events_total{outbound=\"%s\","
		    "event=\"opened\"} %" PRIu64 "\n", o->name, o->pool.opened);
		fprintf(fp, "tunsplit_pool_events_total{outbound=\"%s\","
		    "event=\"taken\"} %" PRIu64 "\n", o->name, o->pool.taken);
		fprintf(fp, "tunsplit_pool_events_total{outbound=\"%s\","
		    "event=\"expired\"} %" PRIu64 "\n", o->name,
		    o->pool.expired);
		fprintf(fp, "tunsplit_pool_events_total{outbound=\"%s\","
		    "event=\"failed\"} %" PRIu64 "\n", o->name, o->pool.failed);
	}
	prom_one(fp, "flows_pooled_total", "counter",
	    "Flows started on a warm pool connection.", st->pooled);
	prom_head(fp, "outbound_dials", "gauge", "Outer connections in "
	    "their connect and TLS handshake (at most 64 per outbound), "
	    "and flows waiting for one of those slots.");
	for (i = 0; i < st->noutbounds; i++)
		if ((o = &st->outbounds[i])->has_gate)
			prom_outbound_states(fp, "outbound_dials", o->name,
			    "active", o->dialling, "waiting", o->dial_waiting);
}

static void
prom_pool(FILE *fp, const struct status *st)
{
	if (st->noutbounds > 0) {
		prom_pool_outbounds(fp, st);
		return;
	}
	prom_one(fp, "pool_size", "gauge", "client.pool: the most ready "
	    "connections kept.", st->pool_size);
	prom_one(fp, "pool_target", "gauge", "Warm connections the flow "
	    "arrival rate asks for now (0 when idle).", st->pool.target);
	prom_head(fp, "pool_connections", "gauge",
	    "Warm pool connections, by state.");
	fprintf(fp, "tunsplit_pool_connections{state=\"ready\"} %u\n"
	    "tunsplit_pool_connections{state=\"connecting\"} %u\n",
	    st->pool.ready, st->pool.connecting);
	prom_head(fp, "pool_events_total", "counter",
	    "Warm pool connections opened, taken by flows (reused: of "
	    "those, connections that carried a flow before), expired "
	    "unused, failed.");
	fprintf(fp, "tunsplit_pool_events_total{event=\"opened\"} %" PRIu64
	    "\ntunsplit_pool_events_total{event=\"taken\"} %" PRIu64
	    "\ntunsplit_pool_events_total{event=\"reused\"} %" PRIu64
	    "\ntunsplit_pool_events_total{event=\"expired\"} %" PRIu64
	    "\ntunsplit_pool_events_total{event=\"failed\"} %" PRIu64 "\n",
	    st->pool.opened, st->pool.taken, st->pool.reused,
	    st->pool.expired, st->pool.failed);
	prom_one(fp, "flows_pooled_total", "counter",
	    "Flows started on a warm pool connection.", st->pooled);
}

/* The client's dialer threads (client.dial_threads). */
static void
prom_dialer(FILE *fp, const struct status *st)
{
	prom_one(fp, "dialer_threads", "gauge", "Dialer threads running "
	    "outer TLS handshakes off the TUN loop.", st->dialer.threads);
	prom_one(fp, "dialer_active", "gauge", "Outer connections being "
	    "dialled on the dialer threads.", st->dialer.active);
	prom_head(fp, "dialer_dials_total", "counter", "Dials the dialer "
	    "threads handed back ready (resumed: of those, with a TLS "
	    "ticket), failed, cancelled by their owner, or declined (done "
	    "on the loop: the dialer full).");
	fprintf(fp, "tunsplit_dialer_dials_total{result=\"ready\"} %" PRIu64
	    "\ntunsplit_dialer_dials_total{result=\"resumed\"} %" PRIu64
	    "\ntunsplit_dialer_dials_total{result=\"failed\"} %" PRIu64
	    "\ntunsplit_dialer_dials_total{result=\"cancelled\"} %" PRIu64
	    "\ntunsplit_dialer_dials_total{result=\"declined\"} %" PRIu64
	    "\n", st->dialer.ready, st->dialer.resumed, st->dialer.failed,
	    st->dialer.cancelled, st->dialer.declined);
}

/* Unix times, 0: never (so `time() - x > 60` also alerts on a client
 * that never got through). */
static void
prom_contact(FILE *fp, const struct status *st)
{
	prom_head(fp, "server_last_contact_timestamp_seconds", "gauge",
	    "Unix time of the last contact with the server (an outer "
	    "handshake completed or a reply), 0: none yet.");
	fprintf(fp, "tunsplit_server_last_contact_timestamp_seconds %.3f\n",
	    st->has_contact ? (double)st->contact_unix_ms / 1000.0 : 0.0);
	prom_head(fp, "server_last_failure_timestamp_seconds", "gauge",
	    "Unix time of the last failure to reach the server (connect, "
	    "handshake), 0: none.");
	fprintf(fp, "tunsplit_server_last_failure_timestamp_seconds %.3f\n",
	    st->has_contact_fail ?
	    (double)st->contact_fail_unix_ms / 1000.0 : 0.0);
}

static void
prom_resolver(FILE *fp, const struct resolve_stats *r)
{
	prom_one(fp, "resolver_lookups_total", "counter",
	    "Domain-name lookups asked of the resolver.", r->lookups);
	prom_one(fp, "resolver_cache_hits_total", "counter",
	    "Lookups answered from the cache (positive or negative).",
	    r->cache_hits);
	prom_head(fp, "resolver_results_total", "counter",
	    "Lookup outcomes: ok, notfound, failed, timeout, busy (queue "
	    "full), badname.");
	fprintf(fp, "tunsplit_resolver_results_total{result=\"ok\"} %" PRIu64
	    "\ntunsplit_resolver_results_total{result=\"notfound\"} %" PRIu64
	    "\ntunsplit_resolver_results_total{result=\"failed\"} %" PRIu64
	    "\ntunsplit_resolver_results_total{result=\"timeout\"} %" PRIu64
	    "\ntunsplit_resolver_results_total{result=\"busy\"} %" PRIu64
	    "\ntunsplit_resolver_results_total{result=\"badname\"} %" PRIu64
	    "\n", r->ok, r->notfound, r->failed, r->timeouts, r->busy,
	    r->badname);
	prom_one(fp, "resolver_cancelled_total", "counter",
	    "Lookups whose session ended first.", r->cancelled);
	prom_head(fp, "resolver_queue", "gauge",
	    "Lookups waiting for a thread and running now.");
	fprintf(fp, "tunsplit_resolver_queue{state=\"waiting\"} %u\n"
	    "tunsplit_resolver_queue{state=\"running\"} %u\n", r->waiting,
	    r->running);
	prom_one(fp, "resolver_cached_names", "gauge",
	    "Names in the resolver's cache.", r->cached);
}

static void
prom_limits(FILE *fp, const struct status *st)
{
	size_t	 i;

	prom_head(fp, "limit_refused_total", "counter",
	    "New work refused by a limit: conns (max_conns), source "
	    "(max_conns_per_source), user_conns, udp (max_udp), user_udp, "
	    "memory (max_buffer_memory), cover_source "
	    "(max_cover_per_source), cover_memory (cover_buffer_memory), "
	    "preauth_source (max_preauth_per_source), preauth "
	    "(max_preauth: the oldest closed).");
	for (i = 0; i < LIMIT_NKINDS; i++)
		fprintf(fp, "tunsplit_limit_refused_total{limit=\"%s\"} %"
		    PRIu64 "\n", limit_kind_name(i), st->limit_refused[i]);
	prom_one(fp, "buffer_memory_bytes", "gauge",
	    "Relay buffer memory in use.", st->mem_used);
	prom_one(fp, "buffer_memory_peak_bytes", "gauge",
	    "Most relay buffer memory in use at once.", st->mem_peak);
	prom_one(fp, "buffer_memory_limit_bytes", "gauge",
	    "max_buffer_memory (0: no limit).", st->mem_max);
	prom_one(fp, "buffer_memory_denied_total", "counter",
	    "Buffer allocations refused by max_buffer_memory (that side "
	    "paused reading).", st->mem_denied);
	if (status_has_workers(st) && strcmp(st->role, "server") == 0) {
		prom_head(fp, "worker_sessions_total", "counter",
		    "Sessions accepted by each worker loop (server.workers).");
		for (i = 0; i < st->workers && i < STATUS_WORKERS_MAX; i++)
			fprintf(fp, "tunsplit_worker_sessions_total{worker=\"%zu\"} "
			    "%" PRIu64 "\n", i, st->worker_total[i]);
	} else if (status_has_workers(st)) {
		prom_head(fp, "worker_flows_total", "counter",
		    "Flows accepted by each worker process.");
		for (i = 0; i < st->workers && i < STATUS_WORKERS_MAX; i++)
			fprintf(fp, "tunsplit_worker_flows_total{worker=\"%zu\"} "
			    "%" PRIu64 "\n", i, st->worker_total[i]);
		prom_head(fp, "worker_flows", "gauge",
		    "Live flows of each worker process.");
		for (i = 0; i < st->workers && i < STATUS_WORKERS_MAX; i++)
			fprintf(fp, "tunsplit_worker_flows{worker=\"%zu\"} "
			    "%" PRIu64 "\n", i, st->worker_active[i]);
	}
	if (st->has_sources) {
		prom_one(fp, "limit_sources", "gauge",
		    "Source addresses (IPv4, IPv6 /64) with live connections.",
		    st->sources);
		prom_one(fp, "udp_sessions", "gauge",
		    "Live datagram sessions (UDP, ICMP).", st->udp_sessions);
		prom_one(fp, "preauth_sessions", "gauge",
		    "Sessions not authenticated yet (TLS handshake, request "
		    "header).", st->preauth);
		prom_one(fp, "cover_sessions", "gauge",
		    "Sessions relayed to the cover site.", st->cover_sessions);
		prom_one(fp, "cover_memory_bytes", "gauge",
		    "Cover relays' buffer memory in use.", st->cover_mem_used);
		prom_one(fp, "cover_memory_peak_bytes", "gauge",
		    "Most cover relay buffer memory in use at once.",
		    st->cover_mem_peak);
		prom_one(fp, "cover_memory_limit_bytes", "gauge",
		    "cover_buffer_memory (0: no limit).", st->cover_mem_max);
		prom_one(fp, "cover_memory_denied_total", "counter",
		    "Cover relay buffer allocations refused (that side paused "
		    "reading).", st->cover_mem_denied);
	}
}

void
status_write_prometheus(const struct status *st, FILE *fp)
{
	bool	srv = strcmp(st->role, "server") == 0;
	char	name[64];

	prom_head(fp, "info", "gauge", "Role and version of this daemon.");
	fprintf(fp, "tunsplit_info{role=");
	prom_label(fp, st->role);
	fprintf(fp, ",version=");
	prom_label(fp, st->version);
	fprintf(fp, "} 1\n");
	prom_head(fp, "uptime_seconds", "gauge", "Seconds since start.");
	fprintf(fp, "tunsplit_uptime_seconds %.3f\n",
	    (double)st->uptime_ms / 1000.0);
	prom_one(fp, "config_generation", "gauge",
	    "The configuration's generation: 1 at start, +1 per reload that "
	    "took.", st->generation);
	prom_one(fp, "draining", "gauge",
	    "1 while draining after SIGTERM (new connections refused).",
	    st->draining ? 1 : 0);
#define PROM_NAME(suffix) \
	(snprintf(name, sizeof(name), "%s_%s", srv ? "sessions" : "flows", \
	    suffix), name)
	prom_one(fp, PROM_NAME("active"), "gauge",
	    srv ? "Live sessions." : "Live TCP flows.", st->active);
	prom_one(fp, PROM_NAME("max"), "gauge",
	    srv ? "max_conns." : "max_flows.", st->max);
	prom_one(fp, PROM_NAME("total"), "counter",
	    srv ? "Sessions accepted." : "TCP flows accepted (one outer "
	    "connect each).", st->total);
	prom_one(fp, PROM_NAME("refused_total"), "counter",
	    srv ? "Connections closed at accept: max_conns or "
	    "max_conns_per_source reached." :
	    "Flows refused: flow limit or out of resources.", st->refused);
	if (srv)
		prom_one(fp, "sessions_unused_total", "counter",
		    "Sessions the client closed before its request: warm pool "
		    "connections retired unused, not counted as failed.",
		    st->unused);
	if (srv)
		prom_one(fp, "sessions_waited_total", "counter",
		    "Connections that waited for a turn because their source "
		    "had max_preauth_per_source unauthenticated ones.",
		    st->waited);
	prom_one(fp, PROM_NAME("failed_total"), "counter",
	    srv ? "Sessions that ended in an error." :
	    "Flows reset after a server, target or outer failure.", st->failed);
	prom_one(fp, PROM_NAME("internal_failures_total"), "counter",
	    srv ? "Sessions ended by a failure of the server itself (out of "
	    "memory), counted in sessions_failed_total too." :
	    "Flows ended by a failure of the client itself (out of memory, "
	    "lwIP), counted in flows_failed_total too.", st->internal);
#undef PROM_NAME
	prom_head(fp, "bytes_total", "counter",
	    "Payload bytes toward targets (up) and back (down).");
	fprintf(fp, "tunsplit_bytes_total{direction=\"up\"} %" PRIu64
	    "\ntunsplit_bytes_total{direction=\"down\"} %" PRIu64 "\n",
	    st->bytes_up, st->bytes_down);
	if (st->failures != NULL)
		prom_reasons(fp, "failures_total", "Failures, by reason.",
		    st->failures);
	if (st->rejects != NULL)
		prom_reasons(fp, "rejected_total",
		    "Connections that were not ours (authentication, header), "
		    "by reason.", st->rejects);
	if (st->handshake != NULL)
		prom_hist(fp, st->handshake);
	if (st->contact_kept)
		prom_contact(fp, st);
	if (srv) {
		prom_one(fp, "users", "gauge", "Configured users.", st->users);
		prom_one(fp, "reuse_offered_total", "counter",
		    "Connections offered for a next flow.", st->reuse_offered);
		prom_one(fp, "reused_total", "counter",
		    "Flows carried by reused connections.", st->reused);
		prom_one(fp, "reuse_errors_total", "counter",
		    "Protocol errors on reused connections.",
		    st->reuse_errors);
		prom_one(fp, "cover_relayed_total", "counter",
		    "Rejected connections relayed to the cover site.",
		    st->cover_relayed);
		prom_one(fp, "cover_unreachable_total", "counter",
		    "Rejected connections whose cover site could not be "
		    "reached.", st->cover_failed);
	}
	if (st->has_tun)
		prom_tun(fp, &st->tun);
	if (st->has_pool)
		prom_pool(fp, st);
	if (st->has_dialer)
		prom_dialer(fp, st);
	if (st->has_udp)
		prom_udp(fp, &st->udp);
	if (st->has_fakeip)
		prom_fakeip(fp, &st->fakeip);
	if (st->has_dns)
		prom_dns(fp, st);
	if (st->has_limits)
		prom_limits(fp, st);
	if (st->has_resolver)
		prom_resolver(fp, &st->resolver);
	if (st->noutbounds > 0)
		prom_outbounds(fp, st);
	if (st->nrules > 0)
		prom_rules(fp, st);
}
