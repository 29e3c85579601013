/*
 * socks5: the client-side codec (RFC 1928, RFC 1929) -- vectors written
 * out by hand from the RFCs' message layouts, every prefix of a message
 * "need more", malformed input rejected as soon as it shows -- and the
 * client.protocol keys socks5, direct and block in conf.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "wire/socks5.h"

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
dest_v4(struct proto_dest *d, const char *ip4hex, uint16_t port)
{
	memset(d, 0, sizeof(*d));
	d->atyp = PROTO_ATYP_IPV4;
	unhex(ip4hex, d->ip);
	d->port = port;
}

static void
dest_v6(struct proto_dest *d, const char *ip6hex, uint16_t port)
{
	memset(d, 0, sizeof(*d));
	d->atyp = PROTO_ATYP_IPV6;
	unhex(ip6hex, d->ip);
	d->port = port;
}

static void
dest_dom(struct proto_dest *d, const char *name, uint16_t port)
{
	memset(d, 0, sizeof(*d));
	d->atyp = PROTO_ATYP_DOMAIN;
	assert_true(strlen(name) < sizeof(d->domain));
	memcpy(d->domain, name, strlen(name) + 1);
	d->port = port;
}

static void
assert_dest_equal(const struct proto_dest *a, const struct proto_dest *b)
{
	assert_int_equal(a->atyp, b->atyp);
	assert_int_equal(a->port, b->port);
	if (a->atyp == PROTO_ATYP_DOMAIN)
		assert_string_equal(a->domain, b->domain);
	else
		assert_memory_equal(a->ip, b->ip,
		    a->atyp == PROTO_ATYP_IPV4 ? 4 : 16);
}

/* ---- greeting, method, RFC 1929 --------------------------------------- */

static void
test_greeting(void **state)
{
	uint8_t	out[8], want[8], m = 0x55;
	size_t	n;

	(void)state;
	n = unhex("050100", want);
	assert_int_equal(socks5_greeting(out, sizeof(out), false), (ssize_t)n);
	assert_memory_equal(out, want, n);
	n = unhex("05020002", want);
	assert_int_equal(socks5_greeting(out, sizeof(out), true), (ssize_t)n);
	assert_memory_equal(out, want, n);
	assert_int_equal(socks5_greeting(out, 3, true), -1);
	assert_int_equal(socks5_greeting(out, 2, false), -1);

	assert_int_equal(socks5_method_parse(want, 0, &m), 0);
	n = unhex("05", want);
	assert_int_equal(socks5_method_parse(want, n, &m), 0);
	n = unhex("0502", want);
	assert_int_equal(socks5_method_parse(want, n, &m), 2);
	assert_int_equal(m, SOCKS5_METHOD_USERPASS);
	n = unhex("05ff", want);
	assert_int_equal(socks5_method_parse(want, n, &m), 2);
	assert_int_equal(m, SOCKS5_METHOD_REFUSED);
	/* Version judged at the first byte; bytes after the message ignored. */
	n = unhex("04", want);
	assert_int_equal(socks5_method_parse(want, n, &m), -1);
	n = unhex("0500ffff", want);
	assert_int_equal(socks5_method_parse(want, n, &m), 2);
	assert_int_equal(m, SOCKS5_METHOD_NONE);
	/* An HTTP proxy answering: not SOCKS5. */
	assert_int_equal(socks5_method_parse((const uint8_t *)"HTTP/1.1", 8,
	    &m), -1);
}

