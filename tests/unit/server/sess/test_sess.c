/*
 * sess, the server's session state machine, driven whole on one loop: the
 * test is the client (TLS with the throwaway certificate over one end of
 * a socketpair, the session owns the other), the target (a loopback
 * listener) and the cover site (another one), all stepped between loop
 * iterations, no threads, no root.
 *
 *   auth ok          a correct native header: status PROTO_OK, then bytes
 *                    both ways, SHA-256 checked at each far end
 *   half-close       the client's end first while the target still
 *                    answers, and the target's end first while the client
 *                    still sends; the session ends "done" either way
 *   auth fail        a header with a wrong MAC: everything goes to the
 *                    cover site verbatim, its answer comes back (no status
 *                    byte), the target is never dialed
 *   binding          a header bound to another TLS connection, a version
 *                    1 header (refused unless accept_v1) and a native
 *                    header over TLS 1.2 are refused the same way
 *   target refused   status PROTO_ERR_REFUSED, then a clean end of stream
 *   resets           the target's RST reaches the client as an RST
 *                    (not a FIN, with or without close_notify), and the
 *                    client's RST the target (over loopback TCP: a
 *                    socketpair has no RST)
 *   closed unused    the client ends its stream right after the TLS
 *                    handshake, as a warm pool connection does: counted
 *                    as unused, not as a failure, and no line at info
 *   reuse            version 3: two flows on one connection, each
 *                    half-closed by its end marker, the offer between
 *                    them; a replayed first header, a header replayed
 *                    by its nonce, a version 2 header, a truncated
 *                    chunk and bytes after the end marker each close
 *                    the connection as a reuse error (no cover site);
 *                    draining closes a connection waiting for a flow
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <sodium.h>

#include "core/addr.h"
#include "conf/conf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/sock.h"
#include "core/stats.h"
#include "server/cover.h"
#include "server/sess/sess.h"
#include "server/users.h"
#include "tls/outer.h"
#include "wire/auth.h"
#include "wire/proto.h"
#include "tests/unit/testcert.h"
#include "tests/unit/testend.h"

#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define UP_LEN		(384 * 1024)	/* client -> target */
#define DOWN_LEN	(512 * 1024)	/* target -> client */
#define DEADLINE_MS	8000
#define COVER_ANSWER	"HTTP/1.1 404 Not Found\r\n\r\ncover site here"

static struct testcert	 tc;

static uint64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the server side ------------------------------------------------------- */

static struct fx {
	struct conf	*conf;
	struct loop	*loop;
	struct users	*users;
	struct cover	*cover;
	struct sess_env	 env;
	int		 target_lfd, cover_lfd;
	uint16_t	 target_port, cover_port;
	unsigned	 target_conns, cover_conns;
	struct testend	 cli, tgt, cov;
	struct ssl_ctx_st *cctx;	/* the client's, NULL: tc.cctx */
	bool		 up;
	/* The request header (header()), encoded again once the client's
	 * handshake is done: version 2 binds it to the connection. */
	struct {
		uint8_t		*buf;
		size_t		 cap, len;
		struct proto_req req;
		uint8_t		 key[PROTO_KEY_LEN];
		enum { BIND_SAME, BIND_OTHER, BIND_V1, BIND_V3 } mode;
	} hx;
} fx;

/* A loopback port nothing listens on (bound, then closed). */
static uint16_t
closed_port(void)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sin);
	int			fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	close(fd);
	return ntohs(sin.sin_port);
}

static void
server_start_with(const char *extra)
{
	char	 y[1024], err[256];

	memset(&fx, 0, sizeof(fx));
	fx.target_lfd = testend_listener(&fx.target_port);
	fx.cover_lfd = testend_listener(&fx.cover_port);
	snprintf(y, sizeof(y), "server:\n  listen: 127.0.0.1:1\n"
	    "  cert: %s\n  cert_key: %s\n"
	    "  users:\n    - name: a\n      key: " K1 "\n"
	    "  egress:\n    allow: [127.0.0.0/8]\n"
	    "  fallback: 127.0.0.1:%u\n%s", tc.cert_pem, tc.key_pem,
	    fx.cover_port, extra);
	fx.conf = conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err));
	if (fx.conf == NULL)
		fail_msg("%s", err);
	assert_non_null(fx.loop = loop_new());
	assert_non_null(fx.users = users_new(fx.conf));
	sess_env_init(&fx.env, fx.conf, fx.loop, tc.sctx, fx.users);
	assert_non_null(fx.cover = cover_new(fx.loop));
	assert_int_equal(cover_configure(fx.cover, fx.conf), 0);
	fx.env.cover = fx.cover;
	assert_int_equal(loop_on_iteration(fx.loop, sess_reap, &fx.env), 0);
	fx.up = true;
}

static void
server_start(void)
{
	server_start_with("");
}

/* Encodes the request header into fx.hx.buf: version 2 bound to o's
 * exporter value (NULL: not known yet, a placeholder of the same length),
 * to some other connection's, or version 1. */
