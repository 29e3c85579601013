/*
 * stats (reason counters, histogram), status renderings (text, JSON,
 * Prometheus) and the control socket's command handling, over a real unix
 * socket served by a loop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_int.h"
#include "conf/conf.h"
#include "daemon/control.h"
#include "client/outbound.h"
#include "client/tcp/flow_tcp.h"
#include "core/loop.h"
#include "core/stats.h"
#include "daemon/status.h"

/* ---- stats ---- */

static void
test_reasons(void **state)
{
	struct stats_reasons	 r;
	char			 names[STATS_REASONS_MAX + 2][16], copy[16];
	int			 i;

	(void)state;
	memset(&r, 0, sizeof(r));
	stats_reason_add(&r, "server reset");
	/* Same text at another address counts under the same reason. */
	snprintf(copy, sizeof(copy), "server reset");
	stats_reason_add(&r, copy);
	stats_reason_add(&r, "connect timeout");
	stats_reason_add(&r, NULL);
	assert_int_equal(stats_reason_get(&r, "server reset"), 2);
	assert_int_equal(stats_reason_get(&r, "connect timeout"), 1);
	assert_int_equal(stats_reason_get(&r, "nope"), 0);
	assert_int_equal(r.nv, 2);
	assert_int_equal(r.other, 1);
	assert_int_equal(stats_reason_total(&r), 4);
	/* Past the table's size, new reasons become "other". */
	for (i = 0; i < STATS_REASONS_MAX + 2; i++) {
		snprintf(names[i], sizeof(names[i]), "r%d", i);
		stats_reason_add(&r, names[i]);
	}
	assert_int_equal(r.nv, STATS_REASONS_MAX);
	assert_int_equal(r.other, 1 + 4);
	assert_int_equal(stats_reason_total(&r), 4 + STATS_REASONS_MAX + 2);
}

static void
test_hist(void **state)
{
	struct stats_hist	h;

	(void)state;
	memset(&h, 0, sizeof(h));
	stats_hist_add(&h, 0);
	stats_hist_add(&h, 1000);	/* le 1 ms: inclusive */
	stats_hist_add(&h, 1001);
	stats_hist_add(&h, 10000000);
	stats_hist_add(&h, 10000001);	/* +Inf */
	stats_hist_add(&h, UINT64_MAX / 2);
	assert_int_equal(h.bucket[0], 2);
	assert_int_equal(h.bucket[1], 1);
	assert_int_equal(h.bucket[STATS_HIST_NBOUNDS - 1], 1);
	assert_int_equal(h.bucket[STATS_HIST_NBOUNDS], 2);
	assert_int_equal(h.count, 6);
	assert_int_equal(stats_hist_bound(0), 1000);
	assert_true(stats_hist_bound(STATS_HIST_NBOUNDS) == UINT64_MAX);
	assert_true(stats_now_us() > 0);
}

/* ---- renderings ---- */

static struct stats_reasons	 t_fail;
static struct stats_hist	 t_hs;
static struct status_flow	 t_flows[2];

static void
sample(struct status *st, bool flows)
{
	memset(st, 0, sizeof(*st));
	memset(&t_fail, 0, sizeof(t_fail));
	memset(&t_hs, 0, sizeof(t_hs));
	st->role = "client";
	st->version = "9.9.9";
	st->pid = 42;
	st->uptime_ms = 61500;
	st->generation = 3;
	st->active = 2;
	st->total = 7;
	st->refused = 1;
	st->failed = 3;
	st->internal = 2;
	st->max = 10;
	st->bytes_up = 123456789;
	st->bytes_down = 42;
	stats_reason_add(&t_fail, "server \"quoted\"\nreset");
	stats_reason_add(&t_fail, "connect timeout");
	stats_reason_add(&t_fail, "connect timeout");
	st->failures = &t_fail;
	stats_hist_add(&t_hs, 500);
	stats_hist_add(&t_hs, 3000);
	stats_hist_add(&t_hs, 20000000);
	st->handshake = &t_hs;
	snprintf(st->server, sizeof(st->server), "192.0.2.1:443");
	st->has_tun = true;
	st->tun.rx_packets = 5;
	st->tun.tw_reused = 4;
	st->tun.offload = 1;
	st->tun.rx_gso = 6;
	st->tun.tx_gso = 7;
	st->tun.rx_vnet_bad = 8;
	if (!flows)
		return;
	memset(t_flows, 0, sizeof(t_flows));
	t_flows[0].id = 1;
	snprintf(t_flows[0].dst, sizeof(t_flows[0].dst), "198.51.100.7:80");
	t_flows[0].state = "relay";
	t_flows[0].up = 10;
	t_flows[0].has_tcpi = true;
	t_flows[0].rtt_us = 1500;
	t_flows[0].retrans = 3;
	t_flows[1].id = 2;
	/* Nothing we print may break the JSON, whatever a field holds. */
	snprintf(t_flows[1].dst, sizeof(t_flows[1].dst), "a\"b\\c\x01");
	t_flows[1].state = "tls";
	st->flows = t_flows;
	st->nflows = 2;
}

static char *
render(void (*fn)(const struct status *, FILE *), const struct status *st)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*fp;

	assert_non_null(fp = open_memstream(&buf, &len));
	fn(st, fp);
	assert_int_equal(fclose(fp), 0);
	return buf;
}

