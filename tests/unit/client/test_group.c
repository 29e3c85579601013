/*
 * Outbound groups: the health state machine on a fake clock, which
 * member a new flow takes (failover, select, balance, nested groups),
 * fail closed, check's errors for bad groups, and health news between
 * the client's workers.
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

#include <arpa/inet.h>
#include <unistd.h>

#include "client/group.h"
#include "client/health.h"
#include "client/outbound.h"
#include "conf/conf.h"
#include "rules/rules.h"

#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define OB(n, a)	"    - name: " n "\n      server: " a "\n" \
			"      key: " K1 "\n"
#define CONF	"client:\n  outbounds:\n" \
	OB("a", "127.0.0.1:443") OB("b", "127.0.0.2:443") \
	OB("c", "127.0.0.3:443") \
	"    - name: fo\n      type: failover\n      members: [a, b]\n" \
	"    - name: sel\n      type: select\n      members: [a, b, c]\n" \
	"    - name: bal\n      type: balance\n      members: [a, b, c]\n" \
	"    - name: outer\n      type: failover\n      members: [fo, c]\n" \
	"  final: fo\n"

static struct conf *
load(const char *yaml, char *err, size_t len)
{
	return conf_load_buf("t.yaml", yaml, strlen(yaml), err, len);
}

static struct outbound *
by(const struct outbounds *obs, const char *name)
{
	size_t i;

	for (i = 0; i < obs->n; i++)
		if (strcmp(outbound_name(obs->v[i]), name) == 0)
			return obs->v[i];
	fail_msg("no outbound %s", name);
	return NULL;
}

/* The outbounds of yaml (they hold their own reference to its conf). */
static struct outbounds *
obs_load(const char *yaml)
{
	char err[512];
	struct conf *c = load(yaml, err, sizeof(err));
	struct outbounds *obs;

	if (c == NULL)
		fail_msg("%s", err);
	obs = outbounds_new(NULL, c, NULL);
	conf_unref(c);
	assert_non_null(obs);
	return obs;
}

static void
query(struct rule_query *q, const char *dst)
{
	memset(q, 0, sizeof(*q));
	q->family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, dst, q->dst), 1);
	q->port = 443;
	q->network = RULES_NET_TCP;
}

/* Down after HEALTH_DOWN_AFTER failures in a row; an answer between
 * resets the count; the backoff doubles per failed trial up to the cap;
 * an answer brings it up. */
static void
test_health(void **state)
{
	struct health h;
	uint64_t t = 5000;
	unsigned expect = HEALTH_BACKOFF_MIN_MS, n = 0;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_false(health_fail(&h, t, "x"));
	assert_false(health_fail(&h, t, "x"));
	assert_false(health_ok(&h, t));		/* the count starts over */
	assert_false(health_fail(&h, t, "x"));
	assert_false(health_fail(&h, t, "x"));
	assert_true(health_usable(&h, t));
	assert_true(health_fail(&h, t, "server unreachable"));
	assert_int_equal(h.state, HEALTH_DOWN);
	assert_string_equal(h.why, "server unreachable");
	assert_int_equal(h.since_ms, 5000);
	/* Late failures of flows from before change nothing. */
	assert_false(health_fail(&h, t + 10, "x"));
	for (;;) {
		assert_int_equal(h.backoff_ms, expect);
		assert_false(health_usable(&h, t + expect - 1));
		t += expect;
		assert_true(health_usable(&h, t));
		health_start(&h, t);		/* the one trial flow */
		assert_int_equal(h.state, HEALTH_TRIAL);
		assert_false(health_usable(&h, t));
		assert_true(health_fail(&h, t, "connect timeout"));
		assert_int_equal(h.state, HEALTH_DOWN);
		if (expect == HEALTH_BACKOFF_MAX_MS && ++n == 2)
			break;
		expect = expect * 2 > HEALTH_BACKOFF_MAX_MS ?
		    HEALTH_BACKOFF_MAX_MS : expect * 2;
	}
	assert_int_equal(h.since_ms, 5000);	/* down since the first */
	assert_int_equal(h.downs, 1);
	t += HEALTH_BACKOFF_MAX_MS;
	health_start(&h, t);
	assert_true(health_ok(&h, t + 30));
	assert_int_equal(h.state, HEALTH_UP);
	assert_int_equal(h.fails, 0);
	assert_true(health_usable(&h, t + 30));
	/* Down again: the backoff starts from the minimum. */
	health_fail(&h, t, "x");
	health_fail(&h, t, "x");
	health_fail(&h, t, "x");
	assert_int_equal(h.backoff_ms, HEALTH_BACKOFF_MIN_MS);
	assert_int_equal(h.downs, 2);
}