static void
test_auth(void **state)
{
	uint8_t	out[SOCKS5_AUTH_MAX], want[SOCKS5_AUTH_MAX], st = 0x55;
	char	u255[256], u256[257];
	size_t	n;

	(void)state;
	n = unhex("0105616c69636506733363726574", want);
	assert_int_equal(socks5_auth_encode(out, sizeof(out), "alice",
	    "s3cret"), (ssize_t)n);
	assert_memory_equal(out, want, n);
	assert_int_equal(socks5_auth_encode(out, n, "alice", "s3cret"),
	    (ssize_t)n);
	assert_int_equal(socks5_auth_encode(out, n - 1, "alice", "s3cret"), -1);
	assert_int_equal(socks5_auth_encode(out, sizeof(out), "", "x"), -1);
	assert_int_equal(socks5_auth_encode(out, sizeof(out), "x", ""), -1);

	memset(u255, 'u', 255);
	u255[255] = '\0';
	memset(u256, 'u', 256);
	u256[256] = '\0';
	assert_int_equal(socks5_auth_encode(out, sizeof(out), u255, u255),
	    SOCKS5_AUTH_MAX);
	assert_int_equal(out[1], 255);
	assert_int_equal(out[2 + 255], 255);
	assert_int_equal(socks5_auth_encode(out, sizeof(out), u256, "x"), -1);
	assert_int_equal(socks5_auth_encode(out, sizeof(out), "x", u256), -1);

	assert_int_equal(socks5_auth_parse(want, 0, &st), 0);
	n = unhex("01", want);
	assert_int_equal(socks5_auth_parse(want, n, &st), 0);
	n = unhex("0100", want);
	assert_int_equal(socks5_auth_parse(want, n, &st), 2);
	assert_int_equal(st, 0);
	n = unhex("0101", want);
	assert_int_equal(socks5_auth_parse(want, n, &st), 2);
	assert_int_equal(st, 1);
	/* Some proxies answer with the SOCKS version: not RFC 1929. */
	n = unhex("05", want);
	assert_int_equal(socks5_auth_parse(want, n, &st), -1);
}

/* ---- requests and replies -------------------------------------------- */

static void
check_request(uint8_t cmd, const struct proto_dest *d, const char *vec)
{
	uint8_t	out[SOCKS5_REQ_MAX], want[SOCKS5_REQ_MAX];
	size_t	n = unhex(vec, want);

	assert_int_equal(socks5_request(out, sizeof(out), cmd, d), (ssize_t)n);
	assert_memory_equal(out, want, n);
	assert_int_equal(socks5_request(out, n, cmd, d), (ssize_t)n);
	assert_int_equal(socks5_request(out, n - 1, cmd, d), -1);
}

static void
test_request(void **state)
{
	struct proto_dest	 d;
	uint8_t			 out[SOCKS5_REQ_MAX + 8];
	char			 name[300];

	(void)state;
	dest_v4(&d, "c0000201", 443);
	check_request(SOCKS5_CMD_CONNECT, &d, "050100" "01" "c0000201" "01bb");
	dest_v6(&d, "20010db8000000000000000000000001", 8080);
	check_request(SOCKS5_CMD_CONNECT, &d, "050100" "04"
	    "20010db8000000000000000000000001" "1f90");
	dest_dom(&d, "example.com", 80);
	check_request(SOCKS5_CMD_CONNECT, &d, "050100" "03"
	    "0b6578616d706c652e636f6d" "0050");
	/* UDP ASSOCIATE with the unspecified address: "any source". */
	dest_v4(&d, "00000000", 0);
	check_request(SOCKS5_CMD_UDP, &d, "050300" "01" "00000000" "0000");

	/* The longest name: SOCKS5_REQ_MAX. */
	memset(name, 'a', 255);
	name[255] = '\0';
	dest_dom(&d, name, 1);
	assert_int_equal(socks5_request(out, sizeof(out), SOCKS5_CMD_CONNECT,
	    &d), SOCKS5_REQ_MAX);
	assert_int_equal(out[4], 255);

	/* Invalid: command, address type, empty name. */
	assert_int_equal(socks5_request(out, sizeof(out), 2, &d), -1);
	d.atyp = 2;
	assert_int_equal(socks5_request(out, sizeof(out), SOCKS5_CMD_CONNECT,
	    &d), -1);
	dest_dom(&d, "", 80);
	assert_int_equal(socks5_request(out, sizeof(out), SOCKS5_CMD_CONNECT,
	    &d), -1);
}

