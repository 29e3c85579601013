/* rules_set: rule-set files, their entries and their errors. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "rules/rules_set.h"

static struct rules_set *
load(const char *text, enum rules_set_type type, char *err, size_t errlen)
{
	err[0] = '\0';
	return rules_set_load_buf("t", "sets/t.txt", text, strlen(text), type,
	    err, errlen);
}

static bool
has_name(const struct rules_set *s, const char *name)
{
	char	norm[RULES_NAME_MAX + 1];

	return rules_domain_norm(name, norm) &&
	    rules_domain_match(s->domains, norm);
}

static bool
has_ip(const struct rules_set *s, const char *ip)
{
	uint8_t	b[16];

	if (inet_pton(AF_INET, ip, b) == 1)
		return rules_trie_match(s->cidrs, AF_INET, b);
	assert_int_equal(inet_pton(AF_INET6, ip, b), 1);
	return rules_trie_match(s->cidrs, AF_INET6, b);
}

static void
test_entries(void **state)
{
	static const char text[] =
	    "# a comment\n"
	    "\n"
	    "10.0.0.0/8\n"
	    "  2001:db8::/32   # trailing comment\r\n"
	    "192.0.2.1\n"
	    "cidr:198.51.100.0/24\n"
	    "domain:exact.example\n"
	    "full:full.example\n"
	    "suffix:suffix.example\n"
	    "+.plus.example\n"
	    "keyword:track\n"
	    "bare.example\n"
	    "\t\n"
	    "last.example";		/* no newline at the end */
	struct rules_set	*s;
	char			 err[256];

	(void)state;
	s = load(text, RULES_SET_AUTO, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(s->lines, 11);
	assert_true(has_ip(s, "10.2.3.4"));
	assert_true(has_ip(s, "2001:db8::5"));
	assert_true(has_ip(s, "192.0.2.1"));
	assert_false(has_ip(s, "192.0.2.2"));
	assert_true(has_ip(s, "198.51.100.9"));
	assert_true(has_name(s, "exact.example"));
	assert_false(has_name(s, "a.exact.example"));
	assert_true(has_name(s, "full.example"));
	assert_true(has_name(s, "suffix.example"));
	assert_true(has_name(s, "a.suffix.example"));
	assert_true(has_name(s, "plus.example"));
	assert_true(has_name(s, "x.plus.example"));
	assert_true(has_name(s, "tracking.example"));
	assert_true(has_name(s, "bare.example"));
	assert_false(has_name(s, "x.bare.example"));	/* auto: exact */
	assert_true(has_name(s, "last.example"));
	rules_set_free(s);
}

static void
test_types(void **state)
{
	struct rules_set	*s;
	char			 err[256];

	(void)state;
	s = load("bare.example\ndomain:exact.example\n", RULES_SET_SUFFIX,
	    err, sizeof(err));
	assert_non_null(s);
	assert_true(has_name(s, "www.bare.example"));
	assert_false(has_name(s, "www.exact.example"));
	rules_set_free(s);

	s = load("ads\n", RULES_SET_KEYWORD, err, sizeof(err));
	assert_non_null(s);
	assert_true(has_name(s, "myads.example"));
	rules_set_free(s);

	s = load("10.0.0.0/8\n", RULES_SET_CIDR, err, sizeof(err));
	assert_non_null(s);
	rules_set_free(s);

	assert_int_equal(rules_set_type_parse("suffix"), RULES_SET_SUFFIX);
	assert_int_equal(rules_set_type_parse("nope"), -1);
	assert_string_equal(rules_set_type_name(RULES_SET_CIDR), "cidr");
}