/* A NULL-terminated list of strings, for expect(). */
#define STRS(...)	((const char *const []){ __VA_ARGS__, NULL })

/*
 * Renders st with fn and asserts that every string of want appears in the
 * output and none of absent does (either may be NULL).  A failure names
 * the rendering and each string that is wrong, shows the output and is
 * reported at the caller's line.
 */
#define expect(fn, st, want, absent) \
	expect_at((fn), #fn, (st), (want), (absent), __FILE__, __LINE__)

static void
expect_at(void (*fn)(const struct status *, FILE *), const char *name,
    const struct status *st, const char *const *want,
    const char *const *absent, const char *file, int line)
{
	char	*s = render(fn, st);
	bool	 ok = true;

	for (; want != NULL && *want != NULL; want++)
		if (strstr(s, *want) == NULL) {
			print_error("%s: missing \"%s\"\n", name, *want);
			ok = false;
		}
	for (; absent != NULL && *absent != NULL; absent++)
		if (strstr(s, *absent) != NULL) {
			print_error("%s: unexpected \"%s\"\n", name, *absent);
			ok = false;
		}
	if (!ok)
		print_error("%s output:\n%s\n", name, s);
	free(s);
	if (!ok)
		_fail(file, line);
}

/* The sample as the server has it: no tun. */
static void
sample_server(struct status *st)
{
	sample(st, false);
	st->role = "server";
	st->has_tun = false;
}

static void
test_text(void **state)
{
	struct status	 st;

	(void)state;
	sample(&st, true);
	expect(status_write_text, &st, STRS(
	    "client: tunsplit 9.9.9, pid 42, up 1m01s\n",
	    "server: 192.0.2.1:443\n", "configuration: generation 3\n",
	    "flows: 2 active (max 10), 7 total, 1 refused, 3 failed "
	    "(2 internal)\n",
	    "bytes: up 117.7 MiB (123456789), down 42 B (42)\n",
	    "connect timeout 2", "handshakes: 3", "198.51.100.7:80", "1.5ms",
	    ", TIME_WAIT reused 4\n", "tun offloads: on; super-packets in 6, "
	    "out 7; bad virtio headers 8\n"), NULL);
	st.draining = true;
	st.flows = NULL;
	expect(status_write_text, &st, STRS("DRAINING"), STRS("DESTINATION",
	    "unused"));
	/* The server: warm pool connections closed unused are neither
	 * failed nor a failure reason. */
	sample_server(&st);
	st.unused = 37;
	st.waited = 4;
	expect(status_write_text, &st, STRS("sessions: 2 active (max 10), "
	    "7 total, 1 refused, 37 unused, 4 waited, 3 failed (2 internal)\n"),
	    NULL);
}

static void
test_json(void **state)
{
	struct status	 st;
	char		*s;

	(void)state;
	sample(&st, true);
	s = render(status_write_json, &st);
	assert_true(strncmp(s, "{\"role\":\"client\",\"version\":\"9.9.9\","
	    "\"pid\":42,\"uptime_ms\":61500,\"draining\":false,"
	    "\"generation\":3,", 94) == 0);
	assert_non_null(strstr(s, "\"flows\":{\"active\":2,\"total\":7,"
	    "\"refused\":1,\"failed\":3,\"internal\":2,\"max\":10}"));
	assert_non_null(strstr(s, "\"bytes\":{\"up\":123456789,\"down\":42}"));
	assert_non_null(strstr(s, "\"server \\\"quoted\\\"\\u000areset\":1"));
	assert_non_null(strstr(s, "\"connect timeout\":2"));
	assert_non_null(strstr(s, "\"handshake\":{\"count\":3,"));
	assert_non_null(strstr(s, "[null,1]]"));
	assert_non_null(strstr(s, "\"dst\":\"a\\\"b\\\\c\\u0001\""));
	assert_non_null(strstr(s, "\"rtt_us\":1500,\"rttvar_us\":0,"
	    "\"retrans\":3"));
	assert_non_null(strstr(s, "\"listeners\":0,\"tw_reused\":4,"
	    "\"offload\":true,\"rx_gso\":6,\"tx_gso\":7,\"rx_vnet_bad\":8}"));
	assert_string_equal(s + strlen(s) - 3, "]}\n");
	free(s);
	/* Server: sessions, users, rejections; no tun, no udp. */
	sample_server(&st);
	st.server[0] = '\0';
	st.users = 3;
	st.rejects = &t_fail;
	st.unused = 37;
	st.waited = 5;
	expect(status_write_json, &st,
	    STRS("\"users\":3,\"sessions\":{\"active\":2", "\"rejected\":{",
	    "\"refused\":1,\"unused\":37,\"waited\":5,\"failed\":3,"),
	    STRS("\"udp\"", "\"tun\"", "flow_list"));
}

static void
test_prometheus(void **state)
{
	struct status	 st;

	(void)state;
	sample(&st, true);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_info{role=\"client\",version=\"9.9.9\"} 1\n",
	    "tunsplit_config_generation 3\n",
	    "# TYPE tunsplit_flows_total counter\ntunsplit_flows_total 7\n",
	    "tunsplit_flows_active 2\n",
	    "# TYPE tunsplit_flows_internal_failures_total counter\n"
	    "tunsplit_flows_internal_failures_total 2\n",
	    "tunsplit_bytes_total{direction=\"up\"} 123456789\n",
	    "tunsplit_failures_total{reason=\"server "
	    "\\\"quoted\\\"\\nreset\"} 1\n",
	    /* Buckets are cumulative and end with +Inf == count. */
	    "tunsplit_handshake_seconds_bucket{le=\"0.001\"} 1\n",
	    "tunsplit_handshake_seconds_bucket{le=\"0.005\"} 2\n",
	    "tunsplit_handshake_seconds_bucket{le=\"10\"} 2\n",
	    "tunsplit_handshake_seconds_bucket{le=\"+Inf\"} 3\n",
	    "tunsplit_handshake_seconds_count 3\n",
	    "tunsplit_tun_packets_total{direction=\"rx\"} 5\n",
	    "# TYPE tunsplit_tun_timewait_reused_total counter\n"
	    "tunsplit_tun_timewait_reused_total 4\n",
	    "tunsplit_tun_offload 1\n",
	    "tunsplit_tun_gso_packets_total{direction=\"rx\"} 6\n"
	    "tunsplit_tun_gso_packets_total{direction=\"tx\"} 7\n",
	    "tunsplit_tun_vnet_header_invalid_total 8\n"),
	    /* Per-flow data never goes to metrics (unbounded label sets). */
	    STRS("udp", "198.51.100.7", "unused"));
	st.role = "server";
	st.unused = 37;
	st.reuse_offered = 12;
	st.reused = 11;
	st.reuse_errors = 1;
	expect(status_write_prometheus, &st,
	    STRS("tunsplit_sessions_total 7\n", "tunsplit_users 0\n",
	    "tunsplit_sessions_internal_failures_total 2\n",
	    "# TYPE tunsplit_sessions_unused_total counter\n"
	    "tunsplit_sessions_unused_total 37\n",
	    "tunsplit_sessions_failed_total 3\n",
	    "tunsplit_reuse_offered_total 12\n", "tunsplit_reused_total 11\n",
	    "tunsplit_reuse_errors_total 1\n"), NULL);
	expect(status_write_text, &st, STRS("reuse: 12 offered, 11 flows on "
	    "reused connections, 1 errors\n"), NULL);
	expect(status_write_json, &st, STRS("\"reuse\":{\"offered\":12,"
	    "\"reused\":11,\"errors\":1}"), NULL);
}