/* A trial that never reports lets another flow through later. */
static void
test_health_trial_lost(void **state)
{
	struct health h;

	(void)state;
	memset(&h, 0, sizeof(h));
	health_fail(&h, 0, "x");
	health_fail(&h, 0, "x");
	health_fail(&h, 0, "x");
	health_start(&h, 1000);
	assert_false(health_usable(&h, 1000 + HEALTH_TRIAL_MS - 1));
	assert_true(health_usable(&h, 1000 + HEALTH_TRIAL_MS));
}

static void
down(struct outbound *ob, uint64_t t)
{
	int i;

	for (i = 0; i < HEALTH_DOWN_AFTER; i++)
		health_fail(&ob->stats->health, t, "server unreachable");
	assert_int_equal(ob->stats->health.state, HEALTH_DOWN);
}

/* failover: the first member up; none: the group itself, which blocks;
 * after the backoff one flow tries the first again, the rest do not. */
static void
test_failover(void **state)
{
	struct outbounds *obs = obs_load(CONF);
	struct outbound *a, *b, *fo, *outer, *r;
	struct rule_query q;
	uint64_t t = 100000;

	(void)state;
	a = by(obs, "a");
	b = by(obs, "b");
	fo = by(obs, "fo");
	outer = by(obs, "outer");
	query(&q, "192.0.2.1");
	assert_true(outbound_is_group(fo));
	assert_false(outbound_is_group(a));
	assert_true(outbound_blocks(fo));	/* as itself: refuses */
	assert_ptr_equal(group_pick(fo, &q, t, NULL), a);
	assert_ptr_equal(group_pick(a, &q, t, NULL), a);
	/* skip: the retry of a flow that failed on a */
	assert_ptr_equal(group_pick(fo, &q, t, a), b);
	down(a, t);
	assert_ptr_equal(group_pick(fo, &q, t, NULL), b);
	down(b, t);
	assert_ptr_equal(group_pick(fo, &q, t, NULL), fo);	/* closed */
	assert_true(outbound_blocks(group_pick(fo, &q, t, NULL)));
	/* nested: fo has none up, so outer's next member */
	assert_ptr_equal(group_pick(outer, &q, t, NULL), by(obs, "c"));
	/* the backoff passed: one flow tries a */
	t += HEALTH_BACKOFF_MIN_MS;
	r = group_pick(fo, &q, t, NULL);
	assert_ptr_equal(r, a);
	health_start(&r->stats->health, t);
	assert_ptr_equal(group_pick(fo, &q, t, NULL), b);	/* b's turn */
	health_start(&b->stats->health, t);
	assert_ptr_equal(group_pick(fo, &q, t, NULL), fo);
	health_ok(&a->stats->health, t + 5);	/* a answered */
	assert_ptr_equal(group_pick(fo, &q, t + 5, NULL), a);
	outbounds_free(obs);
}

/* select: the chosen member, taken only while up; balance: one
 * destination sticks to one member, and a member going down moves only
 * its own destinations. */
static void
test_select_balance(void **state)
{
	char err[512], addr[32];
	struct outbounds *obs = obs_load(CONF);
	struct outbound *sel, *bal, *before[64], *r;
	struct rule_query q;
	unsigned i, seen[3] = { 0, 0, 0 }, moved = 0;

	(void)state;
	sel = by(obs, "sel");
	bal = by(obs, "bal");
	query(&q, "192.0.2.1");
	assert_ptr_equal(group_pick(sel, &q, 0, NULL), by(obs, "a"));
	assert_int_equal(group_select(obs, "sel", "c", err, sizeof(err)), 0);
	assert_ptr_equal(group_pick(sel, &q, 0, NULL), by(obs, "c"));
	assert_int_equal(group_select(obs, "sel", "zz", err, sizeof(err)), -1);
	assert_string_equal(err, "zz: not a member of sel");
	assert_int_equal(group_select(obs, "fo", "a", err, sizeof(err)), -1);
	down(by(obs, "c"), 0);
	assert_ptr_equal(group_pick(sel, &q, 0, NULL), sel);	/* closed */

	health_ok(&by(obs, "c")->stats->health, 0);
	for (i = 0; i < 64; i++) {
		snprintf(addr, sizeof(addr), "198.51.100.%u", i);
		query(&q, addr);
		before[i] = group_pick(bal, &q, 0, NULL);
		assert_ptr_equal(group_pick(bal, &q, 0, NULL), before[i]);
		seen[before[i]->index]++;
	}
	for (i = 0; i < 3; i++)		/* spread over all three */
		assert_true(seen[i] > 5);
	down(by(obs, "b"), 0);
	for (i = 0; i < 64; i++) {
		snprintf(addr, sizeof(addr), "198.51.100.%u", i);
		query(&q, addr);
		r = group_pick(bal, &q, 0, NULL);
		assert_ptr_not_equal(r, by(obs, "b"));
		if (r != before[i])
			moved++;
		if (before[i] != by(obs, "b"))
			assert_ptr_equal(r, before[i]);
	}
	assert_int_equal(moved, seen[1]);
	outbounds_free(obs);
}