static void
hdr_encode(const struct outer *o)
{
	uint8_t	 bind[PROTO_BIND_LEN];
	ssize_t	 n;

	uint8_t	 ctx[PROTO_BIND_CTX_LEN];

	memset(bind, 0, sizeof(bind));
	fx.hx.req.version = fx.hx.mode == BIND_V3 ? PROTO_VERSION_3 : 0;
	if (fx.hx.mode == BIND_OTHER)
		randombytes_buf(bind, sizeof(bind));
	else if (o != NULL && fx.hx.mode == BIND_V3) {
		proto_bind_context(outer_flows(o), ctx);
		assert_int_equal(outer_export_ctx(o, PROTO_BIND_LABEL, ctx,
		    sizeof(ctx), bind, sizeof(bind)), 0);
	} else if (o != NULL)
		assert_int_equal(outer_export(o, PROTO_BIND_LABEL, bind,
		    sizeof(bind)), 0);
	n = proto_req_encode(fx.hx.buf, fx.hx.cap, &fx.hx.req, fx.hx.key,
	    fx.hx.mode == BIND_V1 ? NULL : bind, 7);
	assert_true(n > 0);
	if (fx.hx.len != 0)
		assert_int_equal((size_t)n, fx.hx.len);
	fx.hx.len = (size_t)n;
}

/* Bytes the client sends raw after a version 3 header (to send framing
 * of its own making). */
static size_t	 cli_extra_raw;

static void
cli_on_hs(struct testend *e)
{
	if (fx.hx.buf != NULL)
		hdr_encode(e->o);
	/* Version 3: the header and the status byte raw, then chunks. */
	if (fx.hx.buf != NULL && fx.hx.mode == BIND_V3)
		assert_int_equal(outer_frame_begin(e->o, fx.hx.len +
		    cli_extra_raw, 1, NULL, 0), 0);
}

/*
 * One session on fds[0] of a socketpair (tcp: a loopback TCP pair
 * instead), the client's TLS stream on the other end, sending pre first.
 */
static void
client_connect(const uint8_t *pre, size_t pre_len, size_t up, size_t rx_cap,
    bool tcp)
{
	struct addr	 peer;
	int		 fds[2], l;
	uint16_t	 port;

	if (tcp) {
		l = testend_listener(&port);
		assert_int_equal(addr_from_ip(&peer, "127.0.0.1", port), 0);
		fds[1] = sock_connect(&peer, NULL, 0);
		assert_true(fds[1] >= 0);
		do
			fds[0] = accept4(l, NULL, NULL, SOCK_NONBLOCK);
		while (fds[0] < 0 && errno == EAGAIN);
		assert_true(fds[0] >= 0);
		close(l);
	} else {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM |
		    SOCK_NONBLOCK, 0, fds), 0);
	}
	assert_int_equal(addr_from_ip(&peer, "192.0.2.1", 40000), 0);
	sess_new(&fx.env, fds[0], &peer, NULL);
	assert_int_equal(fx.env.nlive, 1);
	testend_init(&fx.cli, 1, up, rx_cap);
	fx.cli.pre = pre;
	fx.cli.pre_len = pre_len;
	fx.cli.on_hs = cli_on_hs;
	assert_non_null(fx.cli.o = outer_new(fx.cctx != NULL ? fx.cctx :
	    tc.cctx, fds[1], true, "sess.test"));
}

/* One round: the session's loop, then each of the test's ends. */
static void
round_once(void)
{
	assert_int_equal(loop_run_once(fx.loop, 1), 0);
	testend_step(&fx.cli);
	testend_accept(&fx.tgt, fx.target_lfd, NULL, &fx.target_conns);
	testend_step(&fx.tgt);
	testend_accept(&fx.cov, fx.cover_lfd, NULL, &fx.cover_conns);
	testend_step(&fx.cov);
}

/* Rounds until done() holds (or the deadline fails the test). */
static void
run_until(bool (*done)(void), const char *what)
{
	uint64_t deadline = now_ms() + DEADLINE_MS;

	while (!done()) {
		if (now_ms() > deadline)
			fail_msg("timed out waiting for %s: client rx %zu eof %d "
			    "err %d, target rx %zu eof %d, sessions %zu", what,
			    fx.cli.rx_len, fx.cli.eof, fx.cli.err,
			    fx.tgt.rx_len, fx.tgt.eof, fx.env.nlive);
		round_once();
	}
}

static int
cleanup(void **state)
{
	(void)state;
	if (!fx.up)
		return 0;
	fx.up = false;
	sess_close_all(&fx.env, "shutdown");
	sess_reap(&fx.env);
	testend_free(&fx.cli);
	outer_ctx_free(fx.cctx);	/* accepts NULL */
	testend_free(&fx.tgt);
	testend_free(&fx.cov);
	cover_free(fx.cover);
	users_free(fx.users);
	loop_free(fx.loop);
	conf_free(fx.conf);
	close(fx.target_lfd);
	close(fx.cover_lfd);
	return 0;
}

/* A TCP request for 127.0.0.1:port, MAC'd with key (base64), bound as
 * fx.hx.mode says to the client's connection once it is up. */
