/*
 * flow_tcp's state machine, one flow at a time, driven whole on one loop
 * without root or threads: the fake app (tcp_app.c) speaks TCP to lwIP
 * through tsnetif_input(), the flow's outbound is protocol tunsplit, and
 * the server is the test's end of the TLS stream (testend.c, with the
 * throwaway certificate) on a loopback listener, which reads and checks
 * the native request header before it answers the status byte.
 *
 *   open, data both ways   the header (MAC, destination), then an upload
 *                          SHA-256 checked at the server and a download
 *                          checked at the app
 *   half-close             the app's FIN first while the reply still
 *                          comes; the server's end first while the app
 *                          still sends; the flow ends "closed", no failure
 *   resets                 the app's RST resets the outer stream (the
 *                          server reads ECONNRESET, not an end); the
 *                          server's RST reaches the app as an RST and is
 *                          counted as a failure; a refusal status too,
 *                          under the refusal's own reason ("egress
 *                          denied", "target refused", ...)
 *   contact                an answer (data or a refusal) is the last
 *                          contact with the server that status shows; a
 *                          dead server address its last failure
 *   pool take              a warm connection (client.pool, the real pool)
 *                          carries the flow: no new dial, counted pooled
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <sodium.h>

#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

#include "client/outbound.h"
#include "client/pool.h"
#include "client/tcp/flow_tcp.h"
#include "conf/conf.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/stats.h"
#include "stack/tsnetif.h"
#include "tls/outer.h"
#include "wire/auth.h"
#include "wire/proto.h"
#include "tests/unit/client/tcp/tcp_app.h"
#include "tests/unit/testcert.h"
#include "tests/unit/testend.h"

#define K1		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define UP_LEN		(256 * 1024)	/* app -> server */
#define DOWN_LEN	(384 * 1024)	/* server -> app */
#define MTU		1500
#define MSS		1460
#define DEADLINE_MS	8000
#define STALL_ROUNDS	200	/* no ACK progress: the app retransmits */

static struct testcert	 tc;

static struct fx {
	struct conf		*conf;
	struct loop		*loop;
	struct flow_env		 env;
	int			 tun[2];	/* [0] tsnetif's, [1] the app's */
	int			 lfd;		/* the server's listener */
	uint16_t		 port;
	unsigned		 conns;		/* accepted by the server */
	struct testend		 srv;		/* the server's end */
	uint8_t			 status;	/* its answer to the header */
	size_t			 hdr_len;	/* 0 until the header came */
	struct tcp_app		 app;
	uint8_t			*up;		/* the app's upload */
	size_t			 up_hold;	/* non-zero: no more than this */
	bool			 up_fin;	/* FIN after the upload */
	bool			 app_gone;	/* the app reset: it sends no more */
	uint32_t		 last_una;
	unsigned		 stall;
	bool			 running;
} fx;

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The one outbound of the test's configuration. */
#define OB	(fx.env.obs->v[0])

/* ---- set-up ---------------------------------------------------------- */

static void
client_start(unsigned pool)
{
	struct tsnetif_ops ops;
	struct addr srv;
	char y[512], err[256];
	size_t i;

	memset(&fx, 0, sizeof(fx));
	fx.lfd = testend_listener(&fx.port);
	/* pool_idle 0: the pool warms up before the first flow. */
	snprintf(y, sizeof(y), "client:\n  server: \"127.0.0.1:%u\"\n"
	    "  key: " K1 "\n  pool: %u\n  pool_idle: 0\n", fx.port, pool);
	fx.conf = conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err));
	if (fx.conf == NULL)
		fail_msg("%s", err);
	assert_non_null(fx.loop = loop_new());
	fx.env.loop = fx.loop;
	fx.env.conf = fx.conf;
	assert_int_equal(addr_from_ip(&srv, "127.0.0.1", fx.port), 0);
	assert_non_null(fx.env.obs = outbounds_one(outbound_new(fx.conf, 0,
	    tc.cctx, &srv)));
	assert_int_equal(flow_env_init(&fx.env), 0);
	if (pool > 0)
		assert_non_null(OB->pool = pool_new(fx.loop, fx.conf,
		    conf_final(fx.conf), tc.cctx, &OB->server, &OB->gate));
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fx.tun), 0);
	memset(&ops, 0, sizeof(ops));
	ops.accept = flow_tcp_accept;
	ops.syn_allowed = flow_tcp_syn_allowed;
	ops.arg = &fx.env;
	assert_int_equal(tsnetif_init(fx.tun[0], MTU, &ops), 0);
	tcp_app_init(&fx.app, 0, MSS, MTU, fx.tun[1], DOWN_LEN);
	assert_non_null(fx.up = malloc(UP_LEN));
	for (i = 0; i < UP_LEN; i++)
		fx.up[i] = testend_pat(1, i);
	/* The server: TLS, the status byte once the header came, then
	 * DOWN_LEN bytes of pattern 2. */
	testend_init(&fx.srv, 2, DOWN_LEN, PROTO_REQ_MAX + UP_LEN);
	fx.srv.pre = &fx.status;
	fx.srv.pre_len = 1;
	fx.srv.paused = true;
	fx.running = true;
}

