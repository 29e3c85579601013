/*
 * Fuzz target: the client's SOCKS5 parsers (socks5.h) on what a proxy
 * sends -- the method choice, the RFC 1929 auth reply, the reply to a
 * request, and a UDP datagram from the relay -- each run on the input,
 * and then the input read as one session would read it (choice, auth
 * reply when username/password was chosen, reply, then the rest as a
 * datagram).  The encoders get the parsed addresses back, and credentials
 * cut from the input.
 *
 * Oracles besides ASan/UBSan, from RFC 1928/1929 and socks5.h rather than
 * socks5.c:
 *  - a reference parser here gives the exact answer (length, need more,
 *    malformed) for every prefix, each parsed from a buffer of exactly its
 *    size; so a prefix is judged as soon as it can be and never before,
 *    and bytes after a complete message never change the verdict;
 *  - parsed fields are the input's bytes (a name NUL-terminated, without
 *    NUL, of its stated length);
 *  - round trips: a reply's address encodes (as a request) to the reply's
 *    bytes after RSV; a datagram's address to the header after RSV, with
 *    socks5_udp_hdr_len agreeing, the payload the rest of the datagram;
 *  - socks5_reply_want never asks for a byte past the reply: reading what
 *    it asks for, from nothing, ends exactly at the reply's end, and it
 *    says 0 from there on;
 *  - the auth request has the RFC 1929 layout exactly when both
 *    credentials are 1..255 bytes, and is refused otherwise; too small an
 *    output buffer is refused, never overrun.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/socks5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_socks5: %s:%d: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

enum fz_msg { FZ_METHOD, FZ_AUTH, FZ_REPLY, FZ_UDP };

/* ---- the reference, from the RFCs ------------------------------------------ */

/* ATYP ADDR PORT: its length, 0 need more, -1 malformed. */
static ssize_t
ref_addr(const uint8_t *in, size_t len)
{
	size_t total, i;

	if (len < 1)
		return 0;
	switch (in[0]) {
	case 1:
		total = 1 + 4 + 2;
		break;
	case 4:
		total = 1 + 16 + 2;
		break;
	case 3:
		if (len < 2)
			return 0;
		if (in[1] == 0)
			return -1;
		for (i = 2; i < len && i < 2 + (size_t)in[1]; i++)
			if (in[i] == 0)
				return -1;
		total = 2 + (size_t)in[1] + 2;
		break;
	default:
		return -1;
	}
	return len < total ? 0 : (ssize_t)total;
}

static ssize_t
ref_parse(enum fz_msg m, const uint8_t *in, size_t len)
{
	ssize_t n;

	switch (m) {
	case FZ_METHOD:
	case FZ_AUTH:
		if (len >= 1 && in[0] != (m == FZ_METHOD ? 5 : 1))
			return -1;
		return len < 2 ? 0 : 2;
	case FZ_REPLY:
		if (len >= 1 && in[0] != 5)
			return -1;
		if (len < 3)
			return 0;
		n = ref_addr(in + 3, len - 3);
		return n <= 0 ? n : 3 + n;
	case FZ_UDP:
		/* Whole datagrams: short is malformed, a fragment too. */
		if (len < 3 || in[2] != 0)
			return -1;
		n = ref_addr(in + 3, len - 3);
		return n <= 0 ? -1 : 3 + n;
	}
	abort();
}

/* ---- the parsers under test -------------------------------------------------- */

struct fz_out {
	uint8_t			 byte;		/* method, auth status */
	struct socks5_reply	 reply;
	struct proto_dest	 a;		/* UDP source */
	const uint8_t		*payload;
	size_t			 plen;
};

static ssize_t
fz_parse(enum fz_msg m, const uint8_t *in, size_t len, struct fz_out *o)
{
	switch (m) {
	case FZ_METHOD:
		return socks5_method_parse(in, len, &o->byte);
	case FZ_AUTH:
		return socks5_auth_parse(in, len, &o->byte);
	case FZ_REPLY:
		return socks5_reply_parse(in, len, &o->reply);
	case FZ_UDP:
		return socks5_udp_parse(in, len, &o->a, &o->payload, &o->plen);
	}
	abort();
}

