/* rules_domain: exact names, suffixes, keywords; case and trailing dot. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rules/rules_domain.h"

static bool
has(const struct rules_domain *d, const char *name)
{
	char	norm[RULES_NAME_MAX + 1];

	if (!rules_domain_norm(name, norm))
		return false;
	return rules_domain_match(d, norm);
}

static void
add(struct rules_domain *d, enum rules_domain_kind k, const char *name)
{
	const char	*why = NULL;

	assert_int_equal(rules_domain_add(d, k, name, &why), 0);
}

static void
test_exact_suffix(void **state)
{
	struct rules_domain	*d = rules_domain_new();

	(void)state;
	add(d, RULES_DOMAIN_EXACT, "Exact.Example.COM.");
	add(d, RULES_DOMAIN_SUFFIX, "example.org");
	add(d, RULES_DOMAIN_SUFFIX, "co.uk");
	add(d, RULES_DOMAIN_EXACT, "single");
	/* exact: that name, any case, trailing dot or not */
	assert_true(has(d, "exact.example.com"));
	assert_true(has(d, "EXACT.example.com."));
	assert_false(has(d, "a.exact.example.com"));
	assert_false(has(d, "example.com"));
	assert_false(has(d, "xexact.example.com"));
	/* suffix: the name and below, on label boundaries only */
	assert_true(has(d, "example.org"));
	assert_true(has(d, "www.Example.Org."));
	assert_true(has(d, "a.b.c.example.org"));
	assert_false(has(d, "notexample.org"));
	assert_false(has(d, "example.org.evil"));
	assert_false(has(d, "org"));
	assert_true(has(d, "bbc.co.uk"));
	assert_false(has(d, "uk"));
	assert_true(has(d, "single"));
	assert_false(has(d, "x.single"));
	assert_false(has(d, "singles"));
	/* not names at all */
	assert_false(has(d, ""));
	assert_false(has(d, "."));
	assert_false(has(d, "a..example.org"));
	assert_false(has(d, ".example.org"));
	assert_false(has(d, "exa mple.org"));
	rules_domain_free(d);
}

static void
test_both_kinds(void **state)
{
	struct rules_domain	*d = rules_domain_new();

	(void)state;
	add(d, RULES_DOMAIN_EXACT, "a.example");
	add(d, RULES_DOMAIN_SUFFIX, "a.example");
	assert_true(has(d, "a.example"));
	assert_true(has(d, "b.a.example"));
	rules_domain_free(d);
}

static void
test_keyword(void **state)
{
	struct rules_domain	*d = rules_domain_new();

	(void)state;
	add(d, RULES_DOMAIN_KEYWORD, "Tracker");
	add(d, RULES_DOMAIN_KEYWORD, "ads.");
	assert_true(has(d, "tracker.example"));
	assert_true(has(d, "mytrackers.example.com"));
	assert_true(has(d, "x.ads.example"));
	assert_true(has(d, "x.ads"));	/* the trailing dot is dropped */
	assert_false(has(d, "example.com"));
	assert_int_equal(rules_domain_count(d), 2);
	rules_domain_free(d);
}

static void
test_rejects(void **state)
{
	struct rules_domain	*d = rules_domain_new();
	const char		*why = NULL;
	char			 big[300];

	(void)state;
	assert_int_equal(rules_domain_add(d, RULES_DOMAIN_EXACT, "", &why), -1);
	assert_non_null(why);
	assert_int_equal(rules_domain_add(d, RULES_DOMAIN_EXACT, "a b", &why),
	    -1);
	assert_int_equal(rules_domain_add(d, RULES_DOMAIN_SUFFIX, "*.x", &why),
	    -1);
	assert_int_equal(rules_domain_add(d, RULES_DOMAIN_SUFFIX, "a..b",
	    &why), -1);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(rules_domain_add(d, RULES_DOMAIN_EXACT, big, &why),
	    -1);
	assert_string_equal(why, "name too long");
	/* 253 characters is the longest name; 127 labels the most. */
	big[253] = '\0';
	assert_int_equal(rules_domain_add(d, RULES_DOMAIN_EXACT, big, &why),
	    0);
	assert_true(has(d, big));
	rules_domain_free(d);
	assert_false(rules_domain_match(NULL, "x"));
}

static void
test_many_labels(void **state)
{
	struct rules_domain	*d = rules_domain_new();
	char			 name[RULES_NAME_MAX + 1];
	size_t			 i;

	(void)state;
	/* 127 one-letter labels: "a.a.a...a" */
	for (i = 0; i < 127; i++) {
		name[2 * i] = 'a';
		name[2 * i + 1] = '.';
	}
	name[253] = '\0';
	add(d, RULES_DOMAIN_SUFFIX, "a.a");
	assert_true(has(d, name));
	assert_false(has(d, "b.a"));
	rules_domain_free(d);
}

/* 100,000 names: each found, as its own kind, and near misses not. */
static void
test_large(void **state)
{
	struct rules_domain	*d = rules_domain_new();
	char			 name[64];
	unsigned		 i;

	(void)state;
	for (i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "host%u.zone%u.example", i, i % 97);
		add(d, i % 2 ? RULES_DOMAIN_SUFFIX : RULES_DOMAIN_EXACT, name);
	}
	assert_int_equal(rules_domain_count(d), 100000);
	assert_true(rules_domain_bytes(d) < 8u << 20);
	for (i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "host%u.zone%u.example", i, i % 97);
		assert_true(has(d, name));
		snprintf(name, sizeof(name), "www.host%u.zone%u.example", i,
		    i % 97);
		assert_int_equal(has(d, name), i % 2 == 1);
		snprintf(name, sizeof(name), "host%u.zone%u.example", i,
		    (i + 1) % 97);
		assert_false(has(d, name));
	}
	rules_domain_free(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_suffix),
		cmocka_unit_test(test_both_kinds),
		cmocka_unit_test(test_keyword),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_many_labels),
		cmocka_unit_test(test_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