static int
cleanup(void **state)
{
	(void)state;
	if (!fx.running)
		return 0;
	fx.running = false;
	flow_close_all(&fx.env);
	outbounds_free(fx.env.obs);
	tsnetif_shutdown();
	testend_free(&fx.srv);
	loop_free(fx.loop);
	conf_free(fx.conf);
	close(fx.tun[0]);
	close(fx.tun[1]);
	close(fx.lfd);
	free(fx.app.data);
	free(fx.up);
	/* Nothing left inside lwIP. */
	assert_null(tcp_active_pcbs);
	assert_null(tcp_tw_pcbs);
	return 0;
}

/* ---- one round --------------------------------------------------------- */

/* The server reads the request header whole before it answers: version,
 * MAC under K1 bound to the connection, the app's destination. */
static void
srv_header(void)
{
	struct proto_req req;
	uint8_t key[PROTO_KEY_LEN], bind[PROTO_BIND_LEN];
	size_t kl;
	ssize_t n;

	if (fx.hdr_len > 0 || fx.srv.rx_len == 0)
		return;
	if ((n = proto_req_parse(fx.srv.rx, fx.srv.rx_len, &req)) == 0)
		return;
	assert_true(n > 0);
	assert_int_equal(sodium_base642bin(key, sizeof(key), K1, strlen(K1),
	    NULL, &kl, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
	/* Version 2: the MAC takes the exporter value of this very
	 * connection, which the server's end derives too. */
	assert_int_equal(fx.srv.rx[0], PROTO_VERSION);
	assert_int_equal(outer_export(fx.srv.o, PROTO_BIND_LABEL, bind,
	    sizeof(bind)), 0);
	assert_int_equal(proto_req_verify_mac(fx.srv.rx, (size_t)n, key, bind),
	    0);
	assert_int_equal(proto_req_verify_mac(fx.srv.rx, (size_t)n, key, NULL),
	    -1);
	assert_int_equal(req.kind, PROTO_KIND_TCP);
	assert_int_equal(req.dest.atyp, PROTO_ATYP_IPV4);
	assert_memory_equal(req.dest.ip, TCP_DST4, 4);
	assert_int_equal(req.dest.port, TCP_APP_DST_PORT);
	fx.hdr_len = (size_t)n;
	fx.srv.paused = false;
	testend_step(&fx.srv);
}

/* The app: acks what came, sends what it may of its upload, and goes back
 * to the oldest unacked byte when lwIP has not acked for a while. */
static void
app_step(void)
{
	struct tcp_app *a = &fx.app;
	size_t len = fx.up_hold != 0 ? fx.up_hold : UP_LEN;

	if (tcp_app_input(a) && !fx.app_gone && !a->rst_in)
		tcp_app_send(a, TCP_APP_ACK, false, NULL, 0);
	if (!a->synced || fx.app_gone || a->rst_in)
		return;
	if (a->snd_una != fx.last_una || a->snd_una == a->snd_max) {
		fx.last_una = a->snd_una;
		fx.stall = 0;
	} else if (++fx.stall >= STALL_ROUNDS) {
		tcp_app_rewind(a);
		fx.stall = 0;
	}
	tcp_app_upload(a, fx.up, len, fx.up_fin && len == UP_LEN);
}

static void
round_once(void)
{
	assert_int_equal(loop_run_once(fx.loop, 1), 0);
	tsnetif_timers();
	testend_accept(&fx.srv, fx.lfd, tc.sctx, &fx.conns);
	testend_step(&fx.srv);
	srv_header();
	app_step();
}

static void
run_until(bool (*done)(void), const char *what)
{
	uint64_t deadline = now_ms() + DEADLINE_MS;

	while (!done()) {
		if (now_ms() > deadline)
			fail_msg("timed out waiting for %s: app got %zu fin %d/%d "
			    "rst %d, sent %u; server got %zu eof %d err %d; "
			    "flows %u", what, fx.app.got, fx.app.fin_in,
			    fx.app.fin_out, fx.app.rst_in,
			    fx.app.snd_nxt - fx.app.iss - 1, fx.srv.rx_len,
			    fx.srv.eof, fx.srv.err, fx.env.nflows);
		round_once();
	}
}

static bool
synced(void)
{
	return fx.app.synced;
}

/* The app's SYN, lwIP's SYN-ACK, the app's ACK: a flow. */
static void
app_open(void)
{
	tcp_app_send(&fx.app, TCP_APP_SYN, true, NULL, 0);
	run_until(synced, "the SYN-ACK");
	tcp_app_send(&fx.app, TCP_APP_ACK, false, NULL, 0);
	assert_int_equal(fx.env.nflows, 1);
	assert_int_equal(fx.env.stats.accepted, 1);
}

/* ---- open, data both ways, half-close ------------------------------------ */

/* The server read the app's end, with the flow still up. */
static bool
srv_eof(void)
{
	assert_int_equal(fx.env.nflows, 1);
	return fx.srv.eof;
}

static bool
all_closed(void)
{
	return fx.env.nflows == 0 && fx.app.fin_in && fx.app.fin_acked &&
	    fx.srv.eof && fx.srv.shut;
}

/* Everything arrived both ways and the flow ended cleanly. */
static void
expect_clean(void)
{
	assert_int_equal(fx.srv.err, 0);
	assert_false(fx.app.rst_in);
	testend_expect(&fx.srv, fx.hdr_len, 1, UP_LEN);
	assert_int_equal(fx.app.got, DOWN_LEN);
	{
		struct testend e = { .rx = fx.app.data, .rx_len = fx.app.got };

		testend_expect(&e, 0, 2, DOWN_LEN);
	}
	assert_int_equal(fx.env.stats.failed, 0);
	assert_int_equal(fx.env.stats.bytes_up, UP_LEN);
	assert_int_equal(fx.env.stats.bytes_down, DOWN_LEN);
	/* The server answered: status shows the contact, no failure. */
	assert_true(fx.env.stats.contact.has_ok);
	assert_true(fx.env.stats.contact.ok_ms <= loop_now(fx.loop));
	assert_false(fx.env.stats.contact.has_fail);
}

/*
 * The app sends everything, then its FIN; the server reads the end of
 * stream only after every byte, while half its reply is still to come,
 * which the app then still receives.
 */
static void
test_app_fin_first(void **state)
{
	(void)state;
	client_start(0);
	fx.srv.tx_hold = DOWN_LEN / 2;
	fx.srv.shut_when_sent = true;
	fx.up_fin = true;
	app_open();
	run_until(srv_eof, "the app's end at the server");
	testend_expect(&fx.srv, fx.hdr_len, 1, UP_LEN);
	assert_true(fx.app.fin_out);
	assert_false(fx.app.fin_in);	/* the reply is not over */
	fx.srv.tx_hold = 0;
	run_until(all_closed, "the end of the flow");
	assert_true(fx.app.got_after_fin >= DOWN_LEN / 2);
	expect_clean();
	assert_int_equal(fx.conns, 1);
	assert_int_equal(fx.env.stats.pooled, 0);
}

static bool
app_fin_in(void)
{
	assert_int_equal(fx.env.nflows, 1);
	return fx.app.fin_in;
}

/*
 * The server sends its whole reply and ends its side first; the app reads
 * it and the FIN, and only then sends the rest of its upload and its own
 * FIN, which still reach the server.
 */
static void
test_server_eof_first(void **state)
{
	(void)state;
	client_start(0);
	fx.srv.shut_when_sent = true;
	fx.up_hold = 1000;
	app_open();
	run_until(app_fin_in, "the server's end");
	assert_int_equal(fx.env.nflows, 1);
	assert_int_equal(fx.app.got, DOWN_LEN);
	assert_int_equal(fx.srv.rx_len, fx.hdr_len + 1000);
	assert_false(fx.srv.eof);
	fx.up_hold = 0;
	fx.up_fin = true;
	run_until(all_closed, "the end of the flow");
	expect_clean();
}

/* ---- resets -------------------------------------------------------------- */

static bool
relaying(void)
{
	return fx.hdr_len > 0 && fx.srv.rx_len >= fx.hdr_len + 1000 &&
	    fx.app.got >= 1000;
}

/* Open, and 1000 bytes each way. */
static void
open_relaying(void)
{
	fx.srv.tx_hold = 1000;
	fx.up_hold = 1000;
	app_open();
	run_until(relaying, "the relay");
}

/* The flow is gone and the server's stream has ended, one way or
 * another. */
static bool
srv_ended(void)
{
	return fx.env.nflows == 0 && (fx.srv.err != 0 || fx.srv.eof);
}

/* The app resets: the outer stream is reset too (the server reads an
 * error, never an end it could take for complete); the app's choice, not
 * a failure. */
static void
test_app_reset(void **state)
{
	(void)state;
	client_start(0);
	open_relaying();
	tcp_app_send(&fx.app, TCP_APP_RST | TCP_APP_ACK, false, NULL, 0);
	fx.app_gone = true;
	run_until(srv_ended, "the reset at the server");
	assert_false(fx.srv.eof);
	assert_int_equal(fx.srv.err, ECONNRESET);
	assert_int_equal(fx.env.stats.failed, 0);
	assert_int_equal(fx.env.stats.bytes_up, 1000);
}

/* The app's connection has ended, by an RST or a FIN. */
static bool
app_ended(void)
{
	return fx.app.rst_in || fx.app.fin_in;
}

/* The server resets: the app gets an RST, counted as "server reset". */
static void
test_server_reset(void **state)
{
	(void)state;
	client_start(0);
	open_relaying();
	fx.app.rst_ok = true;
	outer_abort(fx.srv.o);
	fx.srv.o = NULL;
	run_until(app_ended, "the end at the app");
	assert_true(fx.app.rst_in);
	assert_false(fx.app.fin_in);
	assert_int_equal(fx.env.nflows, 0);
	assert_int_equal(fx.app.got, 1000);
	assert_int_equal(fx.env.stats.failed, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.failures,
	    "server reset"), 1);
}

/*
 * The server answers the header with a refusal status: the app gets an
 * RST, and the failure is counted under that refusal's own reason, the
 * only one counted (an egress denial is not "target connect failed").
 */
static void
refusal(uint8_t status, const char *reason)
{
	client_start(0);
	fx.status = status;
	fx.srv.tx_len = 0;
	fx.srv.shut_when_sent = true;
	fx.app.rst_ok = true;
	fx.up_hold = 1000;
	app_open();
	run_until(app_ended, "the end at the app");
	assert_true(fx.app.rst_in);
	assert_false(fx.app.fin_in);
	assert_int_equal(fx.env.nflows, 0);
	assert_int_equal(fx.app.got, 0);
	assert_true(fx.hdr_len > 0);
	assert_int_equal(fx.env.stats.failed, 1);
	if (stats_reason_get(&fx.env.stats.failures, reason) != 1 ||
	    stats_reason_total(&fx.env.stats.failures) != 1)
		fail_msg("status %u: want one failure \"%s\", got %zu "
		    "reasons, first \"%s\"", status, reason,
		    fx.env.stats.failures.nv, fx.env.stats.failures.nv > 0 ?
		    fx.env.stats.failures.v[0].reason : "");
	/* A refusal is the server's answer: contact, not a failure to
	 * reach it. */
	assert_true(fx.env.stats.contact.has_ok);
	assert_false(fx.env.stats.contact.has_fail);
}

/*
 * Nothing listens at the server's address: the app gets an RST, and the
 * failure is what status shows next to the last contact (none yet).
 */
static void
test_server_unreachable(void **state)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd;

	(void)state;
	client_start(0);
	/* A loopback port that was free a moment ago, now closed. */
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	close(fd);
	assert_int_equal(addr_from_ip(&OB->server, "127.0.0.1",
	    ntohs(sin.sin_port)), 0);
	fx.app.rst_ok = true;
	app_open();
	run_until(app_ended, "the end at the app");
	assert_true(fx.app.rst_in);
	assert_int_equal(fx.env.stats.failed, 1);
	assert_false(fx.env.stats.contact.has_ok);
	assert_true(fx.env.stats.contact.has_fail);
	assert_string_equal(fx.env.stats.contact.fail_reason,
	    "server unreachable");
	assert_int_equal(fx.conns, 0);
}

