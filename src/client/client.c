/*
 * The client role: one loop owns the TUN fd, lwIP (NO_SYS, so only this
 * thread ever touches it) and every outer stream.
 */
#include "config.h"

#include "client/client.h"
#include "client/client_int.h"

#include <errno.h>
#include <stdbool.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "wire/auth.h"
#include "conf/conf.h"
#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/status.h"
#include "client/tcp/flow_tcp.h"
#include "client/dgram/flow_udp.h"
#include "client/dns/fakeip.h"
#include "client/tcp/flow_dns.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "client/group.h"
#include "client/outbound.h"
#include "client/pool.h"
#include "client/dialer.h"
#include "client/dialgate.h"
#include "client/dns/dnsfwd.h"
#include "client/workers.h"
#include "rules/rules.h"
#include "client/route_test.h"
#include "stack/tsnetif.h"
#include "tun.h"

#define CLIENT_TUN_BATCH	256	/* packets per wakeup, for fairness */

struct client {
	const struct conf	*conf;
	struct loop		*loop;
	int			 tun_fd;	/* this worker's queue */
	int			 tun_fds[WORKERS_MAX];	/* before the fork */
	unsigned		 nworkers;
	struct workers		*wk;	/* NULL: one worker */
	bool			 failed;	/* a worker died: exit 1 */
	_Atomic unsigned	*all_flows;	/* all workers' flows (mmap) */
	struct control_role	 role;	/* the snapshot's, for workers too */
	struct status_merge_mem	 merged;	/* worker 0: the last snapshot's */
	char			 tun_name[IFNAMSIZ];	/* as the kernel named it */
	bool			 lwip_up;
	struct loop_fd		 tun_lfd;
	struct loop_timer	 lwip_timer;
	struct control		*ctl;	/* status socket, metrics */
	struct daemon_drain	 drain;	/* SIGTERM */
	struct daemon_signals	 sig;	/* SIGHUP, SIGINT, SIGTERM */
	struct flow_udp		*udp;	/* UDP, ICMP echo: tsnetif_ops.other */
	struct outbounds	*obs;	/* the live generation's outbounds */
	struct client_status	 status;	/* what the control socket reads */
	struct flow_env		 env;	/* last: holds the staging buffer */
};

static void
client_on_tun(struct loop_fd *lfd, uint32_t revents)
{
	struct client *cl = container_of(lfd, struct client, tun_lfd);

	(void)revents;
	if (tsnetif_poll(CLIENT_TUN_BATCH) < 0) {
		log_warnx("tun device failed; stopping");
		loop_stop(cl->loop);
	}
}

static void
client_on_lwip_timer(struct loop_timer *t)
{
	struct client *cl = container_of(t, struct client, lwip_timer);
	uint32_t next = tsnetif_timers();

	if (next == 0 || next > 250)
		next = next == 0 ? 1 : 250;
	loop_timer_set(cl->loop, t, next);
}

/*
 * A new generation of the configuration (SIGHUP): new flows and the
 * datagram associations use it and its outbounds, built afresh (servers
 * resolved, TLS contexts and pools made); live flows and associations
 * keep the generation and the outbound they started with until they end.
 * Outbounds that cannot be built (a server name that does not resolve)
 * leave the running ones, and their generation's rules, in place.
 */
static void
client_adopt(void *arg, const struct conf *n)
{
	struct client *cl = arg;
	struct outbounds *obs;

	cl->conf = n;
	cl->env.conf = n;
	if ((obs = outbounds_new(cl->loop, n, cl->obs)) == NULL)
		log_warnx("reload: the outbounds of the new configuration "
		    "cannot be made: new flows keep the running ones");
	else {
		outbounds_retire(cl->obs);
		cl->obs = obs;
		cl->env.obs = obs;
	}
	flow_udp_reconfigure(cl->udp, n, cl->obs);
	workers_send_reload(cl->wk);	/* each reads the file itself */
}

/* Draining: new SYNs get an RST, live flows run on. */
static void
client_stop_accepting(void *arg)
{
	struct client *cl = arg;

	cl->env.draining = true;
	workers_send_drain(cl->wk);
}

/*
 * What the drain waits for.  Worker 0: the flows of every worker (their
 * shared count).  Another: its own, and worker 0 while it is there --
 * such a worker ends when worker 0 ends the client (workers_end), so
 * that until then a new flow the kernel steers to its queue is refused
 * like worker 0's, not left unanswered.
 */
