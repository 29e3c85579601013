/*
 * fakeip: names to addresses and back in both ranges, the LRU reuse of
 * the least recently used name once the table is full, misses for
 * addresses never issued or evicted, the file: a round trip keeps every
 * name's address and the LRU order; a corrupt or foreign file is
 * refused, leaving the table empty and working.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <sodium.h>

#include "client/dns/fakeip.h"
#include "conf/conf.h"

static char	 dir[] = "/tmp/test_fakeip.XXXXXX";
static char	 path[256];

static struct fakeip *
table(const char *r4, const char *r6, unsigned size)
{
	struct cidr	c4, c6;
	struct fakeip	*t;

	assert_int_equal(cidr_parse(&c4, r4), 0);
	if (r6 != NULL)
		assert_int_equal(cidr_parse(&c6, r6), 0);
	t = fakeip_new(&c4, r6 != NULL ? &c6 : NULL, size);
	assert_non_null(t);
	return t;
}

static void
ip4(const char *s, uint8_t out[4])
{
	assert_int_equal(inet_pton(AF_INET, s, out), 1);
}

static void
ip6(const char *s, uint8_t out[16])
{
	assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

static void
test_both_ways(void **state)
{
	struct fakeip	*t = table("198.19.7.7/16", "fdfe:dcba:9876:1::/64", 100);
	uint8_t		 a4[4], a6[16], w[16], b4[4];

	(void)state;
	assert_int_equal(fakeip_stats(t)->capacity, 100);
	assert_int_equal(fakeip_issue(t, "example.com", a4, a6), 0);
	ip4("198.19.0.1", w);
	assert_memory_equal(a4, w, 4);
	ip6("fdfe:dcba:9876:1::1", w);
	assert_memory_equal(a6, w, 16);
	assert_string_equal(fakeip_name(t, AF_INET, a4), "example.com");
	assert_string_equal(fakeip_name(t, AF_INET6, a6), "example.com");
	/* The same name, the same addresses; another name, the next. */
	assert_int_equal(fakeip_issue(t, "example.com", b4, NULL), 0);
	assert_memory_equal(a4, b4, 4);
	assert_int_equal(fakeip_issue(t, "www.example.com", b4, a6), 0);
	ip4("198.19.0.2", w);
	assert_memory_equal(b4, w, 4);
	assert_int_equal(fakeip_stats(t)->issued, 2);
	/* In the range, never issued: a miss; out of it: not counted. */
	ip4("198.19.0.3", w);
	assert_true(fakeip_contains(t, AF_INET, w));
	assert_null(fakeip_name(t, AF_INET, w));
	ip4("198.19.0.0", w);
	assert_null(fakeip_name(t, AF_INET, w));
	ip4("198.19.255.255", w);
	assert_null(fakeip_name(t, AF_INET, w));
	assert_int_equal(fakeip_stats(t)->misses, 3);
	ip4("198.18.0.1", w);
	assert_false(fakeip_contains(t, AF_INET, w));
	assert_null(fakeip_name(t, AF_INET, w));
	ip6("fdfe:dcba:9876:2::1", w);
	assert_false(fakeip_contains(t, AF_INET6, w));
	assert_int_equal(fakeip_stats(t)->misses, 3);
	assert_int_equal(fakeip_stats(t)->hits, 2);
	fakeip_free(t);
}

/* Offsets past one byte: the 300th name is 198.19.1.44. */
static void
test_carry(void **state)
{
	struct fakeip	*t = table("198.19.0.0/16", NULL, 1000);
	uint8_t		 a4[4], w[4];
	char		 name[32];
	int		 i;

	(void)state;
	for (i = 1; i <= 300; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		assert_int_equal(fakeip_issue(t, name, a4, NULL), 0);
	}
	ip4("198.19.1.44", w);
	assert_memory_equal(a4, w, 4);
	assert_string_equal(fakeip_name(t, AF_INET, w), "n300.test");
	fakeip_free(t);
	/* A /24 issues .1 to .254. */
	t = table("10.99.0.0/24", NULL, 65536);
	assert_int_equal(fakeip_stats(t)->capacity, 254);
	fakeip_free(t);
}