/* Each bad file and the exact message, with its line and column. */
static void
test_errors(void **state)
{
	static const struct {
		const char		*text;
		enum rules_set_type	 type;
		const char		*want;
	} cases[] = {
		{ "ok.example\n  bad name\n", RULES_SET_AUTO,
		    "sets/t.txt:2:6: one entry per line" },
		{ "\n\n10.0.0.0/33\n", RULES_SET_CIDR,
		    "sets/t.txt:3:1: '10.0.0.0/33': not an address/prefix" },
		{ "a.example\n   cidr:300.1.1.1\n", RULES_SET_AUTO,
		    "sets/t.txt:2:9: '300.1.1.1': not an address/prefix" },
		{ "10.0.0.0/8\nexample.com\n", RULES_SET_CIDR,
		    "sets/t.txt:2:1: 'example.com': not an address/prefix" },
		{ "domain:x.example\n", RULES_SET_CIDR,
		    "sets/t.txt:1:8: 'x.example': a name in a set of type cidr" },
		{ "a..example\n", RULES_SET_AUTO,
		    "sets/t.txt:1:1: 'a..example': not a domain name (letters, "
		    "digits, '-', '_', dots between labels)" },
		{ "x\n*.example.com\n", RULES_SET_AUTO,
		    "sets/t.txt:2:1: '*.example.com': no wildcards: a suffix is "
		    "written +.example.com or suffix:example.com" },
		{ "suffix:\n", RULES_SET_AUTO, "sets/t.txt:1:8: empty entry" },
		{ "+.\n", RULES_SET_AUTO, "sets/t.txt:1:3: empty entry" },
		{ "ok\nkeyword:b@d\n", RULES_SET_AUTO,
		    "sets/t.txt:2:9: 'b@d': not a domain name (letters, digits, "
		    "'-', '_', dots between labels)" },
	};
	struct rules_set	*s;
	char			 err[256];
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = load(cases[i].text, cases[i].type, err, sizeof(err));
		assert_null(s);
		assert_string_equal(err, cases[i].want);
	}
	/* A NUL byte inside a line. */
	s = rules_set_load_buf("t", "f", "ab\0c\n", 5, RULES_SET_AUTO, err,
	    sizeof(err));
	assert_null(s);
	assert_string_equal(err, "f:1:3: NUL character");
}

static void
test_files(void **state)
{
	char			 path[] = "/tmp/test_rules_set.XXXXXX", err[256];
	struct rules_set	*s;
	FILE			*fp;
	int			 fd;

	(void)state;
	assert_null(rules_set_load("t", "/nonexistent/x.txt", RULES_SET_AUTO,
	    err, sizeof(err)));
	assert_string_equal(err, "/nonexistent/x.txt: No such file or "
	    "directory");
	assert_null(rules_set_load("t", "/tmp", RULES_SET_AUTO, err,
	    sizeof(err)));
	assert_string_equal(err, "/tmp: not a regular file");
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(fp = fdopen(fd, "w"));
	fputs("+.example.com\n10.0.0.0/8\nbad entry\n", fp);
	fclose(fp);
	assert_null(rules_set_load("t", path, RULES_SET_AUTO, err,
	    sizeof(err)));
	assert_non_null(strstr(err, ":3:4: one entry per line"));
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	assert_non_null(fp = fopen(path, "w"));
	fputs("+.example.com\n10.0.0.0/8\n", fp);
	fclose(fp);
	assert_non_null(s = rules_set_load("t", path, RULES_SET_AUTO, err,
	    sizeof(err)));
	assert_true(has_name(s, "www.example.com"));
	assert_true(has_ip(s, "10.0.0.1"));
	assert_string_equal(s->name, "t");
	assert_string_equal(s->path, path);
	rules_set_free(s);
	unlink(path);
}

/* 100,000 domains and 10,000 prefixes in one file's worth of text. */
static void
test_large(void **state)
{
	size_t			 cap = 4u << 20, len = 0, i;
	char			*text = malloc(cap), err[256], name[64];
	struct rules_set	*s;

	(void)state;
	assert_non_null(text);
	for (i = 0; i < 100000; i++)
		len += (size_t)snprintf(text + len, cap - len,
		    "+.d%zu.example\n", i);
	for (i = 0; i < 10000; i++)
		len += (size_t)snprintf(text + len, cap - len,
		    "10.%zu.%zu.0/24\n", i / 256, i % 256);
	assert_true(len < cap);
	s = load(text, RULES_SET_AUTO, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(s->lines, 110000);
	assert_int_equal(rules_domain_count(s->domains), 100000);
	assert_int_equal(rules_trie_count(s->cidrs), 10000);
	for (i = 0; i < 100000; i += 997) {
		snprintf(name, sizeof(name), "x.d%zu.example", i);
		assert_true(has_name(s, name));
	}
	assert_false(has_name(s, "d100000.example"));
	assert_true(has_ip(s, "10.39.15.200"));
	assert_false(has_ip(s, "10.39.16.1"));
	rules_set_free(s);
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