static size_t
client_live(void *arg)
{
	struct client *cl = arg;

	if (cl->wk == NULL)
		return cl->env.nflows;
	if (workers_self(cl->wk) != 0)
		return cl->env.nflows + workers_led(cl->wk);
	return atomic_load(cl->all_flows);
}

/* Worker 0's snapshot: every other worker's added in (status.h). */
static void
client_status_workers(struct client *cl, struct status_fill *sf)
{
	struct status		 add;
	struct status_blob	*blob;
	uint8_t			*buf;
	size_t			 len;
	unsigned		 i;

	status_merge_mem_free(&cl->merged);
	memset(&cl->merged, 0, sizeof(cl->merged));
	sf->st->flows = sf->flows;
	sf->st->nflows = sf->n;
	for (i = 1; i < workers_count(cl->wk); i++) {
		buf = NULL;
		blob = NULL;
		if (workers_ask_status(cl->wk, i, sf->flows != NULL, &buf,
		    &len) == -1)
			log_warnx("status: worker %u did not answer", i);
		else if (status_unpack(buf, len, &add, &blob) == -1)
			log_warnx("status: worker %u's snapshot is malformed",
			    i);
		if (blob == NULL) {
			/* Counted as nothing, so the next keep their places. */
			memset(&add, 0, sizeof(add));
			add.role = sf->st->role;
			add.version = sf->st->version;
		}
		(void)status_merge(sf->st, &add, &cl->merged);
		status_blob_free(blob);
		free(buf);
	}
	/* The client's limits, not the sum of each worker's. */
	sf->st->max = cl->conf->client.max_flows;
	if (sf->st->has_limits)
		sf->st->mem_max = cl->conf->client.max_buffer_memory;
}

static void
client_status(void *arg, struct status_fill *sf)
{
	struct client *cl = arg;

	cl->status.conf = cl->conf;
	cl->status.env = &cl->env;
	cl->status.udp = cl->udp;
	client_status_fill(&cl->status, sf);
	if (cl->wk != NULL && workers_self(cl->wk) == 0)
		client_status_workers(cl, sf);
}

static bool
client_fake_lookup(void *arg, int family, const void *ip, const char **name)
{
	struct fakeip *t = arg;

	if (!fakeip_contains(t, family, ip))
		return false;
	*name = fakeip_name(t, family, ip);
	return true;
}

static int
client_route_test(void *arg, const char *req, FILE *fp)
{
	struct client *cl = arg;
	struct route_test_fake fake = { client_fake_lookup, cl->env.fakeip };

	return route_test_answer(cl->conf, req, fp,
	    cl->env.fakeip != NULL ? &fake : NULL);
}

/* tunsplit select GROUP MEMBER: for new flows, and kept (group.h). */
static int
client_select(void *arg, const char *req, FILE *fp)
{
	struct client *cl = arg;
	char g[64], m[64], err[160], path[CONF_SOCK_MAX + 16];

	if (sscanf(req, "%63s %63s", g, m) != 2) {
		fprintf(fp, "error: select GROUP MEMBER\n");
		return -1;
	}
	if (group_select(cl->obs, g, m, err, sizeof(err)) == -1) {
		fprintf(fp, "error: %s\n", err);
		return -1;
	}
	workers_send_select(cl->wk, g, m);
	log_info("select: group %s takes %s for new flows", g, m);
	if (group_state_path(cl->conf->control, path, sizeof(path)) != NULL &&
	    group_state_save(cl->obs, path) == -1)
		fprintf(fp, "group %s: %s, for new flows (not kept across a "
		    "restart: %s cannot be written)\n", g, m, path);
	else
		fprintf(fp, "group %s: %s, for new flows\n", g, m);
	return 0;
}

static bool
client_on_other(void *arg, const uint8_t *pkt, size_t len)
{
	struct client *cl = container_of(arg, struct client, env);

	return flow_udp_input(cl->udp, pkt, len);
}

static int
client_udp_new(struct client *cl)
{
	struct assoc_cfg ac;

	memset(&ac, 0, sizeof(ac));
	ac.loop = cl->loop;
	ac.conf = cl->conf;
	ac.obs = cl->obs;
	ac.mem = &cl->env.mem;		/* set up by flow_env_init */
	ac.lst = &cl->env.lst;
	ac.share = cl->nworkers;
	if ((cl->udp = flow_udp_new(&ac)) == NULL) {
		log_warnx("cannot set up UDP associations");
		return -1;
	}
	cl->env.udp = cl->udp;
	return 0;
}

