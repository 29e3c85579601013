/*
 * The server's part of a status snapshot (daemon/status.h): sessions,
 * users, rejections, the cover site, the limits and the resolver, and
 * with a flow list one entry per live session with its TCP_INFO.
 */
#include "config.h"

#include "server/server_int.h"

#include <stdio.h>
#include <string.h>

#include "conf/conf.h"
#include "daemon/status.h"
#include "server/cover.h"
#include "server/resolve.h"
#include "server/sess/sess.h"

static void
server_on_sess(void *arg, const struct sess_info *si)
{
	struct status_fill	*sf = arg;
	struct status_flow	*f;

	sf->st->bytes_up += si->up;
	sf->st->bytes_down += si->down;
	if ((f = status_flow_add(sf)) == NULL)
		return;
	f->id = si->id;
	addr_fmt(si->peer, f->peer, sizeof(f->peer));
	if (si->target != NULL)
		addr_fmt(si->target, f->dst, sizeof(f->dst));
	else
		snprintf(f->dst, sizeof(f->dst), "-");
	if (si->user != NULL)
		snprintf(f->user, sizeof(f->user), "%s", si->user);
	f->state = si->state;
	f->age_ms = sf->now_ms - si->start_ms;
	f->up = si->up;
	f->down = si->down;
	status_flow_tcp_info(f, si->fd);
}

/* One worker's counters and sessions, added on its own thread while the
 * main thread waits (server_worker_call). */
static void
server_status_worker(struct worker *w, void *arg)
{
	struct status_fill	*sf = arg;
	struct status		*st = sf->st;
	struct sess_env		*env = &w->env;
	struct sess_stats	*agg = &w->srv->agg;

	st->active += env->nlive;
	st->total += env->next_id;
	agg->refused += env->stats.refused;
	agg->failed += env->stats.failed;
	agg->internal += env->stats.internal;
	agg->unused += env->stats.unused;
	agg->waited += env->stats.waited;
	agg->bytes_up += env->stats.bytes_up;
	agg->bytes_down += env->stats.bytes_down;
	agg->fallback += env->stats.fallback;
	agg->fallback_failed += env->stats.fallback_failed;
	agg->reuse_offered += env->stats.reuse_offered;
	agg->reused += env->stats.reused;
	agg->reuse_errors += env->stats.reuse_errors;
	stats_reasons_merge(&agg->failures, &env->stats.failures);
	stats_reasons_merge(&agg->rejects, &env->stats.rejects);
	stats_hist_merge(&agg->handshake, &env->stats.handshake);
	if (w->idx < STATUS_WORKERS_MAX) {
		st->worker_total[w->idx] = env->next_id;
		st->worker_active[w->idx] = env->nlive;
	}
	if (env->resolver != NULL) {
		st->has_resolver = true;
		status_resolver_merge(&w->srv->agg_res,
		    resolver_stats(env->resolver));
	}
	if (w->idx == 0) {
		st->has_cover = cover_enabled(env->cover);
		snprintf(st->cover, sizeof(st->cover), "%s",
		    cover_name(env->cover));
	}
	sess_foreach(env, server_on_sess, sf);
}

void
server_status_fill(struct server *srv, struct status_fill *sf)
{
	struct status		*st = sf->st;
	const struct conf	*c = srv->conf;
	struct sess_stats	*agg = &srv->agg;
	struct limit_server	*ls = &srv->lim;
	unsigned		 i;

	memset(agg, 0, sizeof(*agg));
	memset(&srv->agg_res, 0, sizeof(srv->agg_res));
	st->role = "server";
	st->workers = srv->nworkers;
	for (i = 0; i < srv->nworkers; i++)
		server_worker_call(&srv->w[i], server_status_worker, sf);
	/* Sessions' bytes so far were added to the closed ones'. */
	st->bytes_up += agg->bytes_up;
	st->bytes_down += agg->bytes_down;
	st->refused = agg->refused;
	st->failed = agg->failed;
	st->internal = agg->internal;
	st->unused = agg->unused;
	st->waited = agg->waited;
	st->max = c->server.max_conns;
	st->failures = &agg->failures;
	st->rejects = &agg->rejects;
	st->handshake = &agg->handshake;
	st->users = c->server.nusers;
	st->cover_relayed = agg->fallback;
	st->cover_failed = agg->fallback_failed;
	st->reuse_offered = agg->reuse_offered;
	st->reused = agg->reused;
	st->reuse_errors = agg->reuse_errors;
	st->resolver = srv->agg_res;
	status_fill_limits(st, &ls->st, &ls->mem);
	st->has_sources = true;
	st->sources = ls->sources.n;
	st->udp_sessions = ls->udp;
	st->udp_max = c->server.max_udp;
	st->preauth = ls->preauth;
	st->preauth_max = c->server.max_preauth;
	st->cover_sessions = ls->cover;
	st->cover_mem_used = ls->cover_mem.used;
	st->cover_mem_peak = ls->cover_mem.peak;
	st->cover_mem_max = ls->cover_mem.max;
	st->cover_mem_denied = ls->cover_mem.denied;
}
