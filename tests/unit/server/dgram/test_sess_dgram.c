/*
 * sess_dgram and the server's memory budget (max_buffer_memory): what a
 * datagram session charges (its state while open, its buffers while they
 * hold data), a datagram toward the client dropped and counted when the
 * budget has no buffer for it, the stream from the client paused (not
 * failed) until memory is free, and every charge given back at the end.
 * The client's stream is a plain outer on a socketpair; the target is a
 * UDP socket on 127.0.0.1 (allowed by the test's egress list).
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/addr.h"
#include "conf/conf.h"
#include "wire/frame.h"
#include "core/limit.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "wire/proto.h"
#include "server/dgram/sess_dgram.h"
#include "server/dgram/sess_dgram_int.h"

struct fx {
	struct loop		*l;
	struct conf		*c;
	struct limit_mem	 m;
	int			 cli;		/* the client's end */
	struct outer		*o;
	struct loop_fd		 lfd;
	struct sess_dgram	*d;
	bool			 ended;
	int			 target;
	struct addr		 taddr;
	struct sockaddr_in	 peer;		/* the session's socket */
};

static void
fx_on_outer(struct loop_fd *lfd, uint32_t ev)
{
	struct fx	*f = container_of(lfd, struct fx, lfd);

	sess_dgram_on_outer(f->d, ev);
}

static void
fx_end(void *arg, const char *reason, int err)
{
	struct fx	*f = arg;

	(void)reason;
	(void)err;
	f->ended = true;
}

static void
fx_run(struct fx *f, int n)
{
	while (n-- > 0)
		(void)loop_run_once(f->l, 20);
}

static void fx_send(struct fx *, const char *);

/* early: the first frame comes with the request header ("ping" to the
 * target); the status then waits for a reply. */
static void
fx_init_early(struct fx *f, size_t max, bool early)
{
	static const char yaml[] = "server:\n  listen: 203.0.113.1:443\n"
	    "  cert: /c.pem\n  cert_key: /k.pem\n"
	    "  users:\n    - name: a\n"
	    "      key: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
	    "  egress:\n    allow: [127.0.0.0/8]\n";
	struct sess_dgram_cfg	 dc;
	struct sockaddr_in	 sin;
	socklen_t		 sl = sizeof(sin);
	char			 err[256], hp[32];
	int			 sv[2];
	uint8_t			 st;

	memset(f, 0, sizeof(*f));
	f->c = conf_load_buf("t.yaml", yaml, strlen(yaml), err, sizeof(err));
	if (f->c == NULL)
		fail_msg("%s", err);
	assert_non_null(f->l = loop_new());
	limit_mem_init(&f->m, max, 64 * 1024);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
	    sv), 0);
	f->cli = sv[1];
	assert_non_null(f->o = outer_new(NULL, sv[0], false, NULL));
	assert_int_equal(loop_fd_add(f->l, &f->lfd, sv[0], EPOLLIN,
	    fx_on_outer), 0);

	f->target = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	assert_true(f->target >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(f->target, (struct sockaddr *)&sin,
	    sizeof(sin)), 0);
	assert_int_equal(getsockname(f->target, (struct sockaddr *)&sin, &sl),
	    0);
	snprintf(hp, sizeof(hp), "127.0.0.1:%u", ntohs(sin.sin_port));
	assert_int_equal(addr_parse(&f->taddr, hp), 0);

	memset(&dc, 0, sizeof(dc));
	dc.loop = f->l;
	dc.conf = f->c;
	dc.outer = f->o;
	dc.outer_lfd = &f->lfd;
	dc.kind = PROTO_KIND_UDP;
	dc.id = 1;
	dc.mem = &f->m;
	dc.end = fx_end;
	dc.arg = f;
	if (early) {
		struct proto_dest	 dst;
		uint8_t			 fr[64];
		ssize_t			 n;

		frame_dest_from_addr(&dst, &f->taddr);
		assert_true((n = frame_encode(fr, sizeof(fr), &dst, "ping",
		    4)) > 0);
		assert_non_null(f->d = sess_dgram_new(&dc, fr, (size_t)n));
		assert_true(sess_dgram_held(f->d));
		sess_dgram_on_outer(f->d, 0);
		return;
	}
	assert_non_null(f->d = sess_dgram_new(&dc, (const uint8_t *)"", 0));
	assert_false(sess_dgram_held(f->d));
	/* At the start: its state, the status byte's buffer, the (empty)
	 * buffer from the client: at most what admission asks room for. */
	assert_true(f->m.used > sizeof(struct sess_dgram));
	assert_true(f->m.used <= sess_dgram_start_size());
	sess_dgram_on_outer(f->d, 0);
	assert_int_equal(read(f->cli, &st, 1), 1);
	assert_int_equal(st, PROTO_OK);
	/* Idle: only the state. */
	assert_int_equal(f->m.used, sizeof(struct sess_dgram));
}