/* The limits: refusals by kind, the buffer budget, server extras. */
static void
test_limits(void **state)
{
	struct status	 st;

	(void)state;
	sample_server(&st);
	st.has_limits = true;
	st.limit_refused[LIMIT_SOURCE] = 200;
	st.limit_refused[LIMIT_USER_CONNS] = 5;
	st.limit_refused[LIMIT_MEMORY] = 7;
	st.mem_used = 3 << 20;
	st.mem_peak = 4 << 20;
	st.mem_max = 256 << 20;
	st.mem_denied = 11;
	st.has_sources = true;
	st.sources = 12;
	st.udp_sessions = 3;
	st.udp_max = 4096;
	st.limit_refused[LIMIT_COVER_SOURCE] = 40;
	st.limit_refused[LIMIT_COVER_MEMORY] = 9;
	st.limit_refused[LIMIT_PREAUTH_SOURCE] = 300;
	st.limit_refused[LIMIT_PREAUTH] = 2;
	st.preauth = 17;
	st.preauth_max = 256;
	st.cover_sessions = 5;
	st.cover_mem_used = 1 << 20;
	st.cover_mem_peak = 2 << 20;
	st.cover_mem_max = 32 << 20;
	st.cover_mem_denied = 4;
	expect(status_write_text, &st, STRS(
	    "buffer memory: 3.0 MiB in use, peak 4.0 MiB, limit 256.0 MiB; "
	    "11 allocations refused (reads paused)\n",
	    "sources: 12 with connections; datagram sessions 3 (max 4096)\n",
	    "strangers: 17 unauthenticated (max 256), 5 at the cover site; "
	    "cover memory 1.0 MiB in use, peak 2.0 MiB, limit 32.0 MiB; 4 "
	    "allocations refused\n",
	    "limits refused: conns 0 source 200 user_conns 5 udp 0 user_udp 0 "
	    "memory 7 cover_source 40 cover_memory 9 preauth_source 300 "
	    "preauth 2\n"), NULL);
	expect(status_write_json, &st, STRS("\"limits\":{\"refused\":{"
	    "\"conns\":0,\"source\":200,\"user_conns\":5,\"udp\":0,"
	    "\"user_udp\":0,\"memory\":7,\"cover_source\":40,"
	    "\"cover_memory\":9,\"preauth_source\":300,\"preauth\":2},"
	    "\"buffer_memory\":{\"used\":3145728,"
	    "\"peak\":4194304,\"max\":268435456,\"denied\":11},"
	    "\"sources\":12,\"udp_sessions\":3,\"udp_max\":4096,"
	    "\"preauth\":17,\"preauth_max\":256,\"cover_sessions\":5,"
	    "\"cover_memory\":{\"used\":1048576,\"peak\":2097152,"
	    "\"max\":33554432,\"denied\":4}}"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_limit_refused_total{limit=\"source\"} 200\n",
	    "tunsplit_limit_refused_total{limit=\"memory\"} 7\n",
	    "tunsplit_limit_refused_total{limit=\"cover_source\"} 40\n",
	    "tunsplit_limit_refused_total{limit=\"cover_memory\"} 9\n",
	    "tunsplit_limit_refused_total{limit=\"preauth_source\"} 300\n",
	    "tunsplit_limit_refused_total{limit=\"preauth\"} 2\n",
	    "tunsplit_buffer_memory_bytes 3145728\n",
	    "tunsplit_buffer_memory_limit_bytes 268435456\n",
	    "tunsplit_buffer_memory_denied_total 11\n",
	    "tunsplit_limit_sources 12\n", "tunsplit_udp_sessions 3\n",
	    "tunsplit_preauth_sessions 17\n", "tunsplit_cover_sessions 5\n",
	    "tunsplit_cover_memory_bytes 1048576\n",
	    "tunsplit_cover_memory_limit_bytes 33554432\n",
	    "tunsplit_cover_memory_denied_total 4\n"), NULL);
	/* The client: memory only, no limit of "none" when unlimited. */
	st.role = "client";
	st.has_sources = false;
	st.mem_max = 0;
	expect(status_write_text, &st, STRS("limit none;",
	    "limits refused: memory 7\n"), STRS("sources:"));
}

/* The client's rules and each flow's, in all three renderings. */
static void
test_rules(void **state)
{
	static const struct status_rule rules[] = {
		{ 0, "port 9999", "deny", 3 },
		{ 1, "dst 10.0.0.0/8 +1, network tcp", "tunnel", 12 },
		{ -1, "final", "tunnel", 5 },
	};
	struct status	 st;

	(void)state;
	sample(&st, true);
	snprintf(t_flows[0].rule, sizeof(t_flows[0].rule),
	    "rule 1 (dst 10.0.0.0/8 +1, network tcp)");
	snprintf(t_flows[1].rule, sizeof(t_flows[1].rule), "final");
	st.rules = rules;
	st.nrules = 3;
	expect(status_write_text, &st, STRS(
	    "rules: 2, first match wins (hits since the last reload)\n"
	    "  rule 0     -> deny                  3  port 9999\n"
	    "  rule 1     -> tunnel               12  dst 10.0.0.0/8 +1, "
	    "network tcp\n"
	    "  final      -> tunnel                5\n",
	    "rule 1 (dst 10.0.0.0/8 +1, network tcp)"), NULL);
	expect(status_write_json, &st, STRS(",\"rules\":[{\"rule\":0,"
	    "\"outbound\":\"deny\",\"hits\":3,\"match\":\"port 9999\"},"
	    "{\"rule\":1,\"outbound\":\"tunnel\",\"hits\":12,\"match\":"
	    "\"dst 10.0.0.0/8 +1, network tcp\"},{\"rule\":-1,\"outbound\":"
	    "\"tunnel\",\"hits\":5}]",
	    "\"rule\":\"rule 1 (dst 10.0.0.0/8 +1, network tcp)\"",
	    "\"rule\":\"final\""), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "# TYPE tunsplit_rule_hits_total counter\n",
	    "tunsplit_rule_hits_total{rule=\"0\",outbound=\"deny\"} 3\n",
	    "tunsplit_rule_hits_total{rule=\"1\",outbound=\"tunnel\"} 12\n",
	    "tunsplit_rule_hits_total{rule=\"-1\",outbound=\"tunnel\"} 5\n"),
	    NULL);
	/* No rules: no such lines. */
	st.nrules = 0;
	t_flows[0].rule[0] = t_flows[1].rule[0] = '\0';
	expect(status_write_text, &st, NULL, STRS("rules:", "final"));
	expect(status_write_json, &st, NULL, STRS("\"rule"));
	expect(status_write_prometheus, &st, NULL, STRS("rule_hits"));
}

