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

void
server_status_fill(struct sess_env *env, const struct conf *c,
    struct status_fill *sf)
{
	struct status	*st = sf->st;

	st->role = "server";
	st->active = env->nlive;
	st->total = env->next_id;
	st->refused = env->stats.refused;
	st->failed = env->stats.failed;
	st->internal = env->stats.internal;
	st->unused = env->stats.unused;
	st->waited = env->stats.waited;
	st->max = c->server.max_conns;
	st->bytes_up = env->stats.bytes_up;
	st->bytes_down = env->stats.bytes_down;
	st->failures = &env->stats.failures;
	st->rejects = &env->stats.rejects;
	st->handshake = &env->stats.handshake;
	st->users = c->server.nusers;
	st->has_cover = cover_enabled(env->cover);
	snprintf(st->cover, sizeof(st->cover), "%s", cover_name(env->cover));
	st->cover_relayed = env->stats.fallback;
	st->cover_failed = env->stats.fallback_failed;
	if (env->lim != NULL) {
		status_fill_limits(st, &env->lim->st, &env->lim->mem);
		st->has_sources = true;
		st->sources = env->lim->sources.n;
		st->udp_sessions = env->lim->udp;
		st->udp_max = c->server.max_udp;
		st->preauth = env->lim->preauth;
		st->preauth_max = c->server.max_preauth;
		st->cover_sessions = env->lim->cover;
		st->cover_mem_used = env->lim->cover_mem.used;
		st->cover_mem_peak = env->lim->cover_mem.peak;
		st->cover_mem_max = env->lim->cover_mem.max;
		st->cover_mem_denied = env->lim->cover_mem.denied;
	}
	if (env->resolver != NULL) {
		st->has_resolver = true;
		st->resolver = *resolver_stats(env->resolver);
	}
	sess_foreach(env, server_on_sess, sf);
}