static size_t
header(uint8_t *out, size_t len, uint16_t port, const char *key_b64)
{
	struct proto_req	 req;
	uint8_t			 key[PROTO_KEY_LEN], k1[PROTO_KEY_LEN];
	size_t			 kl;

	assert_int_equal(sodium_base642bin(k1, sizeof(k1), K1, strlen(K1),
	    NULL, &kl, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
	assert_int_equal(sodium_base642bin(key, sizeof(key), key_b64,
	    strlen(key_b64), NULL, &kl, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
	memset(&req, 0, sizeof(req));
	req.kind = PROTO_KIND_TCP;
	req.ts = (uint64_t)time(NULL);
	randombytes_buf(req.nonce, sizeof(req.nonce));
	auth_user_id(k1, req.user_id);		/* user a, whatever the key */
	req.dest.atyp = PROTO_ATYP_IPV4;
	req.dest.ip[0] = 127;
	req.dest.ip[3] = 1;
	req.dest.port = port;
	fx.hx.buf = out;
	fx.hx.cap = len;
	fx.hx.len = 0;
	fx.hx.req = req;
	memcpy(fx.hx.key, key, sizeof(key));
	hdr_encode(fx.cli.o != NULL && fx.cli.hs == 1 ? fx.cli.o : NULL);
	return fx.hx.len;
}

/* ---- auth ok: relay both ways, half-close each way ------------------------ */

static bool
done_session(void)
{
	return fx.env.nlive == 0 && fx.cli.eof && fx.tgt.eof &&
	    fx.cli.shut && fx.tgt.shut;
}

static bool
target_half(void)
{
	return fx.tgt.o != NULL && fx.tgt.tx_off >= DOWN_LEN / 2 &&
	    fx.tgt.rx_len > 0;
}

/* The peer's end, with the session still up: one side has ended. */
static bool
target_eof(void)
{
	assert_int_equal(fx.env.nlive, 1);
	return fx.tgt.eof;
}

static bool
client_eof(void)
{
	assert_int_equal(fx.env.nlive, 1);
	return fx.cli.eof;
}

/* Both ends are finished and the session ended cleanly: every byte
 * arrived, no failure counted. */
static void
expect_clean_end(void)
{
	assert_int_equal(fx.cli.err, 0);
	assert_int_equal(fx.tgt.err, 0);
	assert_int_equal(fx.cli.rx[0], PROTO_OK);
	testend_expect(&fx.cli, 1, 2, DOWN_LEN);
	testend_expect(&fx.tgt, 0, 1, UP_LEN);
	assert_int_equal(fx.target_conns, 1);
	assert_int_equal(fx.cover_conns, 0);
	assert_int_equal(fx.env.stats.failed, 0);
	assert_int_equal(fx.env.stats.fallback, 0);
	assert_int_equal(fx.env.stats.bytes_up, UP_LEN);
	assert_int_equal(fx.env.stats.bytes_down, DOWN_LEN + 1);
}

/*
 * The client sends all it has and ends its side (close_notify); the
 * target sees the end only after every byte, then answers the second half
 * of its reply, which still reaches the client.
 */
static void
test_auth_ok_client_ends_first(void **state)
{
	uint8_t	 hdr[PROTO_REQ_MAX];
	size_t	 hl;

	(void)state;
	server_start();
	hl = header(hdr, sizeof(hdr), fx.target_port, K1);
	client_connect(hdr, hl, UP_LEN, 1 + DOWN_LEN, false);
	fx.cli.shut_when_sent = true;
	testend_init(&fx.tgt, 2, DOWN_LEN, UP_LEN);
	fx.tgt.tx_hold = DOWN_LEN / 2;		/* the rest after the EOF */
	fx.tgt.shut_when_sent = true;
	run_until(target_half, "the target's first half");
	/* The session is relaying now: not counted as anything yet. */
	assert_int_equal(fx.env.nlive, 1);
	run_until(target_eof, "the client's end at the target");
	/* The client's end came through, after all of its bytes... */
	testend_expect(&fx.tgt, 0, 1, UP_LEN);
	assert_true(fx.cli.shut);
	assert_false(fx.cli.eof);	/* ... and did not end the reply */
	fx.tgt.tx_hold = 0;
	run_until(done_session, "the end of the session");
	assert_true(fx.cli.rx_after_shut > DOWN_LEN / 2);
	expect_clean_end();
}

/*
 * The target sends its whole reply and ends its side first; the client
 * reads it and the end of stream, and only then sends the rest of its
 * upload, which still reaches the target.
 */
static void
test_auth_ok_target_ends_first(void **state)
{
	uint8_t	 hdr[PROTO_REQ_MAX];
	size_t	 hl;

	(void)state;
	server_start();
	hl = header(hdr, sizeof(hdr), fx.target_port, K1);
	client_connect(hdr, hl, UP_LEN, 1 + DOWN_LEN, false);
	fx.cli.tx_hold = 1000;			/* a little first */
	fx.cli.shut_when_sent = true;
	testend_init(&fx.tgt, 2, DOWN_LEN, UP_LEN);
	fx.tgt.shut_when_sent = true;
	run_until(client_eof, "the target's end at the client");
	testend_expect(&fx.cli, 1, 2, DOWN_LEN);
	assert_true(fx.tgt.shut);
	assert_int_equal(fx.tgt.rx_len, 1000);
	fx.cli.tx_hold = 0;
	run_until(done_session, "the end of the session");
	assert_true(fx.cli.tx_after_eof >= UP_LEN - 1000);
	expect_clean_end();
}

/* ---- auth fail: the cover site answers ------------------------------------ */

static bool
done_cover(void)
{
	return fx.env.nlive == 0 && (fx.cli.eof || fx.cli.err != 0) &&
	    fx.cov.eof;
}

/* The request header as fx.hx.mode makes it, with key_b64: everything
 * goes to the cover site verbatim, rejected for reason. */
static void
expect_cover(const char *key_b64, const char *reason)
{
	uint8_t			 hdr[PROTO_REQ_MAX];
	size_t			 hl;

	hl = header(hdr, sizeof(hdr), fx.target_port, key_b64);
	client_connect(hdr, hl, 3000, sizeof(COVER_ANSWER) - 1, false);
	fx.cli.shut_when_sent = true;
	testend_init(&fx.cov, 0, 0, hl + 3000);
	fx.cov.pre = (const uint8_t *)COVER_ANSWER;
	fx.cov.pre_len = sizeof(COVER_ANSWER) - 1;
	fx.cov.shut_when_sent = true;
	run_until(done_cover, "the cover site's answer");
	/* The cover site got every byte as the client sent it... */
	assert_int_equal(fx.cov.rx_len, hl + 3000);
	assert_memory_equal(fx.cov.rx, hdr, hl);
	testend_expect(&fx.cov, hl, 1, 3000);
	/* ... and the client its answer, with no status byte before it,
	 * then the close as nginx closes after the client's close_notify:
	 * without one of its own (a truncation to our strict client). */
	assert_false(fx.cli.eof);
	assert_int_equal(fx.cli.err, EPROTO);
	assert_int_equal(fx.cli.rx_len, sizeof(COVER_ANSWER) - 1);
	assert_memory_equal(fx.cli.rx, COVER_ANSWER, fx.cli.rx_len);
	assert_int_equal(fx.target_conns, 0);
	assert_int_equal(fx.cover_conns, 1);
	assert_int_equal(fx.env.stats.fallback, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.rejects, reason), 1);
	assert_int_equal(fx.env.stats.failed, 0);
}

static void
test_auth_fail_cover(void **state)
{
	(void)state;
	server_start();
	expect_cover("ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=", "bad MAC");
}

/* ---- the header's binding to its TLS connection --------------------------- */

/* A header made for another TLS connection (a recorded one, replayed on a
 * new connection, even after a restart emptied the replay cache): its MAC
 * does not verify here, so it is treated exactly as a wrong key. */
static void
test_bound_elsewhere(void **state)
{
	(void)state;
	server_start();
	fx.hx.mode = BIND_OTHER;
	expect_cover(K1, "bad MAC");
}

/* Version 1 (unbound) is refused by default, like any bad header. */
static void
test_v1_refused(void **state)
{
	(void)state;
	server_start();
	fx.hx.mode = BIND_V1;
	expect_cover(K1, "version 1 header");
	assert_int_equal(stats_reason_get(&fx.env.stats.rejects, "bad MAC"), 0);
}

/* ... and accepted with server.accept_v1 (old clients). */
static void
test_v1_accepted(void **state)
{
	uint8_t	 hdr[PROTO_REQ_MAX];
	size_t	 hl;

	(void)state;
	server_start_with("  accept_v1: true\n");
	fx.hx.mode = BIND_V1;
	hl = header(hdr, sizeof(hdr), fx.target_port, K1);
	assert_int_equal(hdr[0], PROTO_VERSION_1);
	client_connect(hdr, hl, UP_LEN, 1 + DOWN_LEN, false);
	fx.cli.shut_when_sent = true;
	testend_init(&fx.tgt, 2, DOWN_LEN, UP_LEN);
	fx.tgt.shut_when_sent = true;
	run_until(done_session, "the end of the session");
	expect_clean_end();
}

/* The front completes TLS 1.2 (nginx does), but a native session is TLS
 * 1.3 only: a header that would verify (bound to this TLS 1.2
 * connection's exporter) goes to the cover site all the same. */
static void
test_tls12_refused(void **state)
{
	(void)state;
	server_start_with("  accept_v1: true\n");
	assert_non_null(fx.cctx = outer_ctx_client(NULL, true));
	assert_int_equal(outer_ctx_allow_tls12(fx.cctx), 0);
	assert_int_equal(SSL_CTX_set_max_proto_version(fx.cctx,
	    TLS1_2_VERSION), 1);
	expect_cover(K1, "not TLS 1.3");
	assert_false(outer_tls13(fx.cli.o));
}

/* ---- target refused: the status byte, then the end ------------------------ */

static bool
done_refused(void)
{
	return fx.env.nlive == 0 && fx.cli.eof;
}

static void
test_target_refused(void **state)
{
	uint8_t	 hdr[PROTO_REQ_MAX];
	uint64_t t0;
	size_t	 hl;

	(void)state;
	server_start();
	hl = header(hdr, sizeof(hdr), closed_port(), K1);
	/* Bytes behind the header too: dropped, never an RST. */
	client_connect(hdr, hl, 5000, 16, false);
	fx.cli.shut_when_sent = true;	/* else the answer lingers 5 s */
	t0 = now_ms();
	run_until(done_refused, "the refusal");
	/* Ended by the client's close, not the 5 s linger timeout. */
	assert_true(now_ms() - t0 < 2500);
	assert_int_equal(fx.cli.err, 0);
	assert_int_equal(fx.cli.rx_len, 1);
	assert_int_equal(fx.cli.rx[0], PROTO_ERR_REFUSED);
	assert_int_equal(fx.target_conns, 0);
	assert_int_equal(fx.cover_conns, 0);
	assert_int_equal(fx.env.stats.failed, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.failures,
	    "connect failed"), 1);
	assert_int_equal(fx.env.stats.bytes_up, 0);
}

/* ---- a reload while a warm connection waits for its request -------------- */

static const char *sess_state;

static void
on_sess_state(void *arg, const struct sess_info *si)
{
	(void)arg;
	sess_state = si->state;
}

static bool
done_header_wait(void)
{
	sess_state = NULL;
	sess_foreach(&fx.env, on_sess_state, NULL);
	return sess_state != NULL && strcmp(sess_state, "header") == 0;
}

/*
 * A session accepted under one generation whose request comes after a
 * reload (a warm pool connection does this) is judged by the generation
 * live when the request arrives: here the reload took the loopback
 * allow entry out of the egress policy, so the target is denied.
 */
static void
test_request_takes_live_generation(void **state)
{
	uint8_t		 hdr[PROTO_REQ_MAX];
	struct conf	*gen2;
	char		 y[1024], err[256];
	size_t		 hl;

	(void)state;
	server_start();
	client_connect(NULL, 0, 0, 16, false);
	run_until(done_header_wait, "the TLS handshake");
	snprintf(y, sizeof(y), "server:\n  listen: 127.0.0.1:1\n"
	    "  cert: %s\n  cert_key: %s\n"
	    "  users:\n    - name: a\n      key: " K1 "\n",
	    tc.cert_pem, tc.key_pem);
	if ((gen2 = conf_load_buf("t.yaml", y, strlen(y), err,
	    sizeof(err))) == NULL)
		fail_msg("%s", err);
	fx.env.conf = gen2;		/* as server_adopt() does */
	hl = header(hdr, sizeof(hdr), fx.target_port, K1);
	fx.cli.pre = hdr;
	fx.cli.pre_len = hl;
	fx.cli.shut_when_sent = true;
	run_until(done_refused, "the refusal");
	assert_int_equal(fx.cli.rx_len, 1);
	assert_int_equal(fx.cli.rx[0], PROTO_ERR_DENIED);
	assert_int_equal(fx.target_conns, 0);
	fx.env.conf = fx.conf;
	conf_free(gen2);	/* the session that held it is gone */
}

/* ---- closed unused: a warm pool connection retired ------------------------ */

/*
 * What the code under test logs goes to stderr; while a capture runs it
 * goes to a temporary file instead, at level info (the default) with
 * log.flows on, so a test can see which lines an operator would get who
 * asked for a line per flow.
 */
static struct {
	FILE		*fp;
	int		 saved_fd;
	enum log_level	 saved_level;
	bool		 saved_flows;
} cap;

static void
capture_start(void)
{
	fflush(stderr);
	assert_non_null(cap.fp = tmpfile());
	assert_true((cap.saved_fd = dup(STDERR_FILENO)) >= 0);
	assert_true(dup2(fileno(cap.fp), STDERR_FILENO) >= 0);
	cap.saved_level = log_get_level();
	cap.saved_flows = log_flow_level() == LOG_LVL_INFO;
	log_set_level(LOG_LVL_INFO);
	log_set_flows(true);
}

/* The lines logged since capture_start(), NUL-terminated; free it. */
static char *
capture_end(void)
{
	char	*buf;
	long	 len;

	fflush(stderr);
	log_set_level(cap.saved_level);
	log_set_flows(cap.saved_flows);
	assert_true(dup2(cap.saved_fd, STDERR_FILENO) >= 0);
	close(cap.saved_fd);
	assert_int_equal(fseek(cap.fp, 0, SEEK_END), 0);
	assert_true((len = ftell(cap.fp)) >= 0);
	rewind(cap.fp);
	assert_non_null(buf = calloc(1, (size_t)len + 1));
	assert_int_equal(fread(buf, 1, (size_t)len, cap.fp), (size_t)len);
	fclose(cap.fp);
	cap.fp = NULL;
	return buf;
}

static bool
done_unused(void)
{
	return fx.env.nlive == 0 && (fx.cli.eof || fx.cli.err != 0);
}

/*
 * The client completes the TLS handshake and closes without a byte of
 * request, as its warm pool does when a connection's lifetime is over (and
 * a browser with a preconnect).  Nothing failed: the session counts as
 * unused, not in failed or under any failure reason, is not a rejection
 * (no cover site), and an idle client does not fill the log at info,
 * not even with log.flows on.
 */
static void
test_closed_unused(void **state)
{
	char	*log;

	(void)state;
	server_start();
	client_connect(NULL, 0, 0, 16, false);
	fx.cli.shut_when_sent = true;	/* close_notify after the handshake */
	capture_start();
	run_until(done_unused, "the unused connection's end");
	log_info("test_sess: capture works");
	log = capture_end();
	assert_int_equal(fx.cli.hs, 1);
	assert_int_equal(fx.cli.rx_len, 0);
	assert_int_equal(fx.env.stats.unused, 1);
	assert_int_equal(fx.env.stats.failed, 0);
	assert_int_equal(stats_reason_total(&fx.env.stats.failures), 0);
	assert_int_equal(stats_reason_total(&fx.env.stats.rejects), 0);
	assert_int_equal(fx.env.stats.fallback, 0);
	assert_int_equal(fx.cover_conns, 0);
	assert_int_equal(fx.target_conns, 0);
	if (strstr(log, "test_sess: capture works") == NULL ||
	    strstr(log, "sess ") != NULL)
		fail_msg("want no session line at info; logged:\n%s", log);
	free(log);
}

/* ---- resets ------------------------------------------------------------------ */

static bool
relaying(void)
{
	return fx.tgt.o != NULL && fx.tgt.rx_len >= 1000 &&
	    fx.cli.rx_len >= 1001;
}

/* The session is gone and the client's (target's) stream has ended, one
 * way or another. */
static bool
client_ended(void)
{
	return fx.env.nlive == 0 && (fx.cli.err != 0 || fx.cli.eof);
}

static bool
target_ended(void)
{
	return fx.env.nlive == 0 && (fx.tgt.err != 0 || fx.tgt.eof);
}

/* The target resets mid-stream: so does the client's stream (an RST, not
 * an end it could take as complete). */
/*
 * A session relaying over loopback TCP (a socketpair has no RST), both
 * ends holding back the rest of their bytes: mid-stream.
 */
static void
relay_mid_stream(void)
{
	static uint8_t	 hdr[PROTO_REQ_MAX];	/* sent from fx.cli.pre */
	size_t		 hl;

	server_start();
	hl = header(hdr, sizeof(hdr), fx.target_port, K1);
	client_connect(hdr, hl, UP_LEN, 1 + DOWN_LEN, true);
	fx.cli.tx_hold = 1000;
	testend_init(&fx.tgt, 2, DOWN_LEN, UP_LEN);
	fx.tgt.tx_hold = 1000;
	run_until(relaying, "the relay");
}

static void
test_target_reset(void **state)
{
	(void)state;
	relay_mid_stream();
	outer_abort(fx.tgt.o);
	fx.tgt.o = NULL;
	run_until(client_ended, "the reset at the client");
	assert_false(fx.cli.eof);
	/* An RST: a FIN, even without close_notify (EPROTO), is not it. */
	assert_int_equal(fx.cli.err, ECONNRESET);
	assert_int_equal(fx.env.stats.failed, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.failures,
	    "target error") + stats_reason_get(&fx.env.stats.failures,
	    "target reset"), 1);
}

/* The client resets mid-stream: the target gets an RST, not a FIN. */
static void
test_client_reset(void **state)
{
	(void)state;
	relay_mid_stream();
	outer_abort(fx.cli.o);
	fx.cli.o = NULL;
	run_until(target_ended, "the reset at the target");
	assert_false(fx.tgt.eof);
	assert_int_equal(fx.tgt.err, ECONNRESET);
	assert_int_equal(fx.env.stats.failed, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.failures,
	    "client error") + stats_reason_get(&fx.env.stats.failures,
	    "client reset"), 1);
}