/* The server's resolver counters, in all three renderings. */
static void
test_resolver(void **state)
{
	struct status	 st;

	(void)state;
	sample_server(&st);
	st.has_resolver = true;
	st.resolver.lookups = 40;
	st.resolver.cache_hits = 30;
	st.resolver.ok = 31;
	st.resolver.notfound = 4;
	st.resolver.failed = 1;
	st.resolver.timeouts = 2;
	st.resolver.busy = 1;
	st.resolver.badname = 1;
	st.resolver.cancelled = 3;
	st.resolver.late = 2;
	st.resolver.waiting = 1;
	st.resolver.running = 2;
	st.resolver.threads = 2;
	st.resolver.cached = 9;
	expect(status_write_text, &st, STRS("resolver: 40 lookups, 30 from the "
	    "cache; 31 ok, 4 not found, 1 failed, 2 timed out, 1 busy, 1 bad "
	    "names; 3 cancelled; 1 waiting, 2 running, 2 threads, 9 names "
	    "cached\n"), NULL);
	expect(status_write_json, &st, STRS(",\"resolver\":{\"lookups\":40,"
	    "\"cache_hits\":30,\"ok\":31,\"notfound\":4,\"failed\":1,"
	    "\"timeouts\":2,\"busy\":1,\"badname\":1,\"cancelled\":3,"
	    "\"late\":2,\"waiting\":1,\"running\":2,\"threads\":2,"
	    "\"cached\":9}"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_resolver_lookups_total 40\n",
	    "tunsplit_resolver_results_total{result=\"busy\"} 1\n",
	    "tunsplit_resolver_results_total{result=\"timeout\"} 2\n",
	    "tunsplit_resolver_queue{state=\"waiting\"} 1\n",
	    "tunsplit_resolver_cached_names 9\n"), NULL);
	/* Without a resolver (the client), no such lines. */
	st.has_resolver = false;
	expect(status_write_text, &st, NULL, STRS("resolver"));
}