/* select's choice kept across a restart: saved, loaded into a new set;
 * lines naming no select group or no member are skipped. */
static void
test_state(void **state)
{
	char err[512], dir[] = "/tmp/test_group.XXXXXX", path[64], sp[64];
	struct conf *c = load(CONF, err, sizeof(err));
	struct outbounds *obs, *obs2;
	FILE *fp;

	(void)state;
	if (c == NULL)
		fail_msg("%s", err);
	assert_non_null(mkdtemp(dir));
	assert_null(group_state_path("", sp, sizeof(sp)));
	snprintf(path, sizeof(path), "%s/c.sock", dir);
	assert_string_equal(group_state_path(path, sp, sizeof(sp)),
	    strcat(strcpy(err, path), ".select"));
	assert_non_null(obs = outbounds_new(NULL, c, NULL));
	assert_int_equal(group_state_load(obs, sp), 0);	/* none yet */
	assert_int_equal(group_select(obs, "sel", "b", err, sizeof(err)), 0);
	assert_int_equal(group_state_save(obs, sp), 0);
	assert_non_null(obs2 = outbounds_new(NULL, c, NULL));
	assert_ptr_equal(group_selected(by(obs2, "sel")), by(obs2, "a"));
	assert_int_equal(group_state_load(obs2, sp), 0);
	assert_ptr_equal(group_selected(by(obs2, "sel")), by(obs2, "b"));
	outbounds_free(obs2);
	assert_non_null(fp = fopen(sp, "w"));
	fprintf(fp, "fo a\nsel zz\ngarbage\nsel c\n");
	fclose(fp);
	assert_non_null(obs2 = outbounds_new(NULL, c, NULL));
	assert_int_equal(group_state_load(obs2, sp), 0);
	assert_ptr_equal(group_selected(by(obs2, "sel")), by(obs2, "c"));
	outbounds_free(obs2);
	outbounds_free(obs);
	conf_unref(c);
	unlink(sp);
	rmdir(dir);
}

static void
bad(const char *groups, const char *want)
{
	char yaml[2048], err[512];
	struct conf *c;

	snprintf(yaml, sizeof(yaml), "client:\n  outbounds:\n"
	    OB("a", "127.0.0.1:443") "%s", groups);
	c = load(yaml, err, sizeof(err));
	if (c != NULL)
		fail_msg("accepted: %s", groups);
	if (strstr(err, want) == NULL)
		fail_msg("error '%s' lacks '%s'", err, want);
}

/* yaml loaded, dumped by check (the dump must hold want) and the dump
 * loaded again: what it gives. */
static struct conf *
dump_reload(const char *yaml, const char *want)
{
	char err[512], *buf = NULL;
	size_t len = 0;
	struct conf *c = load(yaml, err, sizeof(err)), *c2;
	FILE *fp;

	if (c == NULL)
		fail_msg("%s", err);
	assert_non_null(fp = open_memstream(&buf, &len));
	conf_dump_secrets(c, fp);
	assert_int_equal(fclose(fp), 0);
	if (strstr(buf, want) == NULL)
		fail_msg("the dump lacks '%s':\n%s", want, buf);
	if ((c2 = load(buf, err, sizeof(err))) == NULL)
		fail_msg("the dump does not load: %s\n%s", err, buf);
	conf_unref(c);
	free(buf);
	return c2;
}