static void
client_tun_prefix(struct tun_prefix *t, const struct cidr *c)
{
	t->family = c->family;
	memcpy(t->bytes, c->bytes, sizeof(t->bytes));
	t->prefix = c->prefix;
}

/* client.workers, 0 meaning one per online CPU. */
static unsigned
client_workers_wanted(const struct conf *c)
{
	long	n = c->client.workers;

	if (n == 0 && (n = sysconf(_SC_NPROCESSORS_ONLN)) < 1)
		n = 1;
	return n > WORKERS_MAX ? WORKERS_MAX : (unsigned)n;
}

/*
 * The TUN: one queue per worker, and the kernel's steering that keeps
 * DNS on worker 0 (workers.h).  Where the kernel will not steer, one
 * worker runs, said once.
 */
static int
client_open_tun(struct client *cl)
{
	const struct conf *c = cl->conf;
	struct tun_config tc;
	struct tun_prefix a4, a6;
	char name[IFNAMSIZ], err[256];
	unsigned n = client_workers_wanted(c);

	memset(&tc, 0, sizeof(tc));
	tc.name = c->tun.name;
	tc.mtu = c->tun.mtu;
	client_tun_prefix(&a4, &c->tun.addr4);
	client_tun_prefix(&a6, &c->tun.addr6);
	tc.addr4 = c->tun.has_addr4 ? &a4 : NULL;
	tc.addr6 = c->tun.has_addr6 ? &a6 : NULL;
	tc.offload = c->tun.offload;
	tc.queues = n > 1 ? n : 0;
	tc.steer = n > 1;
	if (n > 1 && tun_open_queues(&tc, cl->tun_fds, n, name, err,
	    sizeof(err)) < 0) {
		log_warnx("tun: %s; running one worker, not %u", err, n);
		n = 1;
		tc.queues = 0;
		tc.steer = false;
	}
	if (n == 1 && (cl->tun_fds[0] = tun_open(&tc, name, err,
	    sizeof(err))) < 0) {
		log_warnx("tun: %s", err);
		return -1;
	}
	cl->nworkers = n;
	cl->tun_fd = cl->tun_fds[0];
	snprintf(cl->tun_name, sizeof(cl->tun_name), "%s", name);
	log_info("tun %s up, mtu %u, offloads %s, %u worker%s", name,
	    c->tun.mtu, tun_offload(cl->tun_fd) ? "on" : c->tun.offload ?
	    "refused by the kernel" : "off", cl->nworkers,
	    cl->nworkers == 1 ? "" : "s");
	return 0;
}

/*
 * The fake ranges are routed into the TUN (the main table, so that they
 * win over a default route whoever set it) unless the TUN's own prefix
 * holds them already.
 */
static int
client_fake_routes(struct client *cl)
{
	const struct conf *c = cl->conf;
	const struct cidr *r[2] = { &c->client.fake_ip_range4,
	    c->client.has_fake_ip_range6 ? &c->client.fake_ip_range6 : NULL };
	const struct cidr *own[2] = { c->tun.has_addr4 ? &c->tun.addr4 : NULL,
	    c->tun.has_addr6 ? &c->tun.addr6 : NULL };
	struct tun_prefix tp;
	char err[256];
	int i;

	for (i = 0; i < 2; i++) {
		if (r[i] == NULL || (own[i] != NULL && own[i]->prefix <=
		    r[i]->prefix && cidr_match(own[i], r[i]->family,
		    r[i]->bytes)))
			continue;
		client_tun_prefix(&tp, r[i]);
		if (tun_add_route(cl->tun_name, &tp, err, sizeof(err)) == -1) {
			log_warnx("dns: %s", err);
			return -1;
		}
	}
	return 0;
}

/* Once up: where the flows go. */
static void
client_log_ready(struct client *cl)
{
	const struct conf *c = cl->conf;
	const struct outbound *ob;
	char sbuf[ADDR_STRLEN];
	size_t i;

	for (i = 0; i < cl->obs->n; i++) {
		ob = cl->obs->v[i];
		if (!ob->has_server)
			log_info("outbound %s: %s%s", ob->co->name,
			    conf_proto_name(ob->co->protocol),
			    i == c->client.final ? " (final)" : "");
		else
			log_info("outbound %s: %s %s%s%s%s", ob->co->name,
			    conf_proto_name(ob->co->protocol),
			    addr_fmt(&ob->server, sbuf, sizeof(sbuf)),
			    ob->ssl_ctx != NULL ? " sni " : "",
			    ob->ssl_ctx != NULL ? ob->co->sni : "",
			    i == c->client.final ? " (final)" : "");
	}
	log_info("client ready: %zu outbound%s, %zu rule%s, final %s, "
	    "mark 0x%x, max %u flows, %u worker%s", cl->obs->n,
	    cl->obs->n == 1 ? "" : "s",
	    rules_count(c->client.rules), rules_count(c->client.rules) == 1 ?
	    "" : "s", conf_final(c)->name, c->client.mark,
	    c->client.max_flows, cl->nworkers, cl->nworkers == 1 ? "" : "s");
}

