/*
 * flow_socks5: the per-flow SOCKS5 negotiation, driven on a plain outer
 * stream over a socketpair against a scripted fake proxy on the other end.
 * Checked: the exact bytes sent at each step, that nothing is read past
 * the CONNECT reply (the target's first bytes stay for the relay), replies
 * arriving a byte at a time, and each failure with its reason -- refused
 * methods, a method never offered, RFC 1929 rejection (the user named, the
 * password never), a CONNECT refusal with the reply's meaning, a malformed
 * answer, the proxy closing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "client/tcp/flow_socks5.h"
#include "tls/outer.h"
#include "wire/socks5.h"

struct fx {
	struct conf		*conf;
	struct outer		*o;		/* our end, plain */
	int			 peer;		/* the fake proxy, blocking */
	struct flow_socks5	*s;
	const char		*why;
	char			 detail[192];
	uint8_t			 rep;
};

static size_t
unhex(const char *s, uint8_t *out)
{
	size_t	 n = strlen(s) / 2, i;
	unsigned v;

	for (i = 0; i < n; i++) {
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void
fx_open(struct fx *x, const char *extra)
{
	char			 y[512], err[256];
	struct proto_dest	 d;
	int			 fds[2];

	memset(x, 0, sizeof(*x));
	snprintf(y, sizeof(y), "client:\n  server: 127.0.0.1:1080\n"
	    "  protocol: socks5\n%s", extra);
	if ((x->conf = conf_load_buf("t.yaml", y, strlen(y), err,
	    sizeof(err))) == NULL)
		fail_msg("%s", err);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	assert_non_null(x->o = outer_new(NULL, fds[0], true, NULL));
	x->peer = fds[1];
	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_IPV4;
	unhex("c0000201", d.ip);
	d.port = 443;
	assert_non_null(x->s = flow_socks5_new(conf_final(x->conf), &d));
}

static void
fx_close(struct fx *x)
{
	flow_socks5_free(x->s);
	outer_free(x->o);
	close(x->peer);
	conf_free(x->conf);
}

static int
fx_step(struct fx *x)
{
	return flow_socks5_step(x->s, x->o, &x->why, x->detail,
	    sizeof(x->detail), &x->rep);
}

/* The proxy must have received exactly these bytes (hex). */
static void
expect_sent(struct fx *x, const char *hex)
{
	uint8_t	want[600], got[600];
	size_t	n = unhex(hex, want), off = 0;
	ssize_t	r;

	while (off < n) {
		r = read(x->peer, got + off, n - off);
		assert_true(r > 0);
		off += (size_t)r;
	}
	assert_memory_equal(got, want, n);
	/* ...and nothing more. */
	assert_int_equal(recv(x->peer, got, sizeof(got), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

static void
proxy_says(struct fx *x, const char *hex)
{
	uint8_t	b[600];
	size_t	n = unhex(hex, b);

	assert_int_equal(write(x->peer, b, n), (ssize_t)n);
}

#define REPLY_OK	"050000" "01" "0a000001" "0438"

static void
test_no_auth(void **state)
{
	struct fx	x;
	char		buf[16];

	(void)state;
	fx_open(&x, "");
	assert_string_equal(flow_socks5_state(x.s), "greeting");
	assert_int_equal(fx_step(&x), 0);
	expect_sent(&x, "050100");
	assert_int_equal(fx_step(&x), 0);	/* nothing new: still waits */
	proxy_says(&x, "0500");
	assert_int_equal(fx_step(&x), 0);
	assert_string_equal(flow_socks5_state(x.s), "connect");
	expect_sent(&x, "050100" "01" "c0000201" "01bb");
	/* The target's first bytes right behind the reply, in one write. */
	assert_int_equal(write(x.peer, "\x05\x00\x00\x01\x0a\x00\x00\x01"
	    "\x04\x38" "HELLO", 15), 15);
	assert_int_equal(fx_step(&x), 1);
	assert_int_equal(outer_read(x.o, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "HELLO", 5);
	fx_close(&x);
}

static void
test_userpass(void **state)
{
	struct fx	x;
	const char	*reply = REPLY_OK;
	size_t		i;

	(void)state;
	fx_open(&x, "  username: alice\n  password: s3cret\n");
	assert_int_equal(fx_step(&x), 0);
	expect_sent(&x, "05020002");
	proxy_says(&x, "0502");
	assert_int_equal(fx_step(&x), 0);
	expect_sent(&x, "0105616c69636506733363726574");
	proxy_says(&x, "0100");
	assert_int_equal(fx_step(&x), 0);
	expect_sent(&x, "050100" "01" "c0000201" "01bb");
	/* A byte at a time: never done early, never reads ahead. */
	for (i = 0; i + 2 < strlen(reply); i += 2) {
		char b[3] = { reply[i], reply[i + 1], '\0' };

		proxy_says(&x, b);
		assert_int_equal(fx_step(&x), 0);
	}
	proxy_says(&x, reply + i);
	assert_int_equal(fx_step(&x), 1);
	fx_close(&x);

	/* A proxy that needs no authentication may pick "none". */
	fx_open(&x, "  username: alice\n  password: s3cret\n");
	assert_int_equal(fx_step(&x), 0);
	expect_sent(&x, "05020002");
	proxy_says(&x, "0500");
	assert_int_equal(fx_step(&x), 0);
	expect_sent(&x, "050100" "01" "c0000201" "01bb");
	fx_close(&x);
}

static void
test_failures(void **state)
{
	struct fx	x;

	(void)state;
	/* Wrong password: the user is named, the password never. */
	fx_open(&x, "  username: \"al\\nice\"\n  password: s3cret\n");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "0502");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "0101");
	assert_int_equal(fx_step(&x), -1);
	assert_string_equal(x.why, "socks5 authentication failed");
	assert_non_null(strstr(x.detail, "'al?ice'"));
	assert_null(strstr(x.detail, "s3cret"));
	assert_int_equal(x.rep, 0);
	fx_close(&x);

	/* ...or it just closes after the credentials. */
	fx_open(&x, "  username: alice\n  password: s3cret\n");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "0502");
	assert_int_equal(fx_step(&x), 0);
	shutdown(x.peer, SHUT_WR);
	assert_int_equal(fx_step(&x), -1);
	assert_string_equal(x.why, "socks5 authentication failed");
	fx_close(&x);

	/* CONNECT refused: the reply's meaning, and the code. */
	fx_open(&x, "");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "0500");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "050500" "01" "00000000" "0000");
	assert_int_equal(fx_step(&x), -1);
	assert_string_equal(x.why, "socks5 CONNECT failed");
	assert_int_equal(x.rep, SOCKS5_REP_REFUSED);
	assert_non_null(strstr(x.detail, "connection refused (reply 5)"));
	fx_close(&x);

	/* No acceptable method: without credentials, a hint. */
	fx_open(&x, "");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "05ff");
	assert_int_equal(fx_step(&x), -1);
	assert_string_equal(x.why, "socks5 proxy refused our methods");
	assert_non_null(strstr(x.detail, "username and password"));
	fx_close(&x);

	/* A method never offered. */
	fx_open(&x, "");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "0502");
	assert_int_equal(fx_step(&x), -1);
	assert_string_equal(x.why, "socks5 proxy protocol error");
	assert_non_null(strstr(x.detail, "0x02"));
	fx_close(&x);

	/* Not a SOCKS5 proxy at all. */
	fx_open(&x, "");
	assert_int_equal(fx_step(&x), 0);
	assert_int_equal(write(x.peer, "HTTP/1.1 400", 12), 12);
	assert_int_equal(fx_step(&x), -1);
	assert_string_equal(x.why, "socks5 proxy protocol error");
	fx_close(&x);

	/* Closed mid-reply. */
	fx_open(&x, "");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "0500");
	assert_int_equal(fx_step(&x), 0);
	proxy_says(&x, "050000");
	shutdown(x.peer, SHUT_WR);
	assert_int_equal(fx_step(&x), -1);
	assert_string_equal(x.why, "socks5 proxy closed the connection");
	assert_non_null(strstr(x.detail, "connect"));
	fx_close(&x);

	flow_socks5_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_auth),
		cmocka_unit_test(test_userpass),
		cmocka_unit_test(test_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