/* check prints groups in a form that loads back the same. */
static void
test_dump(void **state)
{
	struct conf *c2 = dump_reload(CONF, "    - name: \"outer\"\n"
	    "      type: failover\n      members: [\"fo\", \"c\"]\n");

	(void)state;
	assert_int_equal(c2->client.noutbounds, 7);
	assert_int_equal(c2->client.outbounds[6].group, CONF_GROUP_FAILOVER);
	assert_int_equal(c2->client.outbounds[6].nmembers, 2);
	assert_int_equal(c2->client.outbounds[6].members[0], 3);
	assert_int_equal(c2->client.outbounds[4].group, CONF_GROUP_SELECT);
	assert_int_equal(c2->client.outbounds[5].group, CONF_GROUP_BALANCE);
	assert_string_equal(conf_final(c2)->name, "fo");
	conf_unref(c2);
}

static void
test_check(void **state)
{
	(void)state;
	bad("    - name: g\n      type: failover\n      members: [a, zz]\n",
	    "t.yaml:8:20: client.outbounds: 'zz': no outbound of that name");
	bad("    - name: g\n      type: failover\n      members: []\n",
	    "t.yaml:8:16: client.outbounds[1].members: a group needs at "
	    "least one member");
	bad("    - name: g\n      type: failover\n      members: [g]\n",
	    "'g': a group cannot be its own member");
	bad("    - name: g\n      type: failover\n      members: [a, h]\n"
	    "    - name: h\n      type: select\n      members: [g]\n",
	    "t.yaml:8:16: client.outbounds: group 'g': its members lead back "
	    "to it (a cycle)");
	bad("    - name: g\n      type: failover\n      members: [a, a]\n",
	    "'a': listed twice");
	bad("    - name: g\n      type: failover\n",
	    "members");
	bad("    - name: g\n      members: [a]\n      server: x:1\n",
	    "members need a group type");
	bad("    - name: g\n      type: fastest2\n      members: [a]\n",
	    "t.yaml:7:13");
	bad("    - name: g\n      type: balance\n      members: [{name: a, "
	    "weight: 101}]\n", "t.yaml:8:35: client.outbounds[1].members[0]"
	    ".weight: 101 out of range (1..100)");
	bad("    - name: g\n      type: balance\n      members: [{name: a, "
	    "weight: 0}]\n", "t.yaml:8:35");
	bad("    - name: g\n      type: failover\n      members: [{name: a, "
	    "weight: 2}]\n", "t.yaml:8:35: client.outbounds: weight: only "
	    "a balance group weighs its members");
	bad("    - name: g\n      type: balance\n      members: [{weight: "
	    "2}]\n", "name");
	bad("    - name: g\n      type: balance\n      members: [{name: a, "
	    "wait: 2}]\n", "wait");
	bad("    - name: g\n      type: failover\n      members: [a]\n"
	    "      strategy: flow\n", "t.yaml:6:7: client.outbounds[1]."
	    "strategy: needs type: balance");
	bad("    - name: g\n      type: balance\n      members: [a]\n"
	    "      strategy: random\n", "t.yaml:9:17");
	bad("    - name: g\n      type: balance\n      members: [a]\n"
	    "      server: 127.0.0.1:1\n",
	    "client.outbounds[1].server: not used by a group");
}

/* Slowness against its own baseline: degraded (a soft down, why with
 * the numbers), taken only when nothing is up; a fast trial answer
 * brings it back; a refusal is down at once. */