/* The final outbound's server, for the route helper's log line. */
static const struct addr *
client_final_server(const struct client *cl)
{
	const struct outbound *ob = group_leaf(cl->obs->v[
	    cl->conf->client.final]);

	return ob->has_server ? &ob->server : NULL;
}

/* ---- workers (workers.h) ---------------------------------------------- */

static struct client *client_self;	/* for dnsfwd's hooks, which have no
					 * argument: one client per process */

static void
client_fake_issued(void *arg, uint32_t slot, const char *name)
{
	struct client *cl = arg;

	workers_send_fake(cl->wk, slot, name);
}

static bool
client_news(void *arg)
{
	struct client *cl = arg;

	return workers_poll(cl->wk);
}

static void
client_names_learnt(const uint8_t *msg, size_t len)
{
	workers_send_learn(client_self->wk, msg, len);
}

static bool
client_names_news(void)
{
	return workers_poll(client_self->wk);
}

static void
client_w_fake(void *arg, uint32_t slot, const char *name)
{
	struct client *cl = arg;

	if (cl->env.fakeip != NULL && fakeip_adopt(cl->env.fakeip, slot,
	    name) == -1)
		log_warnx("dns: fake-IP slot %u from worker 0: not taken",
		    (unsigned)slot);
}

static void
client_w_learn(void *arg, const uint8_t *msg, size_t len)
{
	struct client *cl = arg;

	flow_udp_names_learn(cl->udp, msg, len);
}

static void
client_w_select(void *arg, const char *group, const char *member)
{
	struct client *cl = arg;
	char err[160];

	if (group_select(cl->obs, group, member, err, sizeof(err)) == -1)
		log_warnx("select from worker 0: %s", err);
}

/* Evidence a flow of this worker recorded on a group's member: to the
 * other workers (group.h). */
static void
client_news_told(void *arg, const struct group_news *n)
{
	struct client *cl = arg;

	workers_send_health(cl->wk, n, sizeof(*n));
}

static void
client_news_take(void *arg)
{
	struct client *cl = arg;

	workers_poll_news(cl->wk);
}

static void
client_w_health(void *arg, unsigned from, const uint8_t *news, size_t len)
{
	struct client *cl = arg;

	(void)group_news_take(cl->obs, news, len, from);
}

static void
client_ptb6_seen(void *arg, const uint8_t *quote, size_t qlen, unsigned mtu)
{
	struct client *cl = arg;

	workers_send_ptb6(cl->wk, quote, qlen, mtu);
}

static void
client_w_ptb6(void *arg, const uint8_t *quote, size_t qlen, unsigned mtu)
{
	(void)arg;
	tsnetif_ptb6(quote, qlen, mtu);
}

static void
client_w_reload(void *arg)
{
	(void)daemon_reload(client_adopt, arg);
}

static void
client_w_drain(void *arg)
{
	struct client *cl = arg;

	if (!daemon_draining())
		daemon_drain_signal(&cl->drain, SIGTERM);
}

static void
client_w_stop(void *arg)
{
	struct client *cl = arg;

	loop_stop(cl->loop);
}

static int
client_w_status(void *arg, bool flows, uint8_t **buf, size_t *len)
{
	struct client		*cl = arg;
	struct status		 st;
	struct status_flow	*list;
	int			 rc;

	control_role_snapshot(&cl->role, loop_now(cl->loop), &st, flows,
	    &list);
	rc = status_pack(&st, buf, len);
	free(list);
	return rc;
}

/* Worker 0: worker i ended.  While draining that is its way out;
 * otherwise its queue's flows are gone and the client stops. */