static void
fx_init(struct fx *f, size_t max)
{
	fx_init_early(f, max, false);
}

static void
fx_free(struct fx *f)
{
	loop_fd_del(f->l, &f->lfd);
	sess_dgram_free(f->d);
	/* Every charge given back, none twice. */
	assert_int_equal(f->m.used, 0);
	assert_true(!limit_mem_waiting(&f->m));
	outer_free(f->o);
	close(f->cli);
	close(f->target);
	loop_free(f->l);
	conf_free(f->c);
}

/* The client sends one frame to the target. */
static void
fx_send(struct fx *f, const char *msg)
{
	struct proto_dest	 dst;
	uint8_t			 fr[256];
	ssize_t			 n;

	frame_dest_from_addr(&dst, &f->taddr);
	n = frame_encode(fr, sizeof(fr), &dst, msg, strlen(msg));
	assert_true(n > 0);
	assert_int_equal(write(f->cli, fr, (size_t)n), n);
}

/* The target's datagram, if one came within a few loop turns. */
static bool
fx_target_got(struct fx *f, const char *msg)
{
	char		 b[256];
	socklen_t	 sl = sizeof(f->peer);
	ssize_t		 n = -1;
	int		 i;

	for (i = 0; i < 20 && n < 0; i++) {
		fx_run(f, 1);
		n = recvfrom(f->target, b, sizeof(b), 0,
		    (struct sockaddr *)&f->peer, &sl);
	}
	return n == (ssize_t)strlen(msg) && memcmp(b, msg, (size_t)n) == 0;
}

static void
fx_reply(struct fx *f, const char *msg)
{
	assert_int_equal(sendto(f->target, msg, strlen(msg), 0,
	    (struct sockaddr *)&f->peer, sizeof(f->peer)),
	    (ssize_t)strlen(msg));
	fx_run(f, 3);
}

/* The client's frame from the target, if one came. */
static bool
fx_client_got(struct fx *f, const char *msg)
{
	struct proto_dest	 src;
	const uint8_t		*p;
	uint8_t			 b[512];
	size_t			 plen;
	ssize_t			 n;

	n = read(f->cli, b, sizeof(b));
	if (n <= 0)
		return false;
	assert_int_equal(frame_parse(b, (size_t)n, &src, &p, &plen), n);
	return plen == strlen(msg) && memcmp(p, msg, plen) == 0;
}

static void
test_charges(void **state)
{
	struct fx	f;

	(void)state;
	fx_init(&f, 0);
	fx_send(&f, "ping");
	assert_true(fx_target_got(&f, "ping"));
	assert_int_equal(f.m.used, sizeof(struct sess_dgram));
	fx_reply(&f, "pong");
	assert_true(fx_client_got(&f, "pong"));
	assert_int_equal(f.m.used, sizeof(struct sess_dgram));
	assert_true(f.m.peak <= sess_dgram_start_size());
	assert_int_equal(sess_dgram_stats(f.d)->nomem, 0);
	assert_false(f.ended);
	fx_free(&f);
}

