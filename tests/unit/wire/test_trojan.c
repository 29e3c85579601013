/* proto_trojan: password hash, request encode/parse, detection, matching. */
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
#include "wire/proto_trojan.h"

/*
 * Vectors computed independently with Python's hashlib.sha224 and the
 * layout in proto_trojan.h (which follows trojan-gfw's protocol page).
 */
static const char HEX_PASSWORD[] =
    "d63dc919e201d7bc4c825630d2cf25fdc93d4b2f0d46706d29038d01";
static const char HEX_EMPTY[] =
    "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f";
#define VEC_HASH \
    "6436336463393139653230316437626334633832353633306432636632356664" \
    "633933643462326630643436373036643239303338643031" "0d0a"
/* CONNECT 192.0.2.1:443 */
static const char VEC_V4[] = VEC_HASH "0101" "c0000201" "01bb" "0d0a";
/* CONNECT [2001:db8::1]:8080 */
static const char VEC_V6[] = VEC_HASH "0104"
    "20010db8000000000000000000000001" "1f90" "0d0a";
/* CONNECT example.com:80 */
static const char VEC_DOM[] = VEC_HASH "0103" "0b6578616d706c652e636f6d"
    "0050" "0d0a";

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
test_hash(void **state)
{
	char	 hex[PROTO_TROJAN_HEX_LEN + 1];

	(void)state;
	assert_int_equal(proto_trojan_hash("password", 8, hex), 0);
	assert_string_equal(hex, HEX_PASSWORD);
	assert_int_equal(proto_trojan_hash("", 0, hex), 0);
	assert_string_equal(hex, HEX_EMPTY);
}

static void
check_vec(const char *vec, const struct proto_dest *d)
{
	uint8_t			 want[PROTO_TROJAN_REQ_MAX], out[PROTO_TROJAN_REQ_MAX];
	struct proto_trojan_req	 r;
	size_t			 n = unhex(vec, want), i;
	ssize_t			 rc;

	rc = proto_trojan_encode(out, sizeof(out), HEX_PASSWORD,
	    PROTO_TROJAN_CMD_CONNECT, d);
	assert_int_equal(rc, (ssize_t)n);
	assert_memory_equal(out, want, n);
	/* Exact size fits, one byte less does not. */
	assert_int_equal(proto_trojan_encode(out, n, HEX_PASSWORD,
	    PROTO_TROJAN_CMD_CONNECT, d), (ssize_t)n);
	assert_int_equal(proto_trojan_encode(out, n - 1, HEX_PASSWORD,
	    PROTO_TROJAN_CMD_CONNECT, d), -1);

	assert_int_equal(proto_trojan_parse(want, n, &r), (ssize_t)n);
	assert_string_equal(r.hex, HEX_PASSWORD);
	assert_int_equal(r.cmd, PROTO_TROJAN_CMD_CONNECT);
	assert_int_equal(r.dest.atyp, d->atyp);
	assert_int_equal(r.dest.port, d->port);
	if (d->atyp == PROTO_ATYP_DOMAIN)
		assert_string_equal(r.dest.domain, d->domain);
	else
		assert_memory_equal(r.dest.ip, d->ip,
		    d->atyp == PROTO_ATYP_IPV4 ? 4 : 16);
	/* Every strict prefix asks for more, never fails or succeeds. */
	for (i = 0; i < n; i++)
		assert_int_equal(proto_trojan_parse(want, i, &r), 0);
	/* Trailing payload is not part of the request. */
	want[n] = 'x';
	assert_int_equal(proto_trojan_parse(want, n + 1, &r), (ssize_t)n);
}

static void
test_vectors(void **state)
{
	struct proto_dest	 d;
	static const uint8_t	 v6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
	    0, 0, 0, 0, 0, 0, 0, 1 };

	(void)state;
	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_IPV4;
	memcpy(d.ip, "\xc0\x00\x02\x01", 4);
	d.port = 443;
	check_vec(VEC_V4, &d);

	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_IPV6;
	memcpy(d.ip, v6, 16);
	d.port = 8080;
	check_vec(VEC_V6, &d);

	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_DOMAIN;
	strcpy(d.domain, "example.com");
	d.port = 80;
	check_vec(VEC_DOM, &d);
}