static void
test_fakeip(void **state)
{
	struct status	 st;

	(void)state;
	sample(&st, false);
	st.has_fakeip = true;
	st.fakeip.entries = 12;
	st.fakeip.capacity = 65534;
	st.fakeip.answers = 40;
	st.fakeip.issued = 15;
	st.fakeip.evictions = 3;
	st.fakeip.hits = 30;
	st.fakeip.misses = 2;
	st.fakeip.saves = 5;
	st.fakeip.save_errors = 1;
	expect(status_write_text, &st, STRS("fake-ip: 12 names (of 65534), 40 "
	    "answers, 3 evicted; flows to fake addresses: 30 named, 2 refused "
	    "(no name); 5 saves, 1 failed\n"), NULL);
	expect(status_write_json, &st, STRS(",\"fakeip\":{\"names\":12,"
	    "\"capacity\":65534,\"answers\":40,\"issued\":15,"
	    "\"evictions\":3,\"hits\":30,\"misses\":2,\"saves\":5,"
	    "\"save_errors\":1}"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_fakeip_names 12\n",
	    "tunsplit_fakeip_answers_total 40\n",
	    "tunsplit_fakeip_evictions_total 3\n",
	    "tunsplit_fakeip_hits_total 30\n",
	    "tunsplit_fakeip_misses_total 2\n",
	    "tunsplit_fakeip_save_errors_total 1\n"), NULL);
	st.has_fakeip = false;
	expect(status_write_text, &st, NULL, STRS("fake-ip"));
	expect(status_write_prometheus, &st, NULL, STRS("fakeip"));
}

/* The client's outbounds: a line each, a JSON list, series labelled
 * outbound="NAME"; the pool's series then carry the label too. */