static void
test_budget_full(void **state)
{
	const struct sess_dgram_stats	*st;
	struct fx			 f;

	(void)state;
	fx_init(&f, 0);
	/* Room for the buffer from the client, not for the one toward it:
	 * the reply is dropped and counted, the session goes on. */
	f.m.max = sizeof(struct sess_dgram) + 100 * 1024;
	fx_send(&f, "ping");
	assert_true(fx_target_got(&f, "ping"));
	fx_reply(&f, "pong");
	fx_reply(&f, "pong2");
	st = sess_dgram_stats(f.d);
	assert_int_equal(st->nomem, 2);
	assert_int_equal(st->dropped, 2);
	assert_int_equal(st->dgrams_down, 0);
	assert_false(fx_client_got(&f, "pong"));
	assert_true(f.m.used <= f.m.max);
	assert_false(f.ended);
	/* Memory again: the next reply goes through. */
	f.m.max = 0;
	fx_reply(&f, "pong3");
	assert_true(fx_client_got(&f, "pong3"));

	/* No room even for the buffer from the client: the frame waits in
	 * the stream (the session queued for memory), and goes once memory
	 * is free. */
	f.m.max = f.m.used;
	fx_send(&f, "later");
	assert_false(fx_target_got(&f, "later"));
	assert_false(f.ended);
	assert_true(f.d->rx_paused);
	assert_false(!limit_mem_waiting(&f.m));
	assert_true(f.m.used <= f.m.max);
	f.m.max = 0;
	limit_mem_wake(&f.m);
	assert_true(fx_target_got(&f, "later"));
	assert_true(!limit_mem_waiting(&f.m));

	/* Paused when it ends: the waiter is taken off the queue. */
	f.m.max = f.m.used;
	fx_send(&f, "never");
	assert_false(fx_target_got(&f, "never"));
	assert_false(!limit_mem_waiting(&f.m));
	fx_free(&f);
}

/*
 * The first frame came with the header: the OK status waits, and leaves
 * with the first reply frame, in one write (one read here: the client's
 * end is a socketpair, so one write is one read); or alone once the
 * session's deadline releases it.
 */
static void
test_status_with_reply(void **state)
{
	struct proto_dest	 src;
	const uint8_t		*p;
	uint8_t			 b[512];
	size_t			 plen;
	ssize_t			 n;
	struct fx		 f;

	(void)state;
	fx_init_early(&f, 0, true);
	assert_true(fx_target_got(&f, "ping"));
	fx_run(&f, 3);
	assert_int_equal(read(f.cli, b, sizeof(b)), -1);	/* held */
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	assert_true(sess_dgram_held(f.d));
	fx_reply(&f, "pong");
	assert_false(sess_dgram_held(f.d));
	n = read(f.cli, b, sizeof(b));
	assert_true(n > 1);
	assert_int_equal(b[0], PROTO_OK);
	assert_int_equal(frame_parse(b + 1, (size_t)n - 1, &src, &p, &plen),
	    n - 1);
	assert_int_equal(plen, 4);
	assert_memory_equal(p, "pong", 4);
	fx_free(&f);

	fx_init_early(&f, 0, true);
	assert_true(fx_target_got(&f, "ping"));
	assert_int_equal(read(f.cli, b, sizeof(b)), -1);
	sess_dgram_release(f.d);
	assert_false(sess_dgram_held(f.d));
	assert_int_equal(read(f.cli, b, sizeof(b)), 1);
	assert_int_equal(b[0], PROTO_OK);
	sess_dgram_release(f.d);	/* twice: nothing more */
	assert_int_equal(read(f.cli, b, sizeof(b)), -1);
	assert_false(f.ended);
	fx_free(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_charges),
		cmocka_unit_test(test_budget_full),
		cmocka_unit_test(test_status_with_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