/* The server cannot reach the target: its status resets the app. */
static void
test_target_refused(void **state)
{
	(void)state;
	refusal(PROTO_ERR_REFUSED, "target refused");
}

/* Each refusal the server sends (doc/PROTOCOL.md) has its own reason. */
static void
test_refusal_reasons(void **state)
{
	static const struct {
		uint8_t		 status;
		const char	*reason;
	} t[] = {
		{ PROTO_ERR_DENIED, "egress denied" },
		{ PROTO_ERR_NET_UNREACH, "network unreachable" },
		{ PROTO_ERR_HOST_UNREACH, "host unreachable" },
		{ PROTO_ERR_TIMEOUT, "target timeout" },
		{ PROTO_ERR_RESOLVE, "name not resolved" },
		{ PROTO_ERR_LIMIT, "server limit" },
		{ PROTO_ERR_GENERAL, "server failure" },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		refusal(t[i].status, t[i].reason);
		cleanup(state);
	}
}

/* ---- the warm pool --------------------------------------------------------- */

static bool
pool_ready(void)
{
	return pool_stats(OB->pool)->ready == 1 && fx.srv.hs == 1;
}

/* A warm connection, TLS done before the app's SYN, carries the flow:
 * the header and the data go over it, no other connection is dialed for
 * the flow. */