static void
client_w_ended(void *arg, unsigned i, int wstatus)
{
	struct client	*cl = arg;
	bool		 sig = wstatus != -1 && WIFSIGNALED(wstatus);
	int		 code = wstatus == -1 ? -1 : sig ? WTERMSIG(wstatus) :
			    WEXITSTATUS(wstatus);

	if (cl->env.draining) {
		if (!sig && code == 0)
			log_info("worker %u ended", i);
		else
			log_info("worker %u ended (%s %d)", i,
			    sig ? "signal" : "status", code);
		return;
	}
	log_warnx("worker %u ended (%s %d); stopping the client, whose "
	    "flows on that worker are gone", i, sig ? "signal" : "status",
	    code);
	cl->failed = true;
	loop_stop(cl->loop);
}

/* Worker 0's hooks tell, the others' listen. */
static int
client_workers_start(struct client *cl)
{
	const struct workers_ops ops = {
		.fake = client_w_fake, .learn = client_w_learn,
		.select = client_w_select, .ptb6 = client_w_ptb6,
		.health = client_w_health,
		.reload = client_w_reload,
		.drain = client_w_drain, .stop = client_w_stop,
		.status = client_w_status, .ended = client_w_ended, .arg = cl,
	};
	bool	main = workers_self(cl->wk) == 0;

	if (cl->wk == NULL)
		return 0;
	client_self = cl;
	if (cl->env.fakeip != NULL)
		fakeip_hooks(cl->env.fakeip, main ? client_fake_issued : NULL,
		    main ? NULL : client_news, cl);
	dnsfwd_names_hooks(main ? client_names_learnt : NULL,
	    main ? NULL : client_names_news);
	if (main)
		flow_udp_on_ptb6(cl->udp, client_ptb6_seen, cl);
	group_news_hook(client_news_told, client_news_take, cl);
	return workers_start(cl->wk, cl->loop, &ops);
}

/* Workers could not be started: the other queues go (the kernel then
 * steers everything to the one left). */
static void
client_one_worker(struct client *cl)
{
	log_warnx("workers: running one, not %u", cl->nworkers);
	while (cl->nworkers > 1) {
		cl->nworkers--;
		close(cl->tun_fds[cl->nworkers]);
		cl->tun_fds[cl->nworkers] = -1;
	}
}

/*
 * Before any loop, thread or context exists: the TUN's queues, the
 * fake-IP table (each worker starts from the same copy), then the
 * other workers.  Returns this process's worker index, or -1.
 */