/* ---- reuse (version 3) ---------------------------------------------------- */

#define R_UP	(40 * 1024)
#define R_DOWN	(70 * 1024)

static uint64_t	 want_offered;

static bool
flow_done_offered(void)
{
	return fx.cli.eof && fx.tgt.eof && fx.cli.shut && fx.tgt.shut &&
	    fx.env.stats.reuse_offered == want_offered;
}

static bool
session_gone(void)
{
	return fx.env.nlive == 0;
}

static bool
client_eof_any(void)
{
	return fx.cli.eof || fx.cli.err != 0;
}

/* The client's stream between flows: framing off, the offer read. */
static void
read_offer(void)
{
	uint64_t	 deadline = now_ms() + DEADLINE_MS;
	uint8_t		 b[2];
	size_t		 got = 0;
	ssize_t		 n;

	outer_frame_end(fx.cli.o);
	while (got < 2) {
		assert_true(now_ms() < deadline);
		n = outer_read(fx.cli.o, b + got, 2 - got);
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			round_once();
			continue;
		}
		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_memory_equal(b, "\xff\xff", 2);
}

/*
 * One version 3 flow on the client's connection (a new one when there
 * is none): its header, R_UP bytes and the end marker up, R_DOWN bytes
 * and the end marker down, hash-checked; the server then offers the
 * connection.  hdr keeps the header as sent.
 */