static void
test_health_slow(void **state)
{
	struct health h;
	uint64_t t = 1000;
	int i;

	(void)state;
	memset(&h, 0, sizeof(h));
	for (i = 0; i < 20; i++)
		assert_false(health_answer(&h, t++, 20000));	/* 20 ms */
	assert_int_equal(h.first_byte.base, 20000);
	/* One slow answer moves the recent average, not the state. */
	assert_false(health_answer(&h, t++, 400000));
	assert_int_equal(h.state, HEALTH_UP);
	assert_int_equal(h.first_byte.base, 20000);	/* not in the base */
	assert_true(health_answer(&h, t, 400000));
	assert_int_equal(h.state, HEALTH_DOWN);
	assert_true(health_degraded(&h));
	assert_string_equal(health_name(&h), "degraded");
	assert_string_equal(h.why, "slow: first byte 186 ms, its baseline "
	    "20 ms");
	assert_false(health_usable(&h, t));
	/* The trial: slow again, down again, the backoff doubled. */
	t += HEALTH_BACKOFF_MIN_MS;
	health_start(&h, t);
	assert_true(health_answer(&h, t, 400000));
	assert_int_equal(h.backoff_ms, 2 * HEALTH_BACKOFF_MIN_MS);
	assert_true(h.first_byte.base > 20000);		/* 1/8 of the way */
	t += h.backoff_ms;
	health_start(&h, t);
	assert_true(health_answer(&h, t, 25000));
	assert_int_equal(h.state, HEALTH_UP);
	assert_false(health_degraded(&h));
	/* A hard failure during a degraded trial: plain down. */
	memset(&h, 0, sizeof(h));
	assert_true(health_refused(&h, t, "refused: x"));
	assert_int_equal(h.state, HEALTH_DOWN);
	assert_false(health_degraded(&h));
	assert_string_equal(health_name(&h), "down");
	assert_false(health_refused(&h, t + 1, "refused: x"));	/* no news */
	/* Retransmits: 0.5 % for a while, then 10 %. */
	memset(&h, 0, sizeof(h));
	assert_false(health_retrans(&h, t, 10, 5));	/* too few segments */
	for (i = 0; i < 10; i++)
		assert_false(health_retrans(&h, t, 1000, 5));
	assert_false(health_retrans(&h, t, 1000, 100));
	assert_false(health_retrans(&h, t, 1000, 100));
	assert_true(health_retrans(&h, t, 1000, 100));
	assert_true(health_degraded(&h));
	assert_string_equal(h.why, "retransmits 5.9 %, its baseline 0.5 %");
}

/* Record n answers of fb_us on ob's health. */
static void
answers(struct outbound *ob, uint64_t t, uint32_t fb_us, int n)
{
	while (n-- > 0)
		health_answer(&ob->stats->health, t, fb_us);
}

#define FAST	"client:\n  outbounds:\n" \
	OB("a", "127.0.0.1:443") OB("b", "127.0.0.2:443") \
	"    - name: f\n      type: fastest\n      members: [a, b]\n" \
	"    - name: w\n      type: balance\n      members: [a, {name: b, " \
	"weight: 3}]\n" \
	"    - name: pf\n      type: balance\n      strategy: flow\n" \
	"      members: [a, b]\n" \
	"  final: f\n"

/* fastest: first the first member, one flow to measure the other; a
 * cheaper one takes over only past the margin and the hold time; a
 * degraded member is left while another is up. */
static void
test_fastest(void **state)
{
	struct outbounds *obs = obs_load(FAST);
	struct outbound *a, *b, *f;
	struct rule_query q;
	uint64_t t = 100000;

	(void)state;
	a = by(obs, "a");
	b = by(obs, "b");
	f = by(obs, "f");
	query(&q, "192.0.2.1");
	assert_ptr_equal(group_pick_flow(f, &q, t), a);	/* chosen */
	answers(a, t, 50000, 10);
	assert_ptr_equal(group_pick(f, &q, t, NULL), a);	/* a look */
	assert_ptr_equal(group_pick_flow(f, &q, t), b);	/* measure b */
	assert_ptr_equal(group_pick_flow(f, &q, t), a);	/* once */
	answers(b, t, 40000, 10);		/* 20 % cheaper: not enough */
	t += GROUP_FASTEST_HOLD_MS;
	assert_ptr_equal(group_pick_flow(f, &q, t), a);
	answers(b, t, 30000, 10);		/* 40 % cheaper */
	assert_ptr_equal(group_pick_flow(f, &q, t), b);
	assert_string_equal(f->stats->selected, "b");
	/* a cheaper again at once: held for GROUP_FASTEST_HOLD_MS. */
	answers(a, t, 5000, 10);
	assert_ptr_equal(group_pick_flow(f, &q, t + 1), b);
	assert_ptr_equal(group_pick_flow(f, &q, t + GROUP_FASTEST_HOLD_MS - 1),
	    b);
	assert_ptr_equal(group_pick_flow(f, &q, t + GROUP_FASTEST_HOLD_MS),
	    a);
	t += GROUP_FASTEST_HOLD_MS;
	/* b not measured for GROUP_FASTEST_EXPLORE_MS: one flow to it. */
	t += GROUP_FASTEST_EXPLORE_MS;
	answers(a, t, 5000, 1);
	assert_ptr_equal(group_pick_flow(f, &q, t), b);
	assert_ptr_equal(group_pick_flow(f, &q, t), a);
	/* a down: b at once, hold or not. */
	down(a, t);
	assert_ptr_equal(group_pick_flow(f, &q, t), b);
	assert_string_equal(f->stats->selected, "b");
	/* every member degraded: still served (slow beats none) */
	health_refused(&a->stats->health, t, "refused: x");
	answers(b, t, 900000, 3);
	assert_true(health_degraded(&b->stats->health));
	assert_ptr_equal(group_pick_flow(f, &q, t), b);
	outbounds_free(obs);
}