/* The address the parser returned is the one at in (ATYP first). */
static void
fz_check_addr(const struct proto_dest *a, const uint8_t *in, size_t n)
{
	size_t alen;

	FZ_CHECK(a->atyp == in[0]);
	switch (a->atyp) {
	case 1:
		alen = 4;
		FZ_CHECK(memcmp(a->ip, in + 1, 4) == 0);
		break;
	case 4:
		alen = 16;
		FZ_CHECK(memcmp(a->ip, in + 1, 16) == 0);
		break;
	case 3:
		alen = 1 + (size_t)in[1];
		FZ_CHECK(strnlen(a->domain, sizeof(a->domain)) == in[1]);
		FZ_CHECK(memcmp(a->domain, in + 2, in[1]) == 0);
		break;
	default:
		abort();
	}
	FZ_CHECK(n == 1 + alen + 2);
	FZ_CHECK(a->port == (uint16_t)(in[1 + alen] << 8 | in[2 + alen]));
}

/* Every prefix from an exact-size copy, against the reference; returns
 * the verdict for all len bytes. */
static ssize_t
fz_prefixes(enum fz_msg m, const uint8_t *in, size_t len, struct fz_out *o)
{
	uint8_t *copy;
	ssize_t r = 0, want;
	size_t l, upto;

	/* Past the longest message only the length can matter. */
	upto = len < SOCKS5_REPLY_MAX + 2 ? len : SOCKS5_REPLY_MAX + 2;
	for (l = 0; l <= len; l++) {
		if (l > upto && l != len)
			continue;
		if ((copy = malloc(l > 0 ? l : 1)) == NULL)
			abort();
		memcpy(copy, in, l);
		r = fz_parse(m, copy, l, o);
		want = ref_parse(m, copy, l);
		if (r != want) {
			fprintf(stderr, "fuzz_socks5: message %d, %zu bytes: "
			    "%zd, RFC says %zd\n", (int)m, l, r, want);
			abort();
		}
		if (r > 0 && m == FZ_UDP)
			FZ_CHECK(o->payload == copy + r &&
			    o->plen == l - (size_t)r);
		free(copy);
	}
	return r;
}

/* The client reads a reply in steps of socks5_reply_want(), so that the
 * target's first bytes behind it stay in the socket. */
static void
fz_reply_want(const uint8_t *in, size_t len)
{
	ssize_t total = ref_parse(FZ_REPLY, in, len), r;
	size_t l = 0, want, steps = 0;

	for (;;) {
		r = ref_parse(FZ_REPLY, in, l);
		if (r < 0)
			return;		/* malformed: the parser says so */
		want = socks5_reply_want(in, l);
		if (r > 0) {
			FZ_CHECK(want == 0 && (size_t)r == l);
			break;
		}
		FZ_CHECK(want >= 1);
		if (total > 0)
			FZ_CHECK(l + want <= (size_t)total);
		if (l + want > len)
			return;		/* the input ends first */
		l += want;
		FZ_CHECK(++steps <= SOCKS5_REPLY_MAX);
	}
	/* Bytes after the reply never make it ask for more. */
	FZ_CHECK(socks5_reply_want(in, len) == 0);
}

/* ---- round trips --------------------------------------------------------- */

static void
fz_reply_round_trip(const uint8_t *in, size_t n, const struct socks5_reply *r)
{
	uint8_t out[SOCKS5_REQ_MAX];
	ssize_t e;

	FZ_CHECK(r->rep == in[1]);
	fz_check_addr(&r->bnd, in + 3, n - 3);
	FZ_CHECK(socks5_rep_str(r->rep) != NULL);
	/* A request has the reply's layout: VER CMD RSV ATYP ADDR PORT. */
	e = socks5_request(out, sizeof(out), SOCKS5_CMD_CONNECT, &r->bnd);
	FZ_CHECK(e == (ssize_t)n);
	FZ_CHECK(out[0] == 5 && out[1] == SOCKS5_CMD_CONNECT && out[2] == 0);
	FZ_CHECK(memcmp(out + 3, in + 3, n - 3) == 0);
	FZ_CHECK(socks5_request(out, n - 1, SOCKS5_CMD_UDP, &r->bnd) == -1);
	FZ_CHECK(socks5_request(out, sizeof(out), 2, &r->bnd) == -1);
}

static void
fz_udp_round_trip(const uint8_t *in, size_t n, const struct fz_out *o)
{
	uint8_t out[SOCKS5_UDP_HDR_MAX];
	ssize_t e;

	fz_check_addr(&o->a, in + 3, n - 3);
	FZ_CHECK(socks5_udp_hdr_len(&o->a) == n);
	e = socks5_udp_encode_hdr(out, sizeof(out), &o->a);
	FZ_CHECK(e == (ssize_t)n);
	FZ_CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0);
	FZ_CHECK(memcmp(out + 3, in + 3, n - 3) == 0);
	FZ_CHECK(socks5_udp_encode_hdr(out, n - 1, &o->a) == -1);
}