static size_t
reuse_flow(uint8_t *hdr, size_t hcap, unsigned seed)
{
	struct outer	*o = fx.cli.o;
	size_t		 hl;
	uint64_t	 offered = fx.env.stats.reuse_offered;

	fx.hx.mode = BIND_V3;
	if (o == NULL) {
		hl = header(hdr, hcap, fx.target_port, K1);
		client_connect(hdr, hl, R_UP, 1 + R_DOWN, false);
	} else {
		fx.cli.o = NULL;
		testend_free(&fx.cli);
		testend_init(&fx.cli, seed, R_UP, 1 + R_DOWN);
		fx.cli.o = o;
		fx.cli.hs = 1;
		hl = header(hdr, hcap, fx.target_port, K1);
		assert_int_equal(outer_frame_begin(o, hl, 1, NULL, 0), 0);
		fx.cli.pre = hdr;
		fx.cli.pre_len = hl;
	}
	fx.cli.seed = seed;
	fx.cli.shut_when_sent = true;
	testend_free(&fx.tgt);
	testend_init(&fx.tgt, seed + 1, R_DOWN, R_UP);
	fx.tgt.shut_when_sent = true;
	want_offered = offered + 1;
	run_until(flow_done_offered, "a flow's end and the offer");
	assert_int_equal(fx.cli.err, 0);
	assert_int_equal(fx.cli.rx[0], PROTO_OK);
	testend_expect(&fx.cli, 1, seed + 1, R_DOWN);
	testend_expect(&fx.tgt, 0, seed, R_UP);
	assert_int_equal(fx.env.nlive, 1);
	read_offer();
	return hl;
}