/* balance weights: b of weight 3 takes about 3/4 of the destinations;
 * strategy flow spreads one destination's flows over both, in turn. */
static void
test_weights(void **state)
{
	char addr[32];
	struct outbounds *obs = obs_load(FAST);
	struct outbound *w, *pf, *b;
	struct rule_query q;
	unsigned i, nb = 0;

	(void)state;
	w = by(obs, "w");
	pf = by(obs, "pf");
	b = by(obs, "b");
	for (i = 0; i < 1000; i++) {
		snprintf(addr, sizeof(addr), "10.%u.%u.1", i / 250, i % 250);
		query(&q, addr);
		if (group_pick(w, &q, 0, NULL) == b)
			nb++;
		assert_ptr_equal(group_pick(w, &q, 0, NULL),
		    group_pick(w, &q, 0, NULL));	/* sticks */
	}
	if (nb < 700 || nb > 800)
		fail_msg("weight 3 of 4 took %u of 1000", nb);
	query(&q, "192.0.2.1");
	for (i = 0, nb = 0; i < 1000; i++)
		if (group_pick_flow(pf, &q, 0) == b)
			nb++;
	if (nb != 500)
		fail_msg("strategy flow: b took %u of 1000", nb);
	/* round robin: any 8 flows in a row split 4:4 (8 parallel
	 * downloads, one member's link each: the busier one sets the time) */
	for (i = 0, nb = 0; i < 8; i++)
		if (group_pick_flow(pf, &q, 0) == b)
			nb++;
	assert_int_equal(nb, 4);
	for (i = 0; i < 8; i++) {	/* in turn */
		struct outbound *x = group_pick_flow(pf, &q, 0);

		assert_ptr_not_equal(group_pick_flow(pf, &q, 0), x);
	}
	/* A look, or a UDP datagram: by destination, always the same. */
	q.network = RULES_NET_UDP;
	for (i = 0; i < 20; i++)
		assert_ptr_equal(group_pick_flow(pf, &q, 0), group_pick(pf, &q,
		    0, NULL));
	outbounds_free(obs);
}

/* Weights, strategy flow and fastest survive the dump too. */
static void
test_dump_weights(void **state)
{
	struct conf *c2 = dump_reload(FAST, "      type: balance\n      members: "
	    "[\"a\", {name: \"b\", weight: 3}]\n");

	(void)state;
	assert_int_equal(c2->client.outbounds[2].group, CONF_GROUP_FASTEST);
	assert_int_equal(c2->client.outbounds[3].weights[0], 1);
	assert_int_equal(c2->client.outbounds[3].weights[1], 3);
	assert_false(c2->client.outbounds[3].per_flow);
	assert_true(c2->client.outbounds[4].per_flow);
	conf_unref(c2);
}

/* What one worker's set told (group_news_hook). */
static struct group_news news[16];
static size_t nnews;

static void
told(void *arg, const struct group_news *n)
{
	(void)arg;
	assert_true(nnews < sizeof(news) / sizeof(news[0]));
	news[nnews++] = *n;
}

/* Every news told so far taken into obs (as from worker 1): how many
 * were applied. */
static int
take_all(const struct outbounds *obs)
{
	size_t i;
	int n = 0;

	for (i = 0; i < nnews; i++)
		if (group_news_take(obs, &news[i], sizeof(news[i]), 1) == 0)
			n++;
	nnews = 0;
	return n;
}

/* Two workers' copies of the same outbounds: what a flow records on a
 * group's member in one reaches the other's (down, trial, up again,
 * the first-byte average); a lone outbound's and a renamed server's
 * do not. */