static void
test_encode_bad(void **state)
{
	uint8_t			 out[PROTO_TROJAN_REQ_MAX];
	struct proto_dest	 d;

	(void)state;
	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_IPV4;
	assert_int_equal(proto_trojan_encode(out, sizeof(out), HEX_PASSWORD,
	    2, &d), -1);
	assert_int_equal(proto_trojan_encode(out, sizeof(out),
	    "zz3dc919e201d7bc4c825630d2cf25fdc93d4b2f0d46706d29038d01",
	    PROTO_TROJAN_CMD_CONNECT, &d), -1);
	d.atyp = 2;
	assert_int_equal(proto_trojan_encode(out, sizeof(out), HEX_PASSWORD,
	    PROTO_TROJAN_CMD_CONNECT, &d), -1);
	d.atyp = PROTO_ATYP_DOMAIN;	/* empty name */
	assert_int_equal(proto_trojan_encode(out, sizeof(out), HEX_PASSWORD,
	    PROTO_TROJAN_CMD_CONNECT, &d), -1);
}

static void
test_parse_bad(void **state)
{
	uint8_t			 b[PROTO_TROJAN_REQ_MAX + 16];
	struct proto_trojan_req	 r;
	size_t			 n;

	(void)state;
	/* The native header (version 1) is not trojan, from byte one. */
	b[0] = 1;
	assert_int_equal(proto_trojan_detect(b, 1), -1);
	assert_int_equal(proto_trojan_parse(b, 1, &r), -1);
	assert_int_equal(proto_trojan_detect(b, 0), 0);
	b[0] = 'd';
	assert_int_equal(proto_trojan_detect(b, 1), 1);
	/* HTTP (a browser probing the port) fails at its first non-hex. */
	memcpy(b, "GET / HTTP/1.1\r\n", 16);
	assert_int_equal(proto_trojan_parse(b, 16, &r), -1);
	memcpy(b, "deadbeefxx", 10);
	assert_int_equal(proto_trojan_parse(b, 10, &r), -1);

	/* Bad CR, bad LF, bad command, bad address type, bad final CRLF. */
	n = unhex(VEC_V4, b);
	b[56] = 'a';
	assert_int_equal(proto_trojan_parse(b, 57, &r), -1);
	n = unhex(VEC_V4, b);
	b[57] = '\r';
	assert_int_equal(proto_trojan_parse(b, 58, &r), -1);
	n = unhex(VEC_V4, b);
	b[58] = 2;
	assert_int_equal(proto_trojan_parse(b, n, &r), -1);
	n = unhex(VEC_V4, b);
	b[59] = 2;
	assert_int_equal(proto_trojan_parse(b, n, &r), -1);
	n = unhex(VEC_V4, b);
	b[n - 2] = '\n';
	assert_int_equal(proto_trojan_parse(b, n - 1, &r), -1);
	assert_int_equal(proto_trojan_parse(b, n, &r), -1);
	n = unhex(VEC_V4, b);
	b[n - 1] = 'x';
	assert_int_equal(proto_trojan_parse(b, n, &r), -1);

	/* A zero-length domain, and a NUL inside one. */
	n = unhex(VEC_DOM, b);
	b[60] = 0;
	assert_int_equal(proto_trojan_parse(b, n, &r), -1);
	n = unhex(VEC_DOM, b);
	b[63] = 0;
	assert_int_equal(proto_trojan_parse(b, n, &r), -1);

	/* UDP ASSOCIATE parses; refusing it is the server's business. */
	n = unhex(VEC_V4, b);
	b[58] = PROTO_TROJAN_CMD_UDP;
	assert_int_equal(proto_trojan_parse(b, n, &r), (ssize_t)n);
	assert_int_equal(r.cmd, PROTO_TROJAN_CMD_UDP);

	/* Garbage of every length never reads past what it was given. */
	for (n = 0; n < sizeof(b); n++) {
		memset(b, 0xff, sizeof(b));
		(void)proto_trojan_parse(b, n, &r);
	}
}

