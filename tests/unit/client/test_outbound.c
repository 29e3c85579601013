/*
 * The outbounds at run time and the decision point: a generation's set
 * built from the configuration (servers, TLS contexts only where they
 * speak TLS), client_route() answering final or the first rule, counters
 * shared by name with the set a reload replaces, and references keeping
 * a replaced outbound alive for the flows that use it.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "client/outbound.h"
#include "client/route.h"
#include "conf/conf.h"
#include "core/addr.h"
#include "core/log.h"
#include "rules/rules.h"

#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static const char yaml[] =
    "client:\n"
    "  mark: 0x7353\n"
    "  outbounds:\n"
    "    - {name: tunnel, server: \"127.0.0.1:8443\", key: " K1 ",\n"
    "       insecure: true}\n"
    "    - {name: %s, protocol: direct}\n"
    "    - {name: ads, protocol: block}\n"
    "  final: %s\n"
    "  rules:\n"
    "    - {dst: 10.0.0.0/8, outbound: %s}\n";

static struct conf *
load(const char *home, const char *final)
{
	char	y[1024], err[256];
	struct conf *c;

	snprintf(y, sizeof(y), yaml, home, final, home);
	if ((c = conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err))) ==
	    NULL)
		fail_msg("%s", err);
	return c;
}

static struct outbound *
route(const struct outbounds *obs, const char *dst, struct rule_hit *why)
{
	struct rule_query	q;
	struct addr		a;

	assert_int_equal(addr_parse(&a, dst), 0);
	rules_query_flow(&q, &a, NULL, RULES_NET_TCP, NULL);
	return client_route(obs, &q, why);
}

static void
test_set(void **state)
{
	struct conf		*c = load("home", "tunnel");
	struct outbounds	*obs;
	struct rule_hit		 why;
	struct outbound		*ob;

	(void)state;
	assert_non_null(obs = outbounds_new(NULL, c, NULL));
	assert_int_equal(obs->n, 3);
	assert_string_equal(outbound_name(obs->v[0]), "tunnel");
	assert_true(obs->v[0]->has_server);
	assert_non_null(obs->v[0]->ssl_ctx);
	assert_null(obs->v[0]->pool);		/* no loop: no pool */
	assert_false(obs->v[1]->has_server);
	assert_null(obs->v[1]->ssl_ctx);
	assert_true(outbound_blocks(obs->v[2]));
	assert_false(outbound_blocks(obs->v[1]));
	/* No rule takes it: final, "final". */
	ob = route(obs, "192.0.2.1:443", &why);
	assert_ptr_equal(ob, obs->v[0]);
	assert_int_equal(why.rule, -1);
	/* The rule does. */
	ob = route(obs, "10.1.2.3:22", &why);
	assert_ptr_equal(ob, obs->v[1]);
	assert_int_equal(why.rule, 0);
	outbounds_free(obs);
	conf_free(c);
}

static void
test_reload(void **state)
{
	struct conf		*c1 = load("home", "ads"), *c2;
	struct outbounds	*o1, *o2;
	struct outbound		*kept;

	(void)state;
	assert_non_null(o1 = outbounds_new(NULL, c1, NULL));
	assert_ptr_equal(route(o1, "192.0.2.1:80", &(struct rule_hit){ 0 }),
	    o1->v[2]);
	/* A flow on the tunnel, one failed on ads. */
	kept = outbound_ref(o1->v[0]);
	outbound_open(kept);
	outbound_open(o1->v[2]);
	outbound_close(o1->v[2], true, 0, 0);
	/* The next generation renames home. */
	c2 = load("house", "tunnel");
	assert_non_null(o2 = outbounds_new(NULL, c2, o1));
	assert_ptr_equal(o2->v[0]->stats, o1->v[0]->stats);
	assert_ptr_equal(o2->v[2]->stats, o1->v[2]->stats);
	assert_ptr_not_equal(o2->v[1]->stats, o1->v[1]->stats);
	assert_int_equal(o2->v[2]->stats->failed, 1);
	assert_int_equal(o2->v[1]->stats->opened, 0);
	/* The old set goes; the flow's outbound lives on, with its
	 * generation, until the flow ends. */
	outbounds_free(o1);
	conf_free(c1);
	assert_string_equal(outbound_name(kept), "tunnel");
	assert_int_equal(kept->conf->client.final, 2);
	outbound_close(kept, false, 100, 200);
	assert_int_equal(o2->v[0]->stats->bytes_up, 100);
	assert_int_equal(o2->v[0]->stats->active, 0);
	outbound_unref(kept);
	assert_ptr_equal(route(o2, "192.0.2.1:80", &(struct rule_hit){ 0 }),
	    o2->v[0]);
	outbounds_free(o2);
	conf_free(c2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_reload),
	};

	log_init(LOG_LVL_ERROR, false, "test_outbound");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