static void
test_news(void **state)
{
	struct outbounds *w0 = obs_load(CONF), *w1 = obs_load(CONF);
	struct outbounds *moved;
	struct health *h0 = &by(w0, "a")->stats->health;
	struct health *h1 = &by(w1, "a")->stats->health;
	struct health_event ev = { .kind = HEALTH_EV_TRIAL };
	char *yaml;
	int i;

	(void)state;
	nnews = 0;
	group_news_hook(told, NULL, NULL);
	for (i = 0; i < HEALTH_DOWN_AFTER; i++)
		outbound_fail(by(w0, "a"), "connect timeout");
	assert_int_equal(h0->state, HEALTH_DOWN);
	assert_int_equal(h1->state, HEALTH_UP);
	assert_int_equal(take_all(w1), HEALTH_DOWN_AFTER);
	assert_int_equal(h1->state, HEALTH_DOWN);
	assert_string_equal(h1->why, "connect timeout");
	assert_int_equal(h1->backoff_ms, h0->backoff_ms);
	/* Counted where the evidence was: the workers' sum is one. */
	assert_int_equal(h0->downs, 1);
	assert_int_equal(h1->downs, 0);
	/* Applied news is not told again. */
	assert_int_equal(nnews, 0);
	/* A trial elsewhere: no flow here tries it meanwhile. */
	assert_false(health_apply(h1, h1->retry_ms, &ev));
	assert_int_equal(h1->state, HEALTH_TRIAL);
	assert_false(health_usable(h1, h1->retry_ms - 1));
	/* Its answer, with its first-byte time: up, and measured. */
	outbound_answer(by(w0, "a"), 5000);
	assert_int_equal(h0->state, HEALTH_UP);
	assert_int_equal(take_all(w1), 1);
	assert_int_equal(h1->state, HEALTH_UP);
	assert_int_equal(h1->first_byte.recent, 5000);
	/* Answers while up are samples there too (fastest's cost). */
	outbound_answer(by(w0, "a"), 7000);
	assert_int_equal(take_all(w1), 1);
	assert_int_equal(h1->first_byte.n, 1);
	assert_int_equal(h1->first_byte.recent, h0->first_byte.recent);
	/* Refused: down at once, there too. */
	outbound_refused(by(w0, "b"), "refused: no tunsplit status");
	assert_int_equal(take_all(w1), 1);
	assert_int_equal(by(w1, "b")->stats->health.state, HEALTH_DOWN);
	/* A worker that reloaded to a config where a is another server. */
	yaml = strdup(CONF);
	assert_non_null(yaml);
	memcpy(strstr(yaml, "127.0.0.1:443"), "127.0.0.9", 9);
	moved = obs_load(yaml);
	free(yaml);
	outbound_fail(by(w0, "a"), "x");
	assert_int_equal(nnews, 1);
	assert_int_equal(group_news_take(moved, &news[0], sizeof(news[0]), 1),
	    -1);
	assert_int_equal(by(moved, "a")->stats->health.fails, 0);
	/* Malformed news, or a name not there. */
	assert_int_equal(group_news_take(w1, &news[0], sizeof(news[0]) - 1,
	    1), -1);
	strcpy(news[0].name, "zz");
	assert_int_equal(take_all(w1), 0);
	group_news_hook(NULL, NULL, NULL);
	outbound_fail(by(w0, "a"), "x");
	assert_int_equal(nnews, 0);
	outbounds_free(moved);
	outbounds_free(w0);
	outbounds_free(w1);
}

/* A member of no group tells nothing: its health decides no pick. */
static void
test_news_lone(void **state)
{
	struct outbounds *obs = obs_load("client:\n  outbounds:\n"
	    OB("a", "127.0.0.1:443") OB("b", "127.0.0.2:443")
	    "    - name: fo\n      type: failover\n      members: [a]\n"
	    "  final: fo\n");

	(void)state;
	nnews = 0;
	group_news_hook(told, NULL, NULL);
	outbound_fail(by(obs, "b"), "x");
	assert_int_equal(nnews, 0);
	outbound_fail(by(obs, "a"), "x");
	assert_int_equal(nnews, 1);
	assert_int_equal(news[0].ev.kind, HEALTH_EV_FAIL);
	assert_string_equal(news[0].name, "a");
	group_news_hook(NULL, NULL, NULL);
	outbounds_free(obs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_health_trial_lost),
		cmocka_unit_test(test_health_slow),
		cmocka_unit_test(test_fastest),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_select_balance),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_dump_weights),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_news),
		cmocka_unit_test(test_news_lone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