static void
test_match(void **state)
{
	char	 list[3][PROTO_TROJAN_HEX_LEN + 1];
	char	 upper[PROTO_TROJAN_HEX_LEN + 1];
	size_t	 i;

	(void)state;
	assert_int_equal(proto_trojan_hash("other", 5, list[0]), 0);
	assert_int_equal(proto_trojan_hash("password", 8, list[1]), 0);
	assert_int_equal(proto_trojan_hash("", 0, list[2]), 0);
	assert_int_equal(proto_trojan_match(HEX_PASSWORD,
	    (const char (*)[PROTO_TROJAN_HEX_LEN + 1])list, 3), 1);
	assert_int_equal(proto_trojan_match(HEX_EMPTY,
	    (const char (*)[PROTO_TROJAN_HEX_LEN + 1])list, 3), 2);
	assert_int_equal(proto_trojan_match(HEX_PASSWORD,
	    (const char (*)[PROTO_TROJAN_HEX_LEN + 1])list, 1), -1);
	assert_int_equal(proto_trojan_match(HEX_PASSWORD,
	    (const char (*)[PROTO_TROJAN_HEX_LEN + 1])list, 0), -1);
	for (i = 0; i < PROTO_TROJAN_HEX_LEN; i++)
		upper[i] = (HEX_PASSWORD[i] >= 'a') ?
		    (char)(HEX_PASSWORD[i] - 'a' + 'A') : HEX_PASSWORD[i];
	upper[PROTO_TROJAN_HEX_LEN] = '\0';
	assert_int_equal(proto_trojan_match(upper,
	    (const char (*)[PROTO_TROJAN_HEX_LEN + 1])list, 3), 1);
	upper[55] = '0';	/* last digit off by one */
	assert_int_equal(proto_trojan_match(upper,
	    (const char (*)[PROTO_TROJAN_HEX_LEN + 1])list, 3), -1);
}

/* ---- UDP packets -------------------------------------------------------- */

/* 192.0.2.1:53 "abc"; [2001:db8::1]:8080, empty; example.com:80 "hi". */
static const char UVEC_V4[] = "01" "c0000201" "0035" "0003" "0d0a" "616263";
static const char UVEC_V6[] = "04" "20010db8000000000000000000000001" "1f90"
    "0000" "0d0a";
static const char UVEC_DOM[] = "03" "0b6578616d706c652e636f6d" "0050" "0002"
    "0d0a" "6869";

static void
check_udp_vec(const char *vec, const struct proto_dest *d, const char *pl)
{
	uint8_t			 want[512], out[512];
	struct proto_dest	 a;
	const uint8_t		*p;
	size_t			 n = unhex(vec, want), plen = strlen(pl), i, got;
	size_t			 hlen = n - plen;

	assert_int_equal(proto_trojan_udp_hdr_len(d), hlen);
	assert_int_equal(proto_trojan_udp_encode(out, sizeof(out), d, pl, plen),
	    (ssize_t)n);
	assert_memory_equal(out, want, n);
	assert_int_equal(proto_trojan_udp_encode(out, n, d, pl, plen),
	    (ssize_t)n);
	assert_int_equal(proto_trojan_udp_encode(out, n - 1, d, pl, plen), -1);
	assert_int_equal(proto_trojan_udp_encode_hdr(out, hlen, d, plen),
	    (ssize_t)hlen);
	assert_memory_equal(out, want, hlen);
	assert_int_equal(proto_trojan_udp_encode_hdr(out, hlen - 1, d, plen),
	    -1);

	assert_int_equal(proto_trojan_udp_parse(want, n, &a, &p, &got),
	    (ssize_t)n);
	assert_int_equal(a.atyp, d->atyp);
	assert_int_equal(a.port, d->port);
	if (d->atyp == PROTO_ATYP_DOMAIN)
		assert_string_equal(a.domain, d->domain);
	else
		assert_memory_equal(a.ip, d->ip,
		    d->atyp == PROTO_ATYP_IPV4 ? 4 : 16);
	assert_int_equal(got, plen);
	assert_ptr_equal(p, want + hlen);
	assert_memory_equal(p, pl, plen);
	for (i = 0; i < n; i++)
		assert_int_equal(proto_trojan_udp_parse(want, i, &a, &p, &got),
		    0);
	/* Back to back: the first packet ends where it says. */
	memcpy(want + n, want, n);
	assert_int_equal(proto_trojan_udp_parse(want, 2 * n, &a, &p, &got),
	    (ssize_t)n);
	assert_int_equal(proto_trojan_udp_parse(want + n, n, &a, &p, &got),
	    (ssize_t)n);
}