static void
test_pool_take(void **state)
{
	(void)state;
	client_start(1);
	fx.srv.shut_when_sent = true;
	fx.up_fin = true;
	run_until(pool_ready, "a warm connection");
	assert_int_equal(fx.conns, 1);
	/* The pool's handshake alone is a contact; no flow yet. */
	assert_true(pool_stats(OB->pool)->contact.has_ok);
	assert_false(fx.env.stats.contact.has_ok);
	assert_int_equal(fx.srv.rx_len, 0);	/* nothing sent while idle */
	app_open();
	assert_int_equal(fx.env.stats.pooled, 1);
	assert_int_equal(pool_stats(OB->pool)->taken, 1);
	run_until(all_closed, "the end of the flow");
	expect_clean();
	assert_int_equal(fx.env.stats.pooled, 1);
	assert_int_equal(pool_stats(OB->pool)->taken, 1);
	/* The header came on the connection accepted before the SYN. */
	assert_int_equal(fx.conns, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_app_fin_first, cleanup),
		cmocka_unit_test_teardown(test_server_eof_first, cleanup),
		cmocka_unit_test_teardown(test_app_reset, cleanup),
		cmocka_unit_test_teardown(test_server_reset, cleanup),
		cmocka_unit_test_teardown(test_target_refused, cleanup),
		cmocka_unit_test_teardown(test_refusal_reasons, cleanup),
		cmocka_unit_test_teardown(test_server_unreachable, cleanup),
		cmocka_unit_test_teardown(test_pool_take, cleanup),
	};
	int rc;

	if (sodium_init() < 0)
		return 1;
	log_init(getenv("TEST_DEBUG") != NULL ? LOG_LVL_DEBUG : LOG_LVL_ERROR,
	    false, "test_flow_tcp_states");
	testcert_make(&tc, "test_flow_tcp_states", "flow.test");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	testcert_remove(&tc);
	return rc;
}