static void
check_reply(const char *vec, uint8_t rep, const struct proto_dest *bnd)
{
	struct socks5_reply	 r;
	uint8_t			 in[SOCKS5_REPLY_MAX + 8];
	size_t			 n = unhex(vec, in), i;

	assert_int_equal(socks5_reply_parse(in, n, &r), (ssize_t)n);
	assert_int_equal(r.rep, rep);
	assert_dest_equal(&r.bnd, bnd);
	/* Every proper prefix needs more; extra bytes (relayed data) are
	 * not the reply's. */
	for (i = 0; i < n; i++) {
		assert_int_equal(socks5_reply_parse(in, i, &r), 0);
		/* Reading what it asks for never reads past the reply. */
		assert_true(socks5_reply_want(in, i) >= 1);
		assert_true(i + socks5_reply_want(in, i) <= n);
	}
	assert_int_equal(socks5_reply_want(in, n), 0);
	in[n] = 0xff;
	in[n + 1] = 0x00;
	assert_int_equal(socks5_reply_parse(in, n + 2, &r), (ssize_t)n);
}

static void
test_reply(void **state)
{
	struct proto_dest	 d;

	(void)state;
	dest_v4(&d, "0a000001", 1080);
	check_reply("050000" "01" "0a000001" "0438", SOCKS5_REP_OK, &d);
	dest_v4(&d, "00000000", 0);
	check_reply("050500" "01" "00000000" "0000", SOCKS5_REP_REFUSED, &d);
	dest_v6(&d, "fd000000000000000000000000000001", 40000);
	check_reply("050000" "04" "fd000000000000000000000000000001" "9c40",
	    SOCKS5_REP_OK, &d);
	dest_dom(&d, "relay.example", 5353);
	check_reply("050000" "03" "0d72656c61792e6578616d706c65" "14e9",
	    SOCKS5_REP_OK, &d);
	/* An unassigned code is still a reply; the caller treats it as a
	 * failure.  RSV is not checked. */
	dest_v4(&d, "00000000", 0);
	check_reply("05427f" "01" "00000000" "0000", 0x42, &d);
}

static void
test_reply_bad(void **state)
{
	struct socks5_reply	 r;
	uint8_t			 in[64];
	size_t			 n;

	(void)state;
	/* Version: wrong at the first byte. */
	n = unhex("04", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), -1);
	n = unhex("00", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), -1);
	/* Address type: wrong as soon as it arrives. */
	n = unhex("05000002", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), -1);
	n = unhex("05000000", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), -1);
	/* Empty domain; a NUL inside the name, as soon as it arrives. */
	n = unhex("0500000300", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), -1);
	n = unhex("050000030561", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), 0);
	n = unhex("05000003056100", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), -1);
	/* A truncated good reply is never malformed. */
	n = unhex("0500000305616263", in);
	assert_int_equal(socks5_reply_parse(in, n, &r), 0);

	assert_string_equal(socks5_rep_str(SOCKS5_REP_REFUSED),
	    "connection refused");
	assert_string_equal(socks5_rep_str(SOCKS5_REP_DENIED),
	    "connection not allowed by ruleset");
	assert_string_equal(socks5_rep_str(SOCKS5_REP_ATYP),
	    "address type not supported");
	assert_string_equal(socks5_rep_str(9), "unassigned reply code");
	assert_string_equal(socks5_rep_str(0xff), "unassigned reply code");
}

/* ---- UDP --------------------------------------------------------------- */

static void
check_udp(const struct proto_dest *d, const char *hdr, const char *pl)
{
	uint8_t			 want[600], out[600];
	struct proto_dest	 a;
	const uint8_t		*p = NULL;
	size_t			 hlen = unhex(hdr, want), plen = strlen(pl), got;

	memcpy(want + hlen, pl, plen);
	assert_int_equal(socks5_udp_hdr_len(d), hlen);
	assert_int_equal(socks5_udp_encode_hdr(out, sizeof(out), d),
	    (ssize_t)hlen);
	assert_memory_equal(out, want, hlen);
	assert_int_equal(socks5_udp_encode_hdr(out, hlen, d), (ssize_t)hlen);
	assert_int_equal(socks5_udp_encode_hdr(out, hlen - 1, d), -1);

	assert_int_equal(socks5_udp_parse(want, hlen + plen, &a, &p, &got),
	    (ssize_t)hlen);
	assert_dest_equal(&a, d);
	assert_ptr_equal(p, want + hlen);
	assert_int_equal(got, plen);
	/* A datagram is whole: a cut header is malformed, not "more". */
	for (got = 0; got < hlen; got++)
		assert_int_equal(socks5_udp_parse(want, got, &a, &p, &plen),
		    -1);
}