static void
test_udp_vectors(void **state)
{
	struct proto_dest	 d;
	static const uint8_t	 v6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
	    0, 0, 0, 0, 0, 0, 0, 1 };

	(void)state;
	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_IPV4;
	memcpy(d.ip, "\xc0\x00\x02\x01", 4);
	d.port = 53;
	check_udp_vec(UVEC_V4, &d, "abc");

	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_IPV6;
	memcpy(d.ip, v6, 16);
	d.port = 8080;
	check_udp_vec(UVEC_V6, &d, "");

	memset(&d, 0, sizeof(d));
	d.atyp = PROTO_ATYP_DOMAIN;
	strcpy(d.domain, "example.com");
	d.port = 80;
	check_udp_vec(UVEC_DOM, &d, "hi");
}

static void
test_udp_bad(void **state)
{
	static uint8_t		 big[PROTO_TROJAN_UDP_MAX + 1];
	static uint8_t		 pl[PROTO_TROJAN_UDP_PAYLOAD_MAX];
	uint8_t			 b[512];
	struct proto_dest	 a, d;
	const uint8_t		*p;
	size_t			 n, plen;

	(void)state;
	/* Encoding: bad address type, empty domain, payload over the bound. */
	memset(&d, 0, sizeof(d));
	d.atyp = 2;
	assert_int_equal(proto_trojan_udp_hdr_len(&d), 0);
	assert_int_equal(proto_trojan_udp_encode(b, sizeof(b), &d, "", 0), -1);
	d.atyp = PROTO_ATYP_DOMAIN;
	assert_int_equal(proto_trojan_udp_encode(b, sizeof(b), &d, "", 0), -1);
	d.atyp = PROTO_ATYP_IPV4;
	assert_int_equal(proto_trojan_udp_encode_hdr(b, sizeof(b), &d,
	    PROTO_TROJAN_UDP_PAYLOAD_MAX + 1), -1);
	/* The bound itself: encoded, and parsed back whole. */
	memset(pl, 'z', sizeof(pl));
	n = proto_trojan_udp_hdr_len(&d) + PROTO_TROJAN_UDP_PAYLOAD_MAX;
	assert_int_equal(proto_trojan_udp_encode(big, sizeof(big), &d, pl,
	    sizeof(pl)), (ssize_t)n);
	assert_int_equal(proto_trojan_udp_parse(big, n, &a, &p, &plen),
	    (ssize_t)n);
	assert_int_equal(plen, PROTO_TROJAN_UDP_PAYLOAD_MAX);
	assert_int_equal(proto_trojan_udp_parse(big, n - 1, &a, &p, &plen), 0);

	/* Parsing, each judged at the byte that shows it. */
	b[0] = 2;			/* address type */
	assert_int_equal(proto_trojan_udp_parse(b, 1, &a, &p, &plen), -1);
	b[0] = 0;
	assert_int_equal(proto_trojan_udp_parse(b, 1, &a, &p, &plen), -1);
	assert_int_equal(proto_trojan_udp_parse(b, 0, &a, &p, &plen), 0);
	n = unhex(UVEC_DOM, b);		/* empty domain */
	b[1] = 0;
	assert_int_equal(proto_trojan_udp_parse(b, 1, &a, &p, &plen), 0);
	assert_int_equal(proto_trojan_udp_parse(b, 2, &a, &p, &plen), -1);
	n = unhex(UVEC_DOM, b);		/* NUL in the name, seen at once */
	b[5] = 0;
	assert_int_equal(proto_trojan_udp_parse(b, 5, &a, &p, &plen), 0);
	assert_int_equal(proto_trojan_udp_parse(b, 6, &a, &p, &plen), -1);
	assert_int_equal(proto_trojan_udp_parse(b, n, &a, &p, &plen), -1);
	n = unhex(UVEC_V4, b);		/* length over the bound */
	b[7] = 0xff;
	b[8] = 0xf8;
	assert_int_equal(proto_trojan_udp_parse(b, 8, &a, &p, &plen), 0);
	assert_int_equal(proto_trojan_udp_parse(b, 9, &a, &p, &plen), -1);
	b[8] = 0xf7;			/* 65527: fine, waits for it */
	assert_int_equal(proto_trojan_udp_parse(b, n, &a, &p, &plen), 0);
	n = unhex(UVEC_V4, b);		/* bad CR, bad LF */
	b[9] = '\n';
	assert_int_equal(proto_trojan_udp_parse(b, 9, &a, &p, &plen), 0);
	assert_int_equal(proto_trojan_udp_parse(b, 10, &a, &p, &plen), -1);
	n = unhex(UVEC_V4, b);
	b[10] = '\r';
	assert_int_equal(proto_trojan_udp_parse(b, 10, &a, &p, &plen), 0);
	assert_int_equal(proto_trojan_udp_parse(b, 11, &a, &p, &plen), -1);
	assert_int_equal(proto_trojan_udp_parse(b, n, &a, &p, &plen), -1);

	/* Garbage of every length never reads past what it was given. */
	for (n = 0; n < sizeof(b); n++) {
		memset(b, 0x03, sizeof(b));
		(void)proto_trojan_udp_parse(b, n, &a, &p, &plen);
	}
}