static void
test_reuse_two_flows(void **state)
{
	uint8_t	 h1[PROTO_REQ_MAX], h2[PROTO_REQ_MAX];

	(void)state;
	server_start();
	reuse_flow(h1, sizeof(h1), 3);
	assert_int_equal(outer_flows(fx.cli.o), 1);
	reuse_flow(h2, sizeof(h2), 5);
	assert_int_equal(outer_flows(fx.cli.o), 2);
	assert_int_equal(fx.env.next_id, 1);	/* one connection */
	assert_int_equal(fx.target_conns, 2);	/* two flows */
	assert_int_equal(fx.env.stats.reused, 1);
	assert_int_equal(fx.env.stats.reuse_offered, 2);
	assert_int_equal(fx.env.stats.reuse_errors, 0);
	assert_int_equal(fx.env.stats.failed, 0);
	assert_int_equal(fx.env.stats.bytes_up, 2 * R_UP);
	assert_int_equal(fx.env.stats.bytes_down, 2 * (R_DOWN + 1));
	/* The client retires it: closed quietly, not a failure. */
	assert_int_equal(outer_shutdown_write(fx.cli.o), 0);
	run_until(session_gone, "the close between flows");
	assert_int_equal(fx.env.stats.failed, 0);
	assert_int_equal(fx.env.stats.unused, 0);
}