static void
test_udp(void **state)
{
	struct proto_dest	 d;
	struct proto_dest	 a;
	const uint8_t		*p;
	uint8_t			 in[64];
	size_t			 n, plen;

	(void)state;
	dest_v4(&d, "c0000201", 53);
	check_udp(&d, "000000" "01" "c0000201" "0035", "abc");
	dest_v6(&d, "20010db8000000000000000000000001", 8080);
	check_udp(&d, "000000" "04" "20010db8000000000000000000000001" "1f90",
	    "");
	dest_dom(&d, "example.com", 80);
	check_udp(&d, "000000" "03" "0b6578616d706c652e636f6d" "0050", "hi");

	/* A fragment: dropped.  Bad address type.  RSV not checked. */
	n = unhex("000001" "01" "c0000201" "0035" "61", in);
	assert_int_equal(socks5_udp_parse(in, n, &a, &p, &plen), -1);
	n = unhex("000000" "02" "c0000201" "0035" "61", in);
	assert_int_equal(socks5_udp_parse(in, n, &a, &p, &plen), -1);
	n = unhex("123400" "01" "c0000201" "0035" "61", in);
	assert_int_equal(socks5_udp_parse(in, n, &a, &p, &plen), 10);
	assert_int_equal(plen, 1);
	n = unhex("000000" "03" "00" "0035", in);
	assert_int_equal(socks5_udp_parse(in, n, &a, &p, &plen), -1);

	d.atyp = 7;
	assert_int_equal(socks5_udp_hdr_len(&d), 0);
	assert_int_equal(socks5_udp_encode_hdr(in, sizeof(in), &d), -1);
}

/* ---- conf: protocol socks5, direct, block ------------------------------ */

#define SCLIENT	"client:\n  server: 127.0.0.1:1080\n  protocol: socks5\n"
#define KEY	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static char errbuf[512];

static struct conf *
load(const char *y)
{
	errbuf[0] = '\0';
	return conf_load_buf("t.yaml", y, strlen(y), errbuf, sizeof(errbuf));
}

static void
load_fails(const char *y, const char *msg)
{
	struct conf	*c = load(y);

	if (c != NULL) {
		conf_free(c);
		fail_msg("accepted:\n%s", y);
	}
	if (strstr(errbuf, msg) == NULL)
		fail_msg("\"%s\" lacks \"%s\"", errbuf, msg);
}

/* Not inlined: see dump() in tests/unit/conf/test_conf.c. */
__attribute__((noinline)) static char *
dump(const struct conf *c)
{
	char	*s = NULL;
	size_t	 n = 0;
	FILE	*fp = open_memstream(&s, &n);

	assert_non_null(fp);
	conf_dump(c, fp);
	fclose(fp);
	return s;
}

static const uint8_t zero_hex[CONF_TROJAN_HEX_LEN + 1];