/* ---- the configuration keys that feed it ------------------------------ */

#define TCLIENT	"client:\n  server: vpn.example.org:443\n"
#define TSERVER	"server:\n  listen: 0.0.0.0:443\n  cert: /c.pem\n" \
	"  cert_key: /k.pem\n  users:\n    - name: a\n      key: " \
	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"

static struct conf *
load(const char *y, char *err, size_t errlen)
{
	return conf_load_buf("t.yaml", y, strlen(y), err, errlen);
}

static void
test_conf_keys(void **state)
{
	char		 err[512];
	struct conf	*c;

	(void)state;
	/* trojan needs no key: the password is the credential. */
	c = load(TCLIENT "  protocol: trojan\n  password: password\n", err,
	    sizeof(err));
	assert_non_null(c);
	assert_int_equal(conf_final(c)->protocol, CONF_PROTO_TROJAN);
	assert_string_equal(conf_final(c)->trojan_hex, HEX_PASSWORD);
	conf_free(c);

	c = load(TCLIENT "  protocol: tunsplit\n  key: "
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(conf_final(c)->protocol, CONF_PROTO_TUNSPLIT);
	conf_free(c);

	assert_null(load(TCLIENT "  protocol: trojan\n", err, sizeof(err)));
	assert_non_null(strstr(err, "password"));
	assert_null(load(TCLIENT "  protocol: vless\n  password: x\n", err,
	    sizeof(err)));
	assert_non_null(strstr(err, "not tunsplit, trojan, socks5"));
	assert_null(load(TCLIENT "  key: "
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n  password: x\n",
	    err, sizeof(err)));
	assert_non_null(strstr(err, "needs protocol: trojan or socks5"));
	assert_null(load(TCLIENT "  protocol: trojan\n  password: x\n"
	    "  connect_mode: faithful\n", err, sizeof(err)));
	assert_non_null(strstr(err, "faithful"));
	assert_null(load(TCLIENT "  protocol: trojan\n  password: \"\"\n",
	    err, sizeof(err)));

	c = load(TSERVER "  trojan_passwords: [other, password]\n", err,
	    sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->server.ntrojan, 2);
	assert_string_equal(c->server.trojan_hex[1], HEX_PASSWORD);
	conf_free(c);
	c = load(TSERVER "  trojan_passwords: password\n", err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->server.ntrojan, 1);
	conf_free(c);
	c = load(TSERVER, err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(c->server.ntrojan, 0);
	conf_free(c);
	assert_null(load(TSERVER "  trojan_passwords: [a, b, a]\n", err,
	    sizeof(err)));
	assert_non_null(strstr(err, "duplicate password"));
	assert_null(load(TSERVER "  trojan_passwords: []\n", err,
	    sizeof(err)));
	assert_null(load(TCLIENT "  trojan_passwords: [a]\n  key: "
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", err,
	    sizeof(err)));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_encode_bad),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_udp_vectors),
		cmocka_unit_test(test_udp_bad),
		cmocka_unit_test(test_conf_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
