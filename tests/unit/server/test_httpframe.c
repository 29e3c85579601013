/* httpframe: where the cover relay ends its TLS records (nginx's ends). */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "server/httpframe.h"

#define MAXREC	64

struct run {
	size_t	 rec[MAXREC];	/* record lengths written */
	size_t	 nrec;
	size_t	 held;		/* bytes left waiting at the end */
};

/* A response stream: a header with Content-Length n, then n bytes. */
static size_t
put_cl(char *out, const char *status, size_t n, bool body)
{
	int	 k = sprintf(out, "HTTP/1.1 %s\r\nServer: nginx\r\n"
	    "Content-Length: %zu\r\n\r\n", status, n);

	if (body)
		memset(out + k, 'x', n);
	return (size_t)k + (body ? n : 0);
}

/*
 * Feeds req to the cover, then rsp[0..n) arrives in pieces of `step`
 * bytes (0: all at once); after each piece the relay writes every record
 * httpframe_record() gives.  eof: the cover closes after the last piece.
 */
static void
run(struct run *r, const char *req, const char *rsp, size_t n, size_t step,
    bool eof)
{
	struct httpframe	*f = httpframe_new();
	size_t			 head = 0, avail = 0, k;

	assert_non_null(f);
	memset(r, 0, sizeof(*r));
	httpframe_requests(f, (const uint8_t *)req, strlen(req));
	while (avail < n || (eof && head < n)) {
		avail = step == 0 || n - avail < step ? n : avail + step;
		while (head < avail) {
			k = httpframe_record(f, (const uint8_t *)rsp + head,
			    avail - head, eof && avail == n);
			if (k == 0)
				break;
			assert_true(k <= HTTPFRAME_RECORD);
			assert_true(r->nrec < MAXREC);
			r->rec[r->nrec++] = k;
			httpframe_sent(f, k);
			head += k;
		}
	}
	r->held = n - head;
	httpframe_free(f);
}

static void
expect(const struct run *r, size_t held, size_t nrec, ...)
{
	va_list	ap;
	size_t	i;

	assert_int_equal(r->held, held);
	assert_int_equal(r->nrec, nrec);
	va_start(ap, nrec);
	for (i = 0; i < nrec; i++)
		assert_int_equal(r->rec[i], va_arg(ap, size_t));
	va_end(ap);
}