/* Draining: a connection waiting for its next flow closes at once, with
 * close_notify, and no flow's end is offered any more. */
static void
test_reuse_drain(void **state)
{
	uint8_t	 h1[PROTO_REQ_MAX];

	(void)state;
	server_start();
	reuse_flow(h1, sizeof(h1), 3);
	sess_stop_offers(&fx.env);
	assert_int_equal(fx.env.nlive, 0);
	assert_int_equal(fx.env.stats.failed, 0);
	fx.cli.eof = false;
	fx.cli.rx_len = 0;
	run_until(client_eof_any, "the close at the client");
	assert_int_equal(fx.cli.err, 0);
}

/* Sends raw bytes on the client's stream (framing off). */
static void
cli_send_raw(const void *b, size_t n)
{
	uint64_t	 deadline = now_ms() + DEADLINE_MS;
	size_t		 off = 0;
	ssize_t		 w;

	while (off < n) {
		assert_true(now_ms() < deadline);
		w = outer_write(fx.cli.o, (const uint8_t *)b + off, n - off);
		if (w < 0) {
			assert_int_equal(errno, EAGAIN);
			round_once();
			continue;
		}
		off += (size_t)w;
	}
}

/* After one good flow, what the client sends next on the offered
 * connection ends it: counted as a reuse error with reason, an RST,
 * never the cover site. */
static void
expect_reuse_error(const char *reason)
{
	fx.cli.eof = false;
	run_until(session_gone, "the reuse error");
	assert_int_equal(fx.env.stats.reuse_errors, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.failures, reason), 1);
	assert_int_equal(fx.env.stats.fallback, 0);
	assert_int_equal(fx.cover_conns, 0);
}

static void
test_reuse_replayed_first(void **state)
{
	uint8_t	 h1[PROTO_REQ_MAX];
	size_t	 hl;

	(void)state;
	server_start();
	hl = reuse_flow(h1, sizeof(h1), 3);
	cli_send_raw(h1, hl);	/* bound to flow 0, sent as flow 1 */
	expect_reuse_error("bad MAC");
}

static void
test_reuse_replayed_nonce(void **state)
{
	uint8_t	 h1[PROTO_REQ_MAX], h2[PROTO_REQ_MAX];
	struct proto_req first;

	(void)state;
	server_start();
	reuse_flow(h1, sizeof(h1), 3);
	assert_int_equal(proto_req_parse(h1, sizeof(h1), &first) > 0, 1);
	/* flow 1's binding, flow 0's nonce: a duplicate */
	fx.hx.buf = h2;
	fx.hx.cap = sizeof(h2);
	fx.hx.len = 0;
	memcpy(fx.hx.req.nonce, first.nonce, sizeof(first.nonce));
	fx.hx.req.ts = first.ts;
	hdr_encode(fx.cli.o);
	cli_send_raw(h2, fx.hx.len);
	expect_reuse_error("replayed header");
}

static void
test_reuse_v2_second(void **state)
{
	uint8_t	 h1[PROTO_REQ_MAX], h2[PROTO_REQ_MAX];
	size_t	 hl;

	(void)state;
	server_start();
	reuse_flow(h1, sizeof(h1), 3);
	fx.hx.mode = BIND_SAME;
	hl = header(h2, sizeof(h2), fx.target_port, K1);
	hdr_encode(fx.cli.o);
	cli_send_raw(h2, hl);
	expect_reuse_error("second request not version 3");
}