static void
test_lru(void **state)
{
	struct fakeip	*t = table("198.19.0.0/16", NULL, 3);
	uint8_t		 a[4][4], x[4];

	(void)state;
	assert_int_equal(fakeip_issue(t, "a.test", a[0], NULL), 0);
	assert_int_equal(fakeip_issue(t, "b.test", a[1], NULL), 0);
	assert_int_equal(fakeip_issue(t, "c.test", a[2], NULL), 0);
	/* a is used (a flow to it): b is now the least recently used. */
	assert_string_equal(fakeip_name(t, AF_INET, a[0]), "a.test");
	assert_int_equal(fakeip_issue(t, "d.test", a[3], NULL), 0);
	assert_memory_equal(a[3], a[1], 4);		/* b's address */
	assert_int_equal(fakeip_stats(t)->evictions, 1);
	assert_string_equal(fakeip_name(t, AF_INET, a[1]), "d.test");
	/* b comes back: c is the oldest now. */
	assert_int_equal(fakeip_issue(t, "b.test", x, NULL), 0);
	assert_memory_equal(x, a[2], 4);
	assert_string_equal(fakeip_name(t, AF_INET, a[0]), "a.test");
	assert_int_equal(fakeip_stats(t)->entries, 3);
	/* Many names through a small table: never more than 3 held. */
	for (int i = 0; i < 1000; i++) {
		char n[16];

		snprintf(n, sizeof(n), "x%d", i);
		assert_int_equal(fakeip_issue(t, n, x, NULL), 0);
		assert_string_equal(fakeip_name(t, AF_INET, x), n);
	}
	assert_int_equal(fakeip_stats(t)->entries, 3);
	fakeip_free(t);
}

