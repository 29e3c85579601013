/*
 * connect_mode faithful: the flows whose app SYN is held, by 4-tuple.
 *
 * Every SYN the TUN brings in a faithful client, and every pcb lwIP
 * accepts in any mode, asks whether a held flow has that 4-tuple (the
 * app's retransmission, our own re-injection, the accept that ends the
 * hold).  A router sees SYN bursts, so this is a hash table and not a
 * walk of every flow: chains hashed with a random key (an app behind
 * the router cannot aim for one chain), doubled whenever there are more
 * held flows than buckets.  Held flows are at most client.max_flows;
 * the table is made with the first and freed by flow_close_all().
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <sodium.h>

#include "client/tcp/flow_tcp.h"
#include "client/tcp/flow_tcp_int.h"
#include "core/addr.h"

#define FLOW_HELD_MIN	64		/* buckets at first */
#define FLOW_HELD_MAX	(1u << 20)	/* and at most (max_flows 1e6) */

LIST_HEAD(flow_held_chain, flow);

struct flow_held {
	struct flow_held_chain	*bucket;
	size_t			 nbucket;	/* a power of two */
	size_t			 n;		/* held flows */
	uint8_t			 key[crypto_shorthash_KEYBYTES];
};

/* Appends a's port and address to k at *len. */
static void
flow_held_key_add(uint8_t *k, size_t *len, const struct addr *a)
{
	uint16_t	 port = addr_port(a);
	const void	*ip;
	size_t		 iplen;

	memcpy(k + *len, &port, sizeof(port));
	*len += sizeof(port);
	if ((ip = addr_ip(a, &iplen)) != NULL) {
		memcpy(k + *len, ip, iplen);
		*len += iplen;
	}
}

/* The bucket of dst+app.  Only what addr_eq compares goes in (not
 * the scope id: equal addresses must hash alike; it is compared). */
static size_t
flow_held_slot(const struct flow_held *h, size_t nbucket,
    const struct addr *dst, const struct addr *app)
{
	uint8_t		 k[2 * (2 + 16)], out[crypto_shorthash_BYTES];
	size_t		 len = 0;
	uint64_t	 v;

	flow_held_key_add(k, &len, dst);
	flow_held_key_add(k, &len, app);
	crypto_shorthash(out, k, len, h->key);
	memcpy(&v, out, sizeof(v));
	return (size_t)(v & (nbucket - 1));
}

static struct flow_held *
flow_held_new(void)
{
	struct flow_held	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	/* calloc: every chain empty (LIST_INIT is a NULL head). */
	if ((h->bucket = calloc(FLOW_HELD_MIN, sizeof(*h->bucket))) == NULL) {
		free(h);
		return NULL;
	}
	h->nbucket = FLOW_HELD_MIN;
	crypto_shorthash_keygen(h->key);
	return h;
}

/* Twice the buckets; without the memory for them the chains just grow. */
static void
flow_held_grow(struct flow_held *h)
{
	struct flow_held_chain	*nb;
	struct flow		*f;
	struct addr		 d, a;
	size_t			 n = h->nbucket * 2, i;

	if (n > FLOW_HELD_MAX || (nb = calloc(n, sizeof(*nb))) == NULL)
		return;
	for (i = 0; i < h->nbucket; i++)
		while ((f = LIST_FIRST(&h->bucket[i])) != NULL) {
			LIST_REMOVE(f, held_entry);
			LIST_INSERT_HEAD(&nb[flow_held_slot(h, n,
			    addr_unpack(&f->dst, &d), addr_unpack(&f->app,
			    &a))], f, held_entry);
		}
	free(h->bucket);
	h->bucket = nb;
	h->nbucket = n;
}

struct flow *
flow_held_find(const struct flow_env *env, const struct addr *dst,
    const struct addr *app)
{
	const struct flow_held	*h = env->held;
	struct flow		*f;
	struct addr		 d, a;

	if (h == NULL || h->n == 0)
		return NULL;
	LIST_FOREACH(f, &h->bucket[flow_held_slot(h, h->nbucket, dst, app)],
	    held_entry)
		if (addr_eq(addr_unpack(&f->dst, &d), dst) &&
		    addr_eq(addr_unpack(&f->app, &a), app))
			return f;
	return NULL;
}

int
flow_held_add(struct flow *f)
{
	struct flow_env		*env = f->env;
	struct flow_held	*h;
	struct addr		 d, a;

	if (env->held == NULL && (env->held = flow_held_new()) == NULL)
		return -1;
	h = env->held;
	if (h->n >= h->nbucket)
		flow_held_grow(h);
	LIST_INSERT_HEAD(&h->bucket[flow_held_slot(h, h->nbucket,
	    addr_unpack(&f->dst, &d), addr_unpack(&f->app, &a))], f,
	    held_entry);
	h->n++;
	f->held = true;
	return 0;
}

void
flow_held_del(struct flow *f)
{
	if (!f->held)
		return;
	LIST_REMOVE(f, held_entry);
	f->env->held->n--;
	f->held = false;
}

void
flow_held_free(struct flow_env *env)
{
	if (env->held == NULL)
		return;
	free(env->held->bucket);
	free(env->held);
	env->held = NULL;
}