static void
test_reuse_truncated_chunk(void **state)
{
	uint8_t	 h1[PROTO_REQ_MAX], h2[PROTO_REQ_MAX + 8];
	size_t	 hl;

	(void)state;
	server_start();
	reuse_flow(h1, sizeof(h1), 3);
	hl = header(h2, sizeof(h2), fx.target_port, K1);
	hdr_encode(fx.cli.o);		/* flow 1 */
	memcpy(h2 + hl, "\x00\x10" "ab", 4);	/* 16 announced, 2 sent */
	testend_free(&fx.tgt);
	testend_init(&fx.tgt, 9, 0, 16);
	cli_send_raw(h2, hl + 4);
	assert_int_equal(outer_shutdown_write(fx.cli.o), 0);
	expect_reuse_error("framing error");
	/* a flow on a reused connection, until its bytes were wrong */
	assert_int_equal(fx.env.stats.reused, 1);
}

static bool
target_got_end(void)
{
	return fx.tgt.eof;
}

/* The header, the end marker and more in one record: the bytes behind
 * the marker are data after the flow's end too. */
static void
test_reuse_data_after_end_early(void **state)
{
	static uint8_t	 pre[PROTO_REQ_MAX + 16];
	size_t		 hl;

	(void)state;
	server_start();
	fx.hx.mode = BIND_V3;
	hl = header(pre, PROTO_REQ_MAX, fx.target_port, K1);
	memcpy(pre + hl, "\x00\x00junk", 6);
	cli_extra_raw = 6;
	client_connect(pre, hl + 6, 0, 64, false);
	testend_init(&fx.tgt, 2, 0, 16);
	fx.tgt.shut_when_sent = true;
	run_until(session_gone, "the reuse error");
	cli_extra_raw = 0;
	assert_true(fx.tgt.eof);	/* the flow itself ended well */
	assert_int_equal(fx.env.stats.reuse_errors, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.failures,
	    "data after flow end"), 1);
	assert_int_equal(fx.env.stats.reuse_offered, 0);
	assert_int_equal(fx.cover_conns, 0);
}

static void
test_reuse_data_after_end(void **state)
{
	uint8_t	 hdr[PROTO_REQ_MAX];
	size_t	 hl;

	(void)state;
	server_start();
	fx.hx.mode = BIND_V3;
	hl = header(hdr, sizeof(hdr), fx.target_port, K1);
	/* Room for the framing too: the client reads raw once it sent
	 * its extra bytes. */
	client_connect(hdr, hl, 1000, 1 + 1000 + 64, false);
	fx.cli.shut_when_sent = true;
	testend_init(&fx.tgt, 2, 1000, 1000);
	fx.tgt.tx_hold = 10;		/* the flow goes on... */
	fx.tgt.shut_when_sent = true;
	run_until(target_got_end, "the client's end marker at the target");
	/* ... while the client, past its end marker, sends a request */
	outer_frame_end(fx.cli.o);
	cli_send_raw(hdr, hl);
	fx.tgt.tx_hold = 0;
	run_until(session_gone, "the reuse error");
	assert_int_equal(fx.env.stats.reuse_errors, 1);
	assert_int_equal(stats_reason_get(&fx.env.stats.failures,
	    "data after flow end"), 1);
	assert_int_equal(fx.env.stats.reuse_offered, 0);
	assert_int_equal(fx.cover_conns, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_auth_ok_client_ends_first,
		    cleanup),
		cmocka_unit_test_teardown(test_auth_ok_target_ends_first,
		    cleanup),
		cmocka_unit_test_teardown(test_auth_fail_cover, cleanup),
		cmocka_unit_test_teardown(test_bound_elsewhere, cleanup),
		cmocka_unit_test_teardown(test_v1_refused, cleanup),
		cmocka_unit_test_teardown(test_v1_accepted, cleanup),
		cmocka_unit_test_teardown(test_tls12_refused, cleanup),
		cmocka_unit_test_teardown(test_target_refused, cleanup),
		cmocka_unit_test_teardown(test_request_takes_live_generation,
		    cleanup),
		cmocka_unit_test_teardown(test_target_reset, cleanup),
		cmocka_unit_test_teardown(test_client_reset, cleanup),
		cmocka_unit_test_teardown(test_closed_unused, cleanup),
		cmocka_unit_test_teardown(test_reuse_two_flows, cleanup),
		cmocka_unit_test_teardown(test_reuse_drain, cleanup),
		cmocka_unit_test_teardown(test_reuse_replayed_first, cleanup),
		cmocka_unit_test_teardown(test_reuse_replayed_nonce, cleanup),
		cmocka_unit_test_teardown(test_reuse_v2_second, cleanup),
		cmocka_unit_test_teardown(test_reuse_truncated_chunk, cleanup),
		cmocka_unit_test_teardown(test_reuse_data_after_end, cleanup),
		cmocka_unit_test_teardown(test_reuse_data_after_end_early,
		    cleanup),
	};
	int	 rc;

	if (sodium_init() < 0)
		return 1;
	log_init(getenv("TEST_DEBUG") != NULL ? LOG_LVL_DEBUG : LOG_LVL_ERROR,
	    false, "test_sess");
	testcert_make(&tc, "test_sess", "sess.test");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	testcert_remove(&tc);
	return rc;
}