static void
write_file(const char *text)
{
	FILE	*fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static void
test_persist(void **state)
{
	struct fakeip	*t = table("198.19.0.0/16", "fdfe:dcba:9876:1::/64", 4);
	struct fakeip	*u;
	uint8_t		 a[5][4], six[16], x[4], y[16];
	char		 why[256];
	const char	*names[] = { "a.test", "b.test", "c.test", "d.test" };
	int		 i;

	(void)state;
	for (i = 0; i < 4; i++)
		assert_int_equal(fakeip_issue(t, names[i], a[i], NULL), 0);
	assert_int_equal(fakeip_issue(t, "b.test", x, six), 0); /* LRU: a */
	assert_true(fakeip_dirty(t));
	assert_int_equal(fakeip_save(t, path), 0);
	assert_false(fakeip_dirty(t));
	fakeip_free(t);

	u = table("198.19.0.0/16", "fdfe:dcba:9876:1::/64", 4);
	assert_int_equal(fakeip_load(u, path, why, sizeof(why)), 0);
	assert_int_equal(fakeip_stats(u)->entries, 4);
	for (i = 0; i < 4; i++)
		assert_string_equal(fakeip_name(u, AF_INET, a[i]), names[i]);
	assert_string_equal(fakeip_name(u, AF_INET6, six), "b.test");
	/* The LRU order came back (oldest first: a c d b; the lookups
	 * above touched a b c d, then b): touch a and d, and c goes. */
	assert_string_equal(fakeip_name(u, AF_INET, a[0]), "a.test");
	assert_string_equal(fakeip_name(u, AF_INET, a[3]), "d.test");
	assert_int_equal(fakeip_issue(u, "e.test", x, y), 0);
	assert_memory_equal(x, a[2], 4);
	fakeip_free(u);

	/* A bigger table takes the file; slots past a smaller one go. */
	u = table("198.19.0.0/16", "fdfe:dcba:9876:1::/64", 100);
	assert_int_equal(fakeip_load(u, path, why, sizeof(why)), 0);
	assert_int_equal(fakeip_stats(u)->entries, 4);
	fakeip_free(u);
	u = table("198.19.0.0/16", "fdfe:dcba:9876:1::/64", 2);
	assert_int_equal(fakeip_load(u, path, why, sizeof(why)), 0);
	assert_int_equal(fakeip_stats(u)->entries, 2);
	assert_string_equal(fakeip_name(u, AF_INET, a[0]), "a.test");
	fakeip_free(u);

	/* Other ranges: ignored, with why. */
	u = table("198.18.0.0/16", "fdfe:dcba:9876:1::/64", 4);
	assert_int_equal(fakeip_load(u, path, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "other ranges"));
	assert_int_equal(fakeip_stats(u)->entries, 0);
	fakeip_free(u);
	/* No file: an empty table, no error. */
	unlink(path);
	u = table("198.19.0.0/16", NULL, 4);
	assert_int_equal(fakeip_load(u, path, why, sizeof(why)), 0);
	fakeip_free(u);
}

static void
expect_corrupt(const char *text, const char *why_part)
{
	struct fakeip	*u = table("198.19.0.0/16", NULL, 8);
	uint8_t		 x[4], w[4];
	char		 why[256];

	write_file(text);
	assert_int_equal(fakeip_load(u, path, why, sizeof(why)), -1);
	if (strstr(why, why_part) == NULL)
		fail_msg("'%s' does not say '%s'", why, why_part);
	/* Empty, and working. */
	assert_int_equal(fakeip_stats(u)->entries, 0);
	ip4("198.19.0.1", w);
	assert_null(fakeip_name(u, AF_INET, w));
	assert_int_equal(fakeip_issue(u, "ok.test", x, NULL), 0);
	assert_memory_equal(x, w, 4);
	fakeip_free(u);
}

static void
test_corrupt(void **state)
{
	(void)state;
	expect_corrupt("", "empty");
	expect_corrupt("garbage\n", "not a fake-IP table");
	expect_corrupt("tunsplit-fakeip 1 198.19.0.0/16 - 8\n0 a.test\n"
	    "0 b.test\n", ":3: slot listed twice");
	expect_corrupt("tunsplit-fakeip 1 198.19.0.0/16 - 8\n0 a.test\n"
	    "1 a.test\n", "name listed twice");
	expect_corrupt("tunsplit-fakeip 1 198.19.0.0/16 - 8\n0 a..test\n",
	    "bad name");
	expect_corrupt("tunsplit-fakeip 1 198.19.0.0/16 - 8\nx a.test\n",
	    "bad slot");
	expect_corrupt("tunsplit-fakeip 1 198.19.0.0/16 - 8\n-1 a.test\n",
	    "bad slot");
	expect_corrupt("tunsplit-fakeip 1 198.19.0.0/16 - 8\n0 a.test",
	    "not ended");
	expect_corrupt("tunsplit-fakeip 1 198.19.0.0/16 - 8\n0 A.test\n",
	    "bad name");
}

/* A file with holes: the free slots are issued before any eviction. */
static void
test_holes(void **state)
{
	struct fakeip	*u = table("198.19.0.0/16", NULL, 4);
	uint8_t		 x[4], w[4];
	char		 why[256];

	(void)state;
	write_file("tunsplit-fakeip 1 198.19.0.0/16 - 4\n3 d.test\n"
	    "0 a.test\n");
	assert_int_equal(fakeip_load(u, path, why, sizeof(why)), 0);
	assert_int_equal(fakeip_issue(u, "new1", x, NULL), 0);
	ip4("198.19.0.2", w);
	assert_memory_equal(x, w, 4);
	assert_int_equal(fakeip_issue(u, "new2", x, NULL), 0);
	ip4("198.19.0.3", w);
	assert_memory_equal(x, w, 4);
	assert_int_equal(fakeip_stats(u)->evictions, 0);
	/* Full: d (the file's oldest) goes first. */
	assert_int_equal(fakeip_issue(u, "new3", x, NULL), 0);
	ip4("198.19.0.4", w);
	assert_memory_equal(x, w, 4);
	assert_int_equal(fakeip_stats(u)->evictions, 1);
	fakeip_free(u);
}

static struct conf *
load(const char *yaml)
{
	char		 err[256];
	struct conf	*c = conf_load_buf("t.yaml", yaml, strlen(yaml), err,
	    sizeof(err));

	if (c == NULL)
		fail_msg("%s", err);
	return c;
}

#define OBS	"client:\n  mark: 0x7353\n  outbounds:\n" \
	"    - name: tunnel\n      server: 192.0.2.1:443\n" \
	"      key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=\n" \
	"    - name: home\n      protocol: direct\n" \
	"  dns: {mode: fake-ip, fake_ip_file: \"\", fake_ip_exclude: [x.test]}\n"

/* Names the rules send direct, and names excluded, get no fake answer. */
static void
test_direct(void **state)
{
	static const uint8_t q[] = { 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
	    2, 'h', 'i', 4, 'h', 'o', 'm', 'e', 0, 0, 1, 0, 1 };
	struct fakeip	*t = table("198.19.0.0/16", NULL, 10);
	struct conf	*c;
	uint8_t		 out[600];

	(void)state;
	c = load(OBS "  rules:\n    - domain_suffix: home\n"
	    "      outbound: home\n  final: tunnel\n");
	assert_true(fakeip_direct(c, "hi.home"));
	assert_true(fakeip_direct(c, "home"));
	assert_false(fakeip_direct(c, "hi.homes"));
	assert_false(fakeip_direct(c, "a.test"));
	assert_true(fakeip_excluded(c, "x.test"));
	assert_false(fakeip_excluded(c, "y.x.test"));
	assert_int_equal(fakeip_answer(t, c, q, sizeof(q), out, sizeof(out)),
	    0);
	assert_int_equal(fakeip_stats(t)->entries, 0);
	conf_free(c);
	/* final direct: only what a rule sends to the tunnel is faked. */
	c = load(OBS "  rules:\n    - domain_suffix: away\n"
	    "      outbound: tunnel\n  final: home\n");
	assert_true(fakeip_direct(c, "a.test"));
	assert_false(fakeip_direct(c, "b.away"));
	conf_free(c);
	/* No rules: the single outbound decides. */
	c = load(OBS "  final: tunnel\n");
	assert_false(fakeip_direct(c, "a.test"));
	assert_true(fakeip_answer(t, c, q, sizeof(q), out, sizeof(out)) > 0);
	assert_int_equal(fakeip_stats(t)->entries, 1);
	conf_free(c);
	fakeip_free(t);
}

static int
setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sub/fakeip", dir);
	return sodium_init() < 0 ? -1 : 0;
}

static int
teardown(void **state)
{
	char	sub[300];

	(void)state;
	unlink(path);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	rmdir(sub);
	rmdir(dir);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_both_ways),
		cmocka_unit_test(test_carry),
		cmocka_unit_test(test_lru),
		cmocka_unit_test(test_persist),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_holes),
		cmocka_unit_test(test_direct),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
