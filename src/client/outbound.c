/*
 * The client's outbounds at run time (outbound.h): per entry of
 * client.outbounds its server address, TLS context, warm pool, user id
 * and counters; built per configuration generation, kept alive by the
 * flows and associations that started on them.
 */
#include "config.h"

#include "client/outbound.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "client/group.h"
#include "client/pool.h"
#include "conf/conf.h"
#include "core/log.h"
#include "tls/outer.h"
#include "wire/auth.h"
#include "wire/proto_trojan.h"

_Static_assert(sizeof(((struct outbound_stats *)0)->selected) ==
    CONF_OB_NAME_MAX + 1, "a member's name");

static int
outbound_resolve(const struct conf_outbound *co, struct addr *out)
{
	struct addrinfo hints, *res;
	char port[8];
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_ADDRCONFIG;
	snprintf(port, sizeof(port), "%u", co->server_port);
	if ((rc = getaddrinfo(co->server_host, port, &hints, &res)) != 0) {
		log_warnx("outbound %s: server %s: %s", co->name,
		    co->server_host, gai_strerror(rc));
		return -1;
	}
	memcpy(&out->u.ss, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static bool
outbound_tls(const struct conf_outbound *co)
{
	return co->protocol == CONF_PROTO_TUNSPLIT ||
	    co->protocol == CONF_PROTO_TROJAN;
}

static struct ssl_ctx_st *
outbound_ctx(const struct conf_outbound *co)
{
	struct ssl_ctx_st *ctx;

	if (co->insecure)
		log_warnx("outbound %s: insecure is set: the server's "
		    "certificate is NOT verified; anyone on the path can "
		    "impersonate it", co->name);
	if ((ctx = outer_ctx_client(co->ca_file, co->insecure)) == NULL)
		return NULL;
	if ((co->fp_browser &&
	    outer_ctx_fingerprint(ctx, OUTER_FP_BROWSER) == -1) ||
	    outer_ctx_padding(ctx, co->padding, OUTER_PAD_MAX) == -1 ||
	    (co->has_pin && outer_ctx_pin(ctx, co->pin_sha256) == -1)) {
		outer_ctx_free(ctx);
		return NULL;
	}
	if (co->has_pin)
		log_info("outbound %s: server public key pinned "
		    "(pin_sha256)%s", co->name, co->insecure ? "; with "
		    "insecure, the pin is the only check" : "");
	return ctx;
}

struct outbound *
outbound_new(const struct conf *c, size_t i, struct ssl_ctx_st *ctx,
    const struct addr *server)
{
	const struct conf_outbound *co = &c->client.outbounds[i];
	struct outbound *ob;

	if ((ob = calloc(1, sizeof(*ob))) == NULL ||
	    (ob->stats = calloc(1, sizeof(*ob->stats))) == NULL) {
		free(ob);
		log_warn("outbound %s", co->name);
		return NULL;
	}
	ob->refs = 1;
	dialgate_init(&ob->gate);
	ob->stats->refs = 1;
	ob->conf = conf_ref(c);
	ob->co = co;
	ob->index = i;
	auth_user_id(co->key, ob->user_id);
	if (co->server_host != NULL) {
		ob->has_server = true;
		if (server != NULL)
			ob->server = *server;
		else if (outbound_resolve(co, &ob->server) == -1)
			goto fail;
	}
	if (ctx != NULL) {
		ob->ssl_ctx = ctx;
		ob->ctx_borrowed = true;
	} else if (outbound_tls(co) &&
	    (ob->ssl_ctx = outbound_ctx(co)) == NULL)
		goto fail;
	return ob;
fail:
	outbound_unref(ob);
	return NULL;
}

int
outbound_pool_start(struct outbound *ob, struct loop *l)
{
	if (!outbound_tls(ob->co) || ob->co->pool == 0 || ob->pool != NULL)
		return 0;
	if ((ob->pool = pool_new(l, ob->conf, ob->co, ob->ssl_ctx,
	    &ob->server, &ob->gate)) == NULL) {
		log_warnx("outbound %s: cannot start its pool", ob->co->name);
		return -1;
	}
	return 0;
}

struct outbound *
outbound_ref(struct outbound *ob)
{
	if (ob != NULL)
		ob->refs++;
	return ob;
}

void
outbound_unref(struct outbound *ob)
{
	if (ob == NULL || --ob->refs > 0)
		return;
	pool_free(ob->pool);
	dialgate_fini(&ob->gate);	/* no flow waits: each held a ref */
	if (!ob->ctx_borrowed)
		outer_ctx_free(ob->ssl_ctx);
	if (ob->stats != NULL && --ob->stats->refs == 0)
		free(ob->stats);
	free(ob->members);
	conf_unref(ob->conf);
	free(ob);
}

void
outbound_open(struct outbound *ob)
{
	struct health *h = &ob->stats->health;

	if (h->state == HEALTH_DOWN && health_usable(h, group_now()))
		log_info("outbound %s: down %llu s (%s): one flow let through "
		    "to try it", ob->co->name, (unsigned long long)
		    ((group_now() - h->since_ms) / 1000), h->why);
	if (health_start(h, group_now()))
		group_tell(ob, HEALTH_EV_TRIAL, 0, 0, NULL);
	ob->stats->opened++;
	ob->stats->active++;
}

void
outbound_close(struct outbound *ob, bool failed, uint64_t up, uint64_t down)
{
	if (failed)
		ob->stats->failed++;
	if (ob->stats->active > 0)
		ob->stats->active--;
	ob->stats->bytes_up += up;
	ob->stats->bytes_down += down;
}

void
outbound_fail(struct outbound *ob, const char *why)
{
	struct health *h = &ob->stats->health;

	bool trial = h->state == HEALTH_TRIAL;

	group_tell(ob, HEALTH_EV_FAIL, 0, 0, why);
	if (!health_fail(h, group_now(), why))
		return;
	if (trial)
		log_warnx("outbound %s: still down (%s); the next try in %u ms",
		    ob->co->name, why, h->backoff_ms);
	else if (!group_is_member(ob))
		log_warnx("outbound %s: down (%s, %u flows in a row); it is "
		    "in no group, so new flows still try it", ob->co->name,
		    why, h->fails);
	else
		log_warnx("outbound %s: down (%s, %u flows in a row); new "
		    "flows go to its group's next member; one is let through "
		    "in %u ms", ob->co->name, why, h->fails, h->backoff_ms);
}

/* A change health_* reported, logged: the state it is in now says which. */
static void
outbound_log_change(struct outbound *ob, uint64_t since, bool was_up)
{
	struct health *h = &ob->stats->health;

	if (h->state == HEALTH_UP)
		log_warnx("outbound %s: up again after %llu ms down",
		    ob->co->name, (unsigned long long)(group_now() - since));
	else if (was_up)
		log_warnx("outbound %s: %s (%s); %s", ob->co->name,
		    health_name(h), h->why, group_is_member(ob) ?
		    "new flows go to its group's next member" :
		    "it is in no group, so new flows still try it");
	else
		log_warnx("outbound %s: still %s (%s); the next try in %u ms",
		    ob->co->name, health_name(h), h->why, h->backoff_ms);
}

void
outbound_ok(struct outbound *ob)
{
	outbound_answer(ob, 0);
}

void
outbound_answer(struct outbound *ob, uint32_t fb_us)
{
	struct health *h = &ob->stats->health;
	uint64_t since = h->since_ms;
	bool was_up = h->state == HEALTH_UP;

	group_tell(ob, HEALTH_EV_ANSWER, fb_us, 0, NULL);
	if (health_answer(h, group_now(), fb_us))
		outbound_log_change(ob, since, was_up);
}

void
outbound_refused(struct outbound *ob, const char *why)
{
	struct health *h = &ob->stats->health;
	bool was_up = h->state == HEALTH_UP;

	group_tell(ob, HEALTH_EV_REFUSED, 0, 0, why);
	if (health_refused(h, group_now(), why))
		outbound_log_change(ob, h->since_ms, was_up);
}

void
outbound_retrans(struct outbound *ob, uint32_t segs, uint32_t rtx)
{
	struct health *h = &ob->stats->health;

	group_tell(ob, HEALTH_EV_RETRANS, segs, rtx, NULL);
	if (health_retrans(h, group_now(), segs, rtx))
		outbound_log_change(ob, h->since_ms, true);
}

ssize_t
outbound_tcp_request(const struct outbound *ob, struct outer *out,
    const struct proto_dest *pd, uint8_t *buf, size_t len)
{
	const struct conf_outbound *co = ob->co;
	struct proto_req req;
	uint8_t bind[PROTO_BIND_LEN], ctx[PROTO_BIND_CTX_LEN];
	bool v1 = co->header_version == PROTO_VERSION_1;
	/* Version 3 (reusable, PROTOCOL.md) once the server said it speaks
	 * it, with a pool to give the connection back to; and always on a
	 * connection that carried a flow before. */
	bool reuse = !v1 && co->reuse > 1 && ob->pool != NULL;
	bool v3 = !v1 && (outer_flows(out) > 0 || (reuse && ob->v3));
	ssize_t n;

	if (co->protocol == CONF_PROTO_TROJAN)
		return proto_trojan_encode(buf, len, co->trojan_hex,
		    PROTO_TROJAN_CMD_CONNECT, pd);
	/* Version 2: bound to this TLS connection; version 3 to this flow
	 * of it. */
	proto_bind_context(outer_flows(out), ctx);
	if (!v1 && (v3 ? outer_export_ctx(out, PROTO_BIND_LABEL, ctx,
	    sizeof(ctx), bind, sizeof(bind)) : outer_export(out,
	    PROTO_BIND_LABEL, bind, sizeof(bind))) < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.version = v3 ? PROTO_VERSION_3 : 0;
	req.can_reuse = reuse && !v3;
	req.kind = PROTO_KIND_TCP;
	req.ts = (uint64_t)time(NULL);
	randombytes_buf(req.nonce, sizeof(req.nonce));
	memcpy(req.user_id, ob->user_id, sizeof(req.user_id));
	req.dest = *pd;
	n = proto_req_encode(buf, len, &req, co->key, v1 ? NULL : bind,
	    proto_req_pad_random(&req));
	sodium_memzero(&req, sizeof(req));
	sodium_memzero(bind, sizeof(bind));
	/* The header and the status byte pass unframed, then chunks. */
	if (n > 0 && v3 && outer_frame_begin(out, (size_t)n, 1, NULL, 0) < 0)
		return -1;
	return n;
}

uint8_t
outbound_status(struct outbound *ob, const struct outer *out, uint8_t st)
{
	if (st == (PROTO_OK | PROTO_STATUS_REUSE) && !outer_framed(out)) {
		ob->v3 = true;
		return PROTO_OK;
	}
	return st;
}

bool
outbound_blocks(const struct outbound *ob)
{
	return ob->co->protocol == CONF_PROTO_BLOCK;
}

const char *
outbound_name(const struct outbound *ob)
{
	return ob->co->name;
}

/* ---- a generation's set ------------------------------------------------- */

/* The counters of prev's outbound of the same name, shared. */
static void
outbound_take_stats(struct outbound *ob, const struct outbounds *prev)
{
	size_t i;

	for (i = 0; prev != NULL && i < prev->n; i++) {
		if (strcmp(prev->v[i]->co->name, ob->co->name) != 0)
			continue;
		free(ob->stats);
		ob->stats = prev->v[i]->stats;
		ob->stats->refs++;
		return;
	}
}

/* Each group's members, from its set. */
static int
outbounds_link(struct outbounds *obs)
{
	const struct conf_outbound *co;
	struct outbound *ob;
	size_t i, m;

	for (i = 0; i < obs->n; i++) {
		ob = obs->v[i];
		co = ob->co;
		if (co->nmembers == 0)
			continue;
		if ((ob->members = calloc(co->nmembers,
		    sizeof(*ob->members))) == NULL) {
			log_warn("outbound %s", co->name);
			return -1;
		}
		for (m = 0; m < co->nmembers; m++)
			ob->members[m] = obs->v[co->members[m]];
		ob->nmembers = co->nmembers;
	}
	return 0;
}

struct outbounds *
outbounds_new(struct loop *l, const struct conf *c,
    const struct outbounds *prev)
{
	struct outbounds *obs;
	size_t i;

	if ((obs = calloc(1, sizeof(*obs))) == NULL ||
	    (obs->v = calloc(c->client.noutbounds, sizeof(*obs->v))) == NULL) {
		free(obs);
		log_warn("outbounds");
		return NULL;
	}
	obs->conf = conf_ref(c);
	for (i = 0; i < c->client.noutbounds; i++) {
		if ((obs->v[i] = outbound_new(c, i, NULL, NULL)) == NULL)
			goto fail;
		obs->n = i + 1;
		outbound_take_stats(obs->v[i], prev);
		if (l != NULL && outbound_pool_start(obs->v[i], l) == -1)
			goto fail;
	}
	if (outbounds_link(obs) == -1)
		goto fail;
	return obs;
fail:
	outbounds_retire(obs);
	return NULL;
}

struct outbounds *
outbounds_one(struct outbound *ob)
{
	struct outbounds *obs;

	if ((obs = calloc(1, sizeof(*obs))) == NULL ||
	    (obs->v = calloc(1, sizeof(*obs->v))) == NULL) {
		free(obs);
		outbound_unref(ob);
		return NULL;
	}
	obs->conf = conf_ref(ob->conf);
	obs->n = 1;
	obs->v[0] = ob;
	return obs;
}

static void
outbounds_drop(struct outbounds *obs, bool running)
{
	size_t i;

	if (obs == NULL)
		return;
	for (i = 0; i < obs->n; i++) {
		/* Only new flows would take from the pool: close it now. */
		if (running)
			pool_retire(obs->v[i]->pool);
		else
			pool_free(obs->v[i]->pool);
		obs->v[i]->pool = NULL;
		outbound_unref(obs->v[i]);
	}
	free(obs->v);
	conf_unref(obs->conf);
	free(obs);
}

void
outbounds_free(struct outbounds *obs)
{
	outbounds_drop(obs, false);
}

void
outbounds_retire(struct outbounds *obs)
{
	outbounds_drop(obs, true);
}