static int
client_prefork(struct client *cl)
{
	const struct conf *c = cl->conf;
	int i = 0;

	if (client_open_tun(cl) < 0)
		return -1;
	if (c->client.dns_fakeip &&
	    (cl->env.fakeip = fakeip_open(NULL, c)) == NULL)
		return -1;
	/* One flow count for max_flows, in memory all workers share. */
	if (cl->nworkers > 1 && (cl->all_flows = mmap(NULL,
	    sizeof(*cl->all_flows), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED) {
		log_warn("workers: shared memory");
		cl->all_flows = NULL;
		client_one_worker(cl);
	}
	if (cl->nworkers > 1 &&
	    (i = workers_fork(&cl->wk, cl->tun_fds, cl->nworkers)) < 0) {
		client_one_worker(cl);
		i = 0;
	}
	if (i > 0)
		daemon_worker();
	cl->tun_fd = cl->tun_fds[i];
	cl->env.share = cl->nworkers;
	cl->env.all_flows = cl->nworkers > 1 ? cl->all_flows : NULL;
	cl->env.id_back = cl->nworkers - 1 - (unsigned)i;
	return i;
}

static int
client_setup(struct client *cl)
{
	const struct conf *c = cl->conf;
	struct tsnetif_ops ops;
	struct control_role role = {
		.live = client_live, .fill = client_status,
		.route_test = client_route_test, .select = client_select,
		.arg = cl,
	};
	char path[CONF_SOCK_MAX + 16];
	size_t i;
	bool main = workers_self(cl->wk) == 0;

	if ((cl->loop = loop_new()) == NULL ||
	    daemon_signals_open(&cl->sig, cl->loop, &cl->drain, client_adopt,
	    cl) < 0)
		return -1;
	loop_trim_memory(cl->loop, 10000);
	cl->env.loop = cl->loop;
	cl->env.conf = c;
	if ((cl->obs = outbounds_new(NULL, c, NULL)) == NULL)
		return -1;
	cl->env.obs = cl->obs;
	if (group_state_path(c->control, path, sizeof(path)) != NULL)
		(void)group_state_load(cl->obs, path);
	if (flow_env_init(&cl->env) < 0 || client_udp_new(cl) < 0)
		return -1;
	if (cl->env.fakeip != NULL) {
		if (main) {
			fakeip_attach(cl->env.fakeip, cl->loop);
			if (client_fake_routes(cl) == -1)
				return -1;
		}
		flow_udp_set_fakeip(cl->udp, cl->env.fakeip);
	}
	/* Before the pools' first dials; a failure leaves them on the loop.
	 * Workers share the dial cap and the dialer threads out, so N of
	 * them dial no more at once, on no more threads, than one would. */
	dialgate_share(cl->nworkers);
	(void)dialer_start(cl->loop, c->client.dial_threads == 0 ? 0 :
	    (c->client.dial_threads + cl->nworkers - 1) / cl->nworkers);
	for (i = 0; i < cl->obs->n; i++)
		if (outbound_pool_start(cl->obs->v[i], cl->loop) == -1)
			return -1;
	memset(&ops, 0, sizeof(ops));
	ops.accept = flow_tcp_accept;
	ops.syn_allowed = flow_tcp_syn_allowed;
	/* Every new SYN: faithful holds it, and a block outbound refuses it
	 * with an RST before lwIP answers. */
	ops.syn = flow_tcp_syn;
	ops.other = client_on_other;
	ops.arg = &cl->env;
	if (tsnetif_init(cl->tun_fd, c->tun.mtu, &ops) < 0)
		return -1;
	tsnetif_offload(tun_offload(cl->tun_fd));
	cl->lwip_up = true;
	if (loop_fd_add(cl->loop, &cl->tun_lfd, cl->tun_fd, EPOLLIN,
	    client_on_tun) < 0)
		return -1;
	loop_timer_init(&cl->lwip_timer, client_on_lwip_timer);
	loop_timer_set(cl->loop, &cl->lwip_timer, 250);
	/* Everything privileged is open now: routes, then the drop.  The
	 * control socket is worker 0's. */
	cl->role = role;
	if (daemon_drain_init(&cl->drain, cl->loop, client_stop_accepting,
	    client_live, cl) < 0 || client_workers_start(cl) < 0 ||
	    (main && (cl->ctl = control_new(cl->loop, c, &role)) == NULL) ||
	    daemon_up(c->tun.name, client_final_server(cl)) < 0)
		return -1;
	if (main)
		client_log_ready(cl);
	return 0;
}

int
client_run(const struct conf *c)
{
	struct client *cl;
	int rc = 1;
	unsigned i;

	if ((cl = calloc(1, sizeof(*cl))) == NULL) {
		log_warn("client");
		return 1;
	}
	cl->conf = c;
	cl->tun_fd = -1;
	for (i = 0; i < WORKERS_MAX; i++)
		cl->tun_fds[i] = -1;
	if (client_prefork(cl) >= 0 && client_setup(cl) == 0 &&
	    loop_run(cl->loop) == 0 && !cl->failed)
		rc = 0;
	if (cl->loop != NULL) {
		flow_close_all(&cl->env);
		flow_dns_close_all();
		loop_fd_del(cl->loop, &cl->tun_lfd);
		if (cl->lwip_up)
			tsnetif_shutdown();
		loop_timer_cancel(cl->loop, &cl->lwip_timer);
		flow_udp_free(cl->udp);
		fakeip_close(cl->env.fakeip);
	}
	/* Worker 0 waits for the others' ends (they were told to stop),
	 * then lets go of every queue. */
	group_news_hook(NULL, NULL, NULL);
	workers_end(cl->wk, 2000);
	for (i = 0; i < WORKERS_MAX; i++)
		if (cl->tun_fds[i] >= 0)
			close(cl->tun_fds[i]);
	daemon_signals_close(&cl->sig);
	outbounds_free(cl->obs);
	dialer_stop();		/* flows and pools have cancelled their dials */
	control_free(cl->ctl);
	client_status_free(&cl->status);
	status_merge_mem_free(&cl->merged);
	if (cl->all_flows != NULL)
		(void)munmap(cl->all_flows, sizeof(*cl->all_flows));
	loop_free(cl->loop);
	log_info("client stopped: %llu flows (%llu on warm pool connections), "
	    "%llu blocked, up %llu down %llu bytes",
	    (unsigned long long)cl->env.stats.accepted,
	    (unsigned long long)cl->env.stats.pooled,
	    (unsigned long long)cl->env.stats.blocked,
	    (unsigned long long)cl->env.stats.bytes_up,
	    (unsigned long long)cl->env.stats.bytes_down);
	free(cl);
	return rc;
}