static void
test_conf_socks5(void **state)
{
	struct conf	*c;
	char		*d, y[1024], pw[300];

	(void)state;
	c = load(SCLIENT);
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_int_equal(conf_final(c)->protocol, CONF_PROTO_SOCKS5);
	assert_string_equal(conf_final(c)->server_host, "127.0.0.1");
	assert_int_equal(conf_final(c)->server_port, 1080);
	assert_string_equal(conf_final(c)->username, "");
	assert_string_equal(conf_final(c)->password, "");
	assert_string_equal(conf_proto_name(conf_final(c)->protocol), "socks5");
	conf_free(c);

	/* Credentials: kept in plain for socks5, never dumped. */
	c = load(SCLIENT "  username: alice\n  password: \"s3cret pw\"\n"
	    "  connect_mode: faithful\n");
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_string_equal(conf_final(c)->username, "alice");
	assert_string_equal(conf_final(c)->password, "s3cret pw");
	assert_memory_equal(conf_final(c)->trojan_hex, zero_hex, sizeof(zero_hex));
	assert_true(c->client.faithful);
	d = dump(c);
	assert_null(strstr(d, "s3cret"));
	assert_non_null(strstr(d, "  protocol: socks5\n"));
	assert_non_null(strstr(d, "  username: \"alice\"\n"));
	assert_non_null(strstr(d, "  password: (redacted)\n"));
	assert_null(strstr(d, "key:"));
	free(d);
	conf_free(c);
	/* The password before the protocol: the same. */
	c = load("client:\n  password: pw\n  username: u\n"
	    "  server: \"[::1]:1080\"\n  protocol: socks5\n");
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_string_equal(conf_final(c)->password, "pw");
	conf_free(c);

	load_fails("client:\n  protocol: socks5\n", "server: missing required");
	load_fails(SCLIENT "  username: alice\n", "go together");
	load_fails(SCLIENT "  password: pw\n", "go together");
	load_fails(SCLIENT "  username: \"\"\n  password: pw\n", "empty value");
	load_fails(SCLIENT "  key: " KEY "\n", "key: not used with protocol: "
	    "socks5");
	memset(pw, 'p', 256);
	pw[256] = '\0';
	snprintf(y, sizeof(y), SCLIENT "  username: u\n  password: %s\n", pw);
	load_fails(y, "password: must be 1..255");
	pw[255] = '\0';
	snprintf(y, sizeof(y), SCLIENT "  username: u\n  password: %s\n", pw);
	c = load(y);
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_int_equal(strlen(conf_final(c)->password), 255);
	conf_free(c);

	/* username is socks5's; trojan keeps only the password's hash. */
	load_fails("client:\n  server: a.example:443\n  protocol: trojan\n"
	    "  password: pw\n  username: u\n", "needs protocol: socks5");
	c = load("client:\n  server: a.example:443\n  protocol: trojan\n"
	    "  password: pw\n");
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_string_equal(conf_final(c)->password, "");
	assert_int_equal(strlen(conf_final(c)->trojan_hex), CONF_TROJAN_HEX_LEN);
	conf_free(c);
	load_fails("client:\n  server: a.example:443\n  protocol: socks4\n",
	    "'socks4' is not tunsplit, trojan, socks5, direct or block");
}

static void
test_conf_direct_block(void **state)
{
	struct conf	*c;
	char		*d;

	(void)state;
	c = load("client:\n  protocol: direct\n  mark: 0x7353\n");
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_int_equal(conf_final(c)->protocol, CONF_PROTO_DIRECT);
	assert_null(conf_final(c)->server_host);
	assert_null(conf_final(c)->sni);
	assert_int_equal(c->client.mark, 0x7353);
	d = dump(c);
	assert_null(strstr(d, "server:"));
	assert_non_null(strstr(d, "  protocol: direct\n"));
	conf_free(c);
	/* The dump reads back. */
	if ((c = load(d)) == NULL)
		fail_msg("%s\n--\n%s", errbuf, d);
	assert_int_equal(conf_final(c)->protocol, CONF_PROTO_DIRECT);
	conf_free(c);
	free(d);

	load_fails("client:\n  protocol: direct\n",
	    "mark: protocol: direct needs a mark");
	load_fails("client:\n  protocol: direct\n  mark: 0\n", "needs a mark");
	load_fails("client:\n  protocol: direct\n  mark: 1\n"
	    "  server: a.example:1\n", "server: not used with protocol: direct");
	load_fails("client:\n  protocol: direct\n  mark: 1\n  key: " KEY "\n",
	    "key: not used");
	load_fails("client:\n  protocol: block\n  password: x\n",
	    "password: not used with protocol: block");
	load_fails("client:\n  protocol: block\n  username: x\n",
	    "needs protocol: socks5");

	c = load("client:\n  protocol: block\n  connect_mode: faithful\n");
	if (c == NULL)
		fail_msg("%s", errbuf);
	assert_int_equal(conf_final(c)->protocol, CONF_PROTO_BLOCK);
	d = dump(c);
	assert_non_null(strstr(d, "  protocol: block\n"));
	free(d);
	conf_free(c);
	/* route: auto still needs a mark; block has no sockets but the
	 * rule is kept simple. */
	load_fails("client:\n  protocol: block\n  route: auto\n",
	    "needs a mark");
	assert_string_equal(conf_proto_name(CONF_PROTO_TUNSPLIT), "tunsplit");
	assert_string_equal(conf_proto_name((enum conf_proto)99), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greeting),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_reply),
		cmocka_unit_test(test_reply_bad),
		cmocka_unit_test(test_udp),
		cmocka_unit_test(test_conf_socks5),
		cmocka_unit_test(test_conf_direct_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