static void
test_outbounds(void **state)
{
	struct status_outbound	ob[2];
	struct status		st;

	(void)state;
	sample(&st, false);
	memset(ob, 0, sizeof(ob));
	snprintf(ob[0].name, sizeof(ob[0].name), "tunnel");
	ob[0].protocol = "tunsplit";
	snprintf(ob[0].server, sizeof(ob[0].server), "192.0.2.1:443");
	ob[0].final = true;
	ob[0].opened = 7;
	ob[0].failed = 1;
	ob[0].active = 2;
	ob[0].bytes_up = 100;
	ob[0].bytes_down = 2048;
	ob[0].has_pool = true;
	ob[0].pool_size = 2;
	ob[0].pool.ready = 1;
	ob[0].pool.taken = 3;
	snprintf(ob[1].name, sizeof(ob[1].name), "ads");
	ob[1].protocol = "block";
	ob[1].opened = ob[1].failed = 5;
	st.outbounds = ob;
	st.noutbounds = 2;
	st.has_pool = true;
	expect(status_write_text, &st, STRS(
	    "outbound tunnel (tunsplit 192.0.2.1:443), final: 2 active, 7 "
	    "opened, 1 failed, up ",
	    "outbound ads (block): 0 active, 5 opened, 5 failed"), NULL);
	expect(status_write_json, &st, STRS(
	    "\"outbounds\":[{\"name\":\"tunnel\",\"protocol\":\"tunsplit\","
	    "\"server\":\"192.0.2.1:443\",\"final\":true,\"active\":2,"
	    "\"opened\":7,\"failed\":1,\"bytes_up\":100,\"bytes_down\":2048",
	    "{\"name\":\"ads\",\"protocol\":\"block\",\"final\":false,"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_outbound_flows_total{outbound=\"tunnel\","
	    "event=\"opened\"} 7\n",
	    "tunsplit_outbound_flows_total{outbound=\"ads\","
	    "event=\"failed\"} 5\n",
	    "tunsplit_outbound_active{outbound=\"tunnel\"} 2\n",
	    "tunsplit_outbound_bytes_total{outbound=\"tunnel\","
	    "direction=\"down\"} 2048\n",
	    "tunsplit_outbound_handshake_seconds_count{outbound=\"ads\"} 0\n",
	    "tunsplit_pool_connections{outbound=\"tunnel\",state=\"ready\"} "
	    "1\n",
	    "tunsplit_pool_events_total{outbound=\"tunnel\",event=\"taken\"} "
	    "3\n"), STRS("tunsplit_pool_connections{outbound=\"ads\""));
}

static void
test_pool(void **state)
{
	struct status	 st;

	(void)state;
	sample(&st, false);
	st.has_pool = true;
	st.pool_size = 2;
	st.pooled = 4;
	st.pool.ready = 1;
	st.pool.connecting = 1;
	st.pool.target = 2;
	st.pool.opened = 6;
	st.pool.taken = 4;
	st.pool.reused = 3;
	st.pool.expired = 1;
	expect(status_write_text, &st, STRS("pool: 1 ready, 1 connecting "
	    "(target 2, size 2); 6 opened, 4 taken (3 reused), 1 expired, "
	    "0 failed\n"), NULL);
	expect(status_write_json, &st, STRS("\"pool\":{\"size\":2,"
	    "\"target\":2,\"ready\":1,\"connecting\":1,\"opened\":6,\"taken\":4,"
	    "\"reused\":3,\"expired\":1,\"failed\":0,\"pooled_flows\":4}"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_pool_connections{state=\"ready\"} 1\n",
	    "tunsplit_pool_events_total{event=\"taken\"} 4\n",
	    "tunsplit_pool_events_total{event=\"reused\"} 3\n",
	    "tunsplit_flows_pooled_total 4\n"), NULL);
	st.has_udp = true;
	st.udp.active = 3;
	st.udp.created = 9;
	st.udp.dgrams_up = 100;
	st.udp.drop_queue = 2;
	st.udp.tun_errors = 1;
	st.udp.drop_block = 5;
	st.udp.drop_proto = 7;
	st.udp.failed = 4;
	st.udp.internal = 1;
	expect(status_write_text, &st,
	    STRS("udp: 3 associations active, 9 total, 4 failed (1 internal)"),
	    NULL);
	expect(status_write_json, &st,
	    STRS("\"udp\":{\"active\":3,\"total\":9,\"failed\":4,"
	    "\"internal\":1,", "\"dropped\":15}"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_udp_associations_active 3\n",
	    "tunsplit_udp_associations_internal_failures_total 1\n",
	    "tunsplit_udp_dropped_total{reason=\"block\"} 5\n",
	    "tunsplit_udp_dropped_total{reason=\"no_icmp\"} 7\n",
	    "tunsplit_udp_datagrams_total{direction=\"up\"} 100\n"), NULL);
	st.has_udp = false;
	/* No pool: nothing about it. */
	st.has_pool = false;
	expect(status_write_json, &st, NULL, STRS("pool"));
}

/* The last contact with the server, like `wg show`'s latest handshake. */
static void
test_contact(void **state)
{
	struct status	 st;

	(void)state;
	sample(&st, false);
	/* Not kept (server role, protocol direct): the plain line. */
	expect(status_write_text, &st, STRS("server: 192.0.2.1:443\n"),
	    STRS("contact"));
	expect(status_write_json, &st, NULL, STRS("\"contact\""));
	expect(status_write_prometheus, &st, NULL, STRS("last_contact"));
	/* Kept, never reached: said so; Prometheus 0. */
	st.contact_kept = true;
	expect(status_write_text, &st,
	    STRS("server: 192.0.2.1:443, no contact yet\n"),
	    STRS("last failure"));
	expect(status_write_json, &st, STRS("\"contact\":{\"last_ms\":null,"
	    "\"last_unix_ms\":null,\"failure_ms\":null,\"failure_unix_ms\":"
	    "null,\"failure_reason\":null}"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "# TYPE tunsplit_server_last_contact_timestamp_seconds gauge\n",
	    "tunsplit_server_last_contact_timestamp_seconds 0.000\n",
	    "tunsplit_server_last_failure_timestamp_seconds 0.000\n"), NULL);
	/* Failed only. */
	st.has_contact_fail = true;
	st.contact_fail_age_ms = 65000;
	st.contact_fail_unix_ms = 1700000000123ULL;
	st.contact_fail_reason = "server unreachable";
	expect(status_write_text, &st, STRS("server: 192.0.2.1:443, no contact "
	    "yet (last failure 1m05s ago: server unreachable)\n"), NULL);
	/* Both. */
	st.has_contact = true;
	st.contact_age_ms = 3200;
	st.contact_unix_ms = 1700000061923ULL;
	expect(status_write_text, &st, STRS("server: 192.0.2.1:443, last "
	    "contact 3.2s ago (last failure 1m05s ago: server unreachable)\n"),
	    NULL);
	expect(status_write_json, &st, STRS("\"server\":\"192.0.2.1:443\","
	    "\"contact\":{\"last_ms\":3200,\"last_unix_ms\":1700000061923,"
	    "\"failure_ms\":65000,\"failure_unix_ms\":1700000000123,"
	    "\"failure_reason\":\"server unreachable\"}"), NULL);
	expect(status_write_prometheus, &st, STRS(
	    "tunsplit_server_last_contact_timestamp_seconds 1700000061.923\n",
	    "tunsplit_server_last_failure_timestamp_seconds 1700000000.123\n"),
	    NULL);
	/* Contact only. */
	st.has_contact_fail = false;
	expect(status_write_text, &st, STRS("server: 192.0.2.1:443, last "
	    "contact 3.2s ago\n"), STRS("last failure"));
}

/* ---- control socket ---- */

struct ctl_fixture {
	char		 dir[64];
	char		 sock[100];
	struct conf	*conf;
	struct loop	*loop;
	struct flow_env	 env;
	struct outbounds *obs;
	struct client_status cs;
	struct control	*ctl;
};

/* The control socket in front of the client's real status fill. */
static size_t
ctl_live(void *arg)
{
	struct ctl_fixture *f = arg;

	return f->env.nflows;
}

static void
ctl_fill(void *arg, struct status_fill *sf)
{
	struct ctl_fixture *f = arg;

	f->cs.conf = f->conf;
	f->cs.env = &f->env;
	client_status_fill(&f->cs, sf);
}

static struct control *
ctl_new(struct ctl_fixture *f)
{
	struct control_role role = { .live = ctl_live, .fill = ctl_fill,
	    .arg = f };

	return control_new(f->loop, f->conf, &role);
}

/* extra: more top-level YAML (metrics:), or "". */
static int
setup_ctl_with(void **state, const char *extra)
{
	struct ctl_fixture	*f;
	char			 yaml[512], err[256];
	int			 n;

	assert_non_null(f = calloc(1, sizeof(*f)));
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_status.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	/* The socket's directory is created on demand. */
	snprintf(f->sock, sizeof(f->sock), "%s/run/c.sock", f->dir);
	n = snprintf(yaml, sizeof(yaml), "%scontrol: %s\nclient:\n  server: "
	    "\"192.0.2.1:443\"\n  key: \"%s\"\n  max_flows: 5\n", extra,
	    f->sock, "UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=");
	f->conf = conf_load_buf("t", yaml, (size_t)n, err, sizeof(err));
	if (f->conf == NULL)
		fail_msg("%s", err);
	assert_non_null(f->loop = loop_new());
	f->env.loop = f->loop;
	f->env.conf = f->conf;
	assert_non_null(f->obs = outbounds_new(NULL, f->conf, NULL));
	f->env.obs = f->obs;
	f->env.stats.accepted = 3;
	f->env.stats.bytes_up = 1000;
	assert_non_null(f->ctl = ctl_new(f));
	*state = f;
	return 0;
}

static int
setup_ctl(void **state)
{
	return setup_ctl_with(state, "");
}

static uint16_t http_port;

/* The metrics endpoint on a loopback port that was free a moment ago. */
static int
setup_http(void **state)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof(sin);
	char			extra[64];
	int			fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	close(fd);
	http_port = ntohs(sin.sin_port);
	snprintf(extra, sizeof(extra), "metrics: \"127.0.0.1:%u\"\n",
	    http_port);
	return setup_ctl_with(state, extra);
}

static int
teardown_ctl(void **state)
{
	struct ctl_fixture	*f = *state;
	char			 path[128];

	control_free(f->ctl);
	/* control_free removes the socket file. */
	assert_int_equal(access(f->sock, F_OK), -1);
	loop_free(f->loop);
	client_status_free(&f->cs);	/* the snapshots' buffers */
	outbounds_free(f->obs);
	conf_free(f->conf);
	snprintf(path, sizeof(path), "%s/run", f->dir);
	rmdir(path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void
test_answer(void **state)
{
	struct ctl_fixture	*f = *state;
	char			*out = NULL;
	size_t			 len = 0;

	assert_int_equal(control_answer(f->ctl, "status", &out, &len), 0);
	assert_non_null(strstr(out, "flows: 0 active (max 5), 3 total"));
	free(out);
	assert_int_equal(control_answer(f->ctl, "  status \t json  flows",
	    &out, &len), 0);
	assert_non_null(strstr(out, "\"bytes\":{\"up\":1000,"));
	assert_non_null(strstr(out, "\"flow_list\":[]"));
	free(out);
	assert_int_equal(control_answer(f->ctl, "metrics", &out, &len), 0);
	assert_non_null(strstr(out, "tunsplit_flows_max 5\n"));
	free(out);
	/* The client's fill: the later of the flows' and the pool's
	 * contacts, as an age from the loop's now. */
	assert_int_equal(control_answer(f->ctl, "status", &out, &len), 0);
	assert_non_null(strstr(out, "server: 192.0.2.1:443, no contact yet\n"));
	free(out);
	uint64_t now = loop_now(f->loop);
	stats_contact_ok(&f->env.stats.contact, now - 5000);
	stats_contact_fail(&f->env.stats.contact, now - 1000,
	    "TLS handshake with server failed");
	stats_contact_ok(&f->env.stats.contact, now - 3000);
	assert_int_equal(control_answer(f->ctl, "status", &out, &len), 0);
	assert_non_null(strstr(out, "server: 192.0.2.1:443, last contact 3."));
	assert_non_null(strstr(out, "s ago (last failure 1."));
	assert_non_null(strstr(out, "s ago: TLS handshake with server "
	    "failed)\n"));
	free(out);
	/* Unknown commands and words, options of the wrong command, empty
	 * lines and overlong words are all errors, answered as such. */
	static const char *const bad[] = {
		"", "   ", "stat", "status jsonx", "json", "metrics json",
		"status json flows extra", "statusstatusstatusstatus",
		"status\x01", "STATUS",
	};
	size_t	i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = NULL;
		assert_int_equal(control_answer(f->ctl, bad[i], &out, &len), -1);
		assert_non_null(out);
		assert_true(strncmp(out, "error: ", 7) == 0);
		free(out);
	}
}

static int
ctl_connect(const char *path)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

/* Reads what the server sends until it closes, spinning the loop. */
static size_t
ctl_read_all(struct loop *l, int fd, char *buf, size_t cap)
{
	struct pollfd	pfd = { fd, POLLIN, 0 };
	size_t		len = 0;
	ssize_t		r;
	int		i;

	for (i = 0; i < 200; i++) {
		loop_run_once(l, 5);
		if (poll(&pfd, 1, 5) <= 0)
			continue;
		r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	return len;
}

static void
test_socket(void **state)
{
	struct ctl_fixture	*f = *state;
	char			 buf[8192];
	int			 fds[CONTROL_CLIENTS_MAX + 1], fd, i;

	/* Request split across writes; answered once the line is whole. */
	fd = ctl_connect(f->sock);
	assert_int_equal(write(fd, "sta", 3), 3);
	loop_run_once(f->loop, 5);
	assert_int_equal(write(fd, "tus json\n", 9), 9);
	assert_true(ctl_read_all(f->loop, fd, buf, sizeof(buf)) > 0);
	assert_true(strncmp(buf, "{\"role\":\"client\"", 16) == 0);
	close(fd);

	/* No newline but EOF: still a request. */
	fd = ctl_connect(f->sock);
	assert_int_equal(write(fd, "metrics", 7), 7);
	shutdown(fd, SHUT_WR);
	ctl_read_all(f->loop, fd, buf, sizeof(buf));
	assert_non_null(strstr(buf, "# TYPE tunsplit_flows_total counter"));
	close(fd);

	/* An overlong line is dropped without an answer. */
	fd = ctl_connect(f->sock);
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(write(fd, buf, 5000), 5000);
	assert_int_equal(ctl_read_all(f->loop, fd, buf, sizeof(buf)), 0);
	close(fd);

	/* A few clients at a time: the one too many is closed at once,
	 * the others are still served. */
	for (i = 0; i <= CONTROL_CLIENTS_MAX; i++) {
		fds[i] = ctl_connect(f->sock);
		loop_run_once(f->loop, 5);
	}
	assert_int_equal(ctl_read_all(f->loop, fds[CONTROL_CLIENTS_MAX], buf,
	    sizeof(buf)), 0);
	for (i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		assert_int_equal(write(fds[i], "status\n", 7), 7);
		assert_true(ctl_read_all(f->loop, fds[i], buf, sizeof(buf)) > 0);
		assert_non_null(strstr(buf, "client: tunsplit"));
	}
	for (i = 0; i <= CONTROL_CLIENTS_MAX; i++)
		close(fds[i]);
}

/* One HTTP request to the metrics endpoint; the whole answer in buf. */
static void
http_get(struct ctl_fixture *f, const char *req, char *buf, size_t cap)
{
	struct sockaddr_in	sin;
	int			fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(http_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	assert_true(ctl_read_all(f->loop, fd, buf, cap) > 0);
	close(fd);
}

/* /metrics (GET or HEAD, any query) and nothing else. */
static void
test_http(void **state)
{
	struct ctl_fixture	*f = *state;
	char			 buf[8192];
	size_t			 i;
	static const char *const missing[] = {
		"/", "/favicon.ico", "/metrics/", "/metricsx", "/Metrics",
		"//metrics", "/status", "*",
	};

	http_get(f, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", buf,
	    sizeof(buf));
	assert_true(strncmp(buf, "HTTP/1.0 200 OK\r\n", 17) == 0);
	assert_non_null(strstr(buf, "\r\n\r\n# HELP "));
	assert_non_null(strstr(buf, "tunsplit_flows_max 5\n"));
	for (i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		char	req[128];

		snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n",
		    missing[i]);
		http_get(f, req, buf, sizeof(buf));
		if (strncmp(buf, "HTTP/1.0 404 Not Found\r\n", 24) != 0)
			fail_msg("GET %s: %.40s", missing[i], buf);
		assert_null(strstr(buf, "tunsplit_"));
	}
	/* A scraper's params: come as a query string. */
	http_get(f, "GET /metrics?name[]=x HTTP/1.0\r\n\r\n", buf,
	    sizeof(buf));
	assert_true(strncmp(buf, "HTTP/1.0 200 OK\r\n", 17) == 0);
	/* HEAD: the headers of a GET, no body. */
	http_get(f, "HEAD /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_true(strncmp(buf, "HTTP/1.0 200 OK\r\n", 17) == 0);
	assert_string_equal(strstr(buf, "\r\n\r\n"), "\r\n\r\n");
	http_get(f, "POST /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	assert_true(strncmp(buf, "HTTP/1.0 405 ", 13) == 0);
	assert_non_null(strstr(buf, "\r\nAllow: GET, HEAD\r\n"));
	http_get(f, "GET /metrics\r\n\r\n", buf, sizeof(buf));
	assert_true(strncmp(buf, "HTTP/1.0 400 ", 13) == 0);
}

/* A live socket is never stolen by a second daemon; a stale one is. */
static void
test_socket_in_use(void **state)
{
	struct ctl_fixture	*f = *state;
	struct control		*second;
	struct sockaddr_un	 sun;
	int			 fd;

	assert_null(ctl_new(f));
	assert_int_equal(access(f->sock, F_OK), 0);
	control_free(f->ctl);
	/* Leave a stale socket file behind, as a killed daemon would. */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", f->sock);
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_non_null(second = ctl_new(f));
	f->ctl = second;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_hist),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_prometheus),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_outbounds),
		cmocka_unit_test(test_contact),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_resolver),
		cmocka_unit_test(test_fakeip),
		cmocka_unit_test_setup_teardown(test_answer, setup_ctl,
		    teardown_ctl),
		cmocka_unit_test_setup_teardown(test_socket, setup_ctl,
		    teardown_ctl),
		cmocka_unit_test_setup_teardown(test_socket_in_use, setup_ctl,
		    teardown_ctl),
		cmocka_unit_test_setup_teardown(test_http, setup_http,
		    teardown_ctl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