static void
test_pipelined(void **state)
{
	char		 rsp[512];
	size_t		 a, b;
	struct run	 r;

	(void)state;
	a = put_cl(rsp, "200 OK", 100, true);
	b = put_cl(rsp + a, "404 Not Found", 20, true);
	run(&r, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /n HTTP/1.1\r\nHost: x\r\n\r\n", rsp, a + b, 0, false);
	expect(&r, 0, 2, a, b);
	/* Byte by byte, the same records: nothing leaves before its end. */
	run(&r, "GET / HTTP/1.1\r\n\r\nGET /n HTTP/1.1\r\n\r\n", rsp, a + b,
	    1, false);
	expect(&r, 0, 2, a, b);
}

static void
test_head_no_body(void **state)
{
	char		 rsp[512];
	size_t		 a, b, c;
	struct run	 r;

	(void)state;
	/* HEAD's answer announces a body it does not carry; so do 304s. */
	a = put_cl(rsp, "200 OK", 5000, false);
	b = (size_t)sprintf(rsp + a, "HTTP/1.1 304 Not Modified\r\n"
	    "ETag: \"5f5e-137\"\r\n\r\n");
	c = put_cl(rsp + a + b, "200 OK", 7, true);
	run(&r, "HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"
	    "GET / HTTP/1.0\r\n\r\n", rsp, a + b + c, 0, false);
	expect(&r, 0, 3, a, b, c);
	run(&r, "HEAD / HTTP/1.1\r\n\r\n", rsp, a, 1, false);
	expect(&r, 0, 1, a);
	/* 204: no body either. */
	a = (size_t)sprintf(rsp, "HTTP/1.1 204 No Content\r\n\r\n");
	b = put_cl(rsp + a, "200 OK", 3, true);
	run(&r, "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", rsp, a + b,
	    0, false);
	expect(&r, 0, 2, a, b);
}

static void
test_big_body(void **state)
{
	char		*rsp = malloc(70000);
	size_t		 a, b;
	struct run	 r;

	(void)state;
	assert_non_null(rsp);
	/* Full records, the last one short and ending with the response;
	 * pieces of any size change nothing. */
	a = put_cl(rsp, "200 OK", 50000, true);
	b = put_cl(rsp + a, "200 OK", 311, true);
	run(&r, "GET /b HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", rsp, a + b,
	    0, false);
	expect(&r, 0, 5, (size_t)16384, (size_t)16384, (size_t)16384,
	    a - 3 * 16384, b);
	run(&r, "GET /b HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", rsp, a + b,
	    1000, false);
	expect(&r, 0, 5, (size_t)16384, (size_t)16384, (size_t)16384,
	    a - 3 * 16384, b);
	/* Half of it, then the cover waits: held (nginx has not written
	 * either); the cover's close lets it all out. */
	run(&r, "GET /b HTTP/1.1\r\n\r\n", rsp, 20000, 0, false);
	expect(&r, 20000 - 16384, 1, (size_t)16384);
	run(&r, "GET /b HTTP/1.1\r\n\r\n", rsp, 20000, 0, true);
	expect(&r, 0, 2, (size_t)16384, (size_t)20000 - 16384);
	free(rsp);
}

static void
test_chunked(void **state)
{
	char		 rsp[512];
	size_t		 a, b;
	struct run	 r;

	(void)state;
	a = (size_t)sprintf(rsp, "HTTP/1.1 200 OK\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n"
	    "0\r\nX-Trailer: 1\r\n\r\n");
	b = put_cl(rsp + a, "200 OK", 4, true);
	run(&r, "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", rsp, a + b,
	    0, false);
	expect(&r, 0, 2, a, b);
	/* Chunk by chunk: nginx fills its buffer across chunks too. */
	run(&r, "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", rsp, a + b,
	    1, false);
	expect(&r, 0, 2, a, b);
}

static void
test_request_bodies(void **state)
{
	char		 rsp[512];
	size_t		 a, b;
	struct run	 r;

	(void)state;
	/* Request bodies are skipped, whatever they hold: the HEAD after
	 * them is found. */
	a = put_cl(rsp, "405 Not Allowed", 50, true);
	b = put_cl(rsp + a, "200 OK", 9999, false);
	run(&r, "POST / HTTP/1.1\r\nContent-Length: 22\r\n\r\n"
	    "HEAD / HTTP/1.1\r\n\r\nxyz"
	    "HEAD / HTTP/1.1\r\n\r\n", rsp, a + b, 0, false);
	expect(&r, 0, 2, a, b);
	run(&r, "\r\nPOST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"
	    "4\r\nHEAD\r\n0\r\n\r\n"
	    "HEAD / HTTP/1.1\r\n\r\n", rsp, a + b, 0, false);
	expect(&r, 0, 2, a, b);
}

static void
test_interim(void **state)
{
	char		 rsp[512];
	size_t		 a, b;
	struct run	 r;

	(void)state;
	a = (size_t)sprintf(rsp, "HTTP/1.1 100 Continue\r\n\r\n");
	b = put_cl(rsp + a, "200 OK", 10, true);
	run(&r, "PUT / HTTP/1.1\r\nExpect: 100-continue\r\n"
	    "Content-Length: 3\r\n\r\nabc", rsp, a + b, 0, false);
	expect(&r, 0, 2, a, b);
}

/* What cannot be followed is written as it comes, for good. */
static void
test_not_followed(void **state)
{
	char		 rsp[512];
	size_t		 a, b;
	struct run	 r;

	(void)state;
	a = put_cl(rsp, "200 OK", 10, true);
	b = (size_t)sprintf(rsp + a, "HTTP/1.0 200 OK\r\n\r\nuntil close");
	run(&r, "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n", rsp, a + b,
	    0, false);
	expect(&r, 0, 2, a, b);
	/* Not HTTP. */
	run(&r, "GET /\r\n\r\n", "<html>", 6, 1, false);
	assert_int_equal(r.held, 0);
	assert_int_equal(r.nrec, 6);
	/* A request it cannot read: whose answers follow is unknown. */
	a = put_cl(rsp, "400 Bad Request", 5000, false);
	run(&r, "garbage \x01\x02\r\n\r\n", rsp, a, 1, false);
	assert_int_equal(r.held, 0);
	/* A body that arrives short of its length waits, and the close
	 * lets it out. */
	a = put_cl(rsp, "200 OK", 100, true);
	run(&r, "GET / HTTP/1.1\r\n\r\n", rsp, a - 1, 0, false);
	expect(&r, a - 1, 0);
	/* Upgrades and CONNECT become tunnels. */
	a = (size_t)sprintf(rsp, "HTTP/1.1 101 Switching\r\n\r\nraw");
	run(&r, "GET / HTTP/1.1\r\nUpgrade: x\r\n\r\n", rsp, a, 0, false);
	expect(&r, 0, 1, a);
}

/* Amid a request, the cover's close is a timeout's (no close_notify). */
static void
test_request_open(void **state)
{
	static const struct {
		const char	*req;
		bool		 open;
	} t[] = {
		{ "", false },
		{ "GET / HTTP/1.1\r\n\r\n", false },
		{ "\r\n", false },
		{ "GET / HTTP/1.1\r\n\r\nGET /", true },
		{ "GET / HTTP/1.1\r\nHost: x\r\n", true },
		{ "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc", true },
		{ "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde",
		    false },
		{ "\x01", false },	/* not a request: nginx's 400 */
		{ "a", false },
		{ "GE\x01", false },
		{ "garbage \x01\r\n\r\n", false },
	};
	struct httpframe	*f;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_non_null(f = httpframe_new());
		httpframe_requests(f, (const uint8_t *)t[i].req,
		    strlen(t[i].req));
		if (httpframe_request_open(f) != t[i].open)
			fail_msg("%zu: \"%s\"", i, t[i].req);
		httpframe_free(f);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_head_no_body),
		cmocka_unit_test(test_big_body),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_request_bodies),
		cmocka_unit_test(test_interim),
		cmocka_unit_test(test_not_followed),
		cmocka_unit_test(test_request_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