/* Credentials: the first byte says how long the user name is (the rest
 * of the input, capped at 300, is the password); NULs end them early, as
 * in any C string. */
static void
fz_auth_encode(const uint8_t *data, size_t size)
{
	static char user[320], pass[320];
	uint8_t out[SOCKS5_AUTH_MAX + 8];
	size_t ul, pl, cap;
	ssize_t n;

	if (size < 1)
		return;
	ul = data[0] + (size_t)(data[0] & 1) * 44;	/* up to 299 */
	if (ul > size - 1)
		ul = size - 1;
	pl = size - 1 - ul < 300 ? size - 1 - ul : 300;
	memcpy(user, data + 1, ul);
	user[ul] = '\0';
	memcpy(pass, data + 1 + ul, pl);
	pass[pl] = '\0';
	ul = strlen(user);
	pl = strlen(pass);
	n = socks5_auth_encode(out, sizeof(out), user, pass);
	if (ul < 1 || ul > 255 || pl < 1 || pl > 255) {
		FZ_CHECK(n == -1);
		return;
	}
	FZ_CHECK(n == (ssize_t)(3 + ul + pl));
	FZ_CHECK(out[0] == 1 && out[1] == ul && out[2 + ul] == pl);
	FZ_CHECK(memcmp(out + 2, user, ul) == 0 &&
	    memcmp(out + 3 + ul, pass, pl) == 0);
	/* Exactly enough room works, one byte less does not. */
	cap = (size_t)n;
	FZ_CHECK(socks5_auth_encode(out, cap, user, pass) == n);
	FZ_CHECK(socks5_auth_encode(out, cap - 1, user, pass) == -1);
}

static void
fz_greeting(void)
{
	uint8_t out[SOCKS5_GREETING_MAX];
	ssize_t n;
	int up;

	for (up = 0; up <= 1; up++) {
		n = socks5_greeting(out, sizeof(out), up);
		FZ_CHECK(n == 3 + up && out[0] == 5 && out[1] == 1 + up &&
		    out[2] == SOCKS5_METHOD_NONE);
		if (up)
			FZ_CHECK(out[3] == SOCKS5_METHOD_USERPASS);
		FZ_CHECK(socks5_greeting(out, (size_t)n - 1, up) == -1);
	}
}

/* ---- one input ------------------------------------------------------------ */

/* The input as a session reads it; each message after the one before. */
static void
fz_session(const uint8_t *in, size_t len)
{
	struct fz_out o;
	ssize_t r;

	if ((r = fz_prefixes(FZ_METHOD, in, len, &o)) <= 0)
		return;
	in += r;
	len -= (size_t)r;
	if (o.byte == SOCKS5_METHOD_USERPASS) {
		if ((r = fz_prefixes(FZ_AUTH, in, len, &o)) <= 0 ||
		    o.byte != 0)
			return;
		in += r;
		len -= (size_t)r;
	} else if (o.byte != SOCKS5_METHOD_NONE)
		return;
	fz_reply_want(in, len);
	if ((r = fz_prefixes(FZ_REPLY, in, len, &o)) <= 0)
		return;
	fz_reply_round_trip(in, (size_t)r, &o.reply);
	if (o.reply.rep != SOCKS5_REP_OK)
		return;
	in += r;
	len -= (size_t)r;
	if ((r = fz_prefixes(FZ_UDP, in, len, &o)) > 0)
		fz_udp_round_trip(in, (size_t)r, &o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_out o;
	ssize_t r;
	int m;

	if (size > 4096)
		return 0;
	for (m = FZ_METHOD; m <= FZ_UDP; m++) {
		r = fz_prefixes((enum fz_msg)m, data, size, &o);
		if (r <= 0)
			continue;
		if (m == FZ_METHOD || m == FZ_AUTH)
			FZ_CHECK(o.byte == data[1]);
		else if (m == FZ_REPLY)
			fz_reply_round_trip(data, (size_t)r, &o.reply);
		else
			fz_udp_round_trip(data, (size_t)r, &o);
	}
	fz_reply_want(data, size);
	fz_session(data, size);
	fz_auth_encode(data, size);
	fz_greeting();
	return 0;
}
