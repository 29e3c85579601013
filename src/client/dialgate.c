/*
 * The dial gate (see dialgate.h).
 */
#include "config.h"

#include "client/dialgate.h"

#include <stddef.h>

/* Worker processes share the cap: each takes its part (dialgate.h). */
static unsigned dialgate_max = DIALGATE_MAX;

void
dialgate_share(unsigned workers)
{
	unsigned n = workers > 1 ? workers : 1;

	dialgate_max = (DIALGATE_MAX + n - 1) / n;
}

static void
dialgate_on_timer(struct loop_timer *t)
{
	struct dialgate *g = container_of(t, struct dialgate, timer);
	struct dialgate_waiter *w;

	/* Each turn hands out a slot or a ready connection: a waiter that
	 * finds neither goes back to the front and the turns end. */
	g->waking = true;
	while ((w = TAILQ_FIRST(&g->queue)) != NULL &&
	    (g->active < dialgate_max || g->ready > 0)) {
		if (g->active >= dialgate_max)
			g->ready--;
		TAILQ_REMOVE(&g->queue, w, entry);
		w->queued = false;
		g->waiting--;
		w->cb(w);
	}
	g->waking = false;
	if (TAILQ_EMPTY(&g->queue))
		g->ready = 0;
}

static void
dialgate_wake(struct dialgate *g)
{
	if (g->loop != NULL && !TAILQ_EMPTY(&g->queue) && !g->waking &&
	    !loop_timer_armed(&g->timer))
		loop_timer_set(g->loop, &g->timer, 0);
}

void
dialgate_init(struct dialgate *g)
{
	g->loop = NULL;
	g->active = g->waiting = g->ready = 0;
	g->waking = false;
	loop_timer_init(&g->timer, dialgate_on_timer);
	TAILQ_INIT(&g->queue);
}

void
dialgate_fini(struct dialgate *g)
{
	if (g->loop != NULL)
		loop_timer_cancel(g->loop, &g->timer);
}

bool
dialgate_take(struct dialgate *g, struct loop *l)
{
	g->loop = l;
	if (g->active >= dialgate_max ||
	    (!TAILQ_EMPTY(&g->queue) && !g->waking))
		return false;
	g->active++;
	return true;
}

void
dialgate_give(struct dialgate *g)
{
	if (g->active > 0)
		g->active--;
	dialgate_wake(g);
}

bool
dialgate_queued(const struct dialgate *g)
{
	return !TAILQ_EMPTY(&g->queue) && !g->waking;
}

void
dialgate_ready(struct dialgate *g, struct loop *l)
{
	g->loop = l;
	if (TAILQ_EMPTY(&g->queue))
		return;
	g->ready++;
	dialgate_wake(g);
}

void
dialgate_wait(struct dialgate *g, struct loop *l, struct dialgate_waiter *w,
    void (*cb)(struct dialgate_waiter *))
{
	g->loop = l;
	if (w->queued)
		return;
	w->cb = cb;
	w->queued = true;
	g->waiting++;
	if (g->waking)
		TAILQ_INSERT_HEAD(&g->queue, w, entry);
	else
		TAILQ_INSERT_TAIL(&g->queue, w, entry);
	dialgate_wake(g);
}

void
dialgate_leave(struct dialgate *g, struct dialgate_waiter *w)
{
	if (!w->queued)
		return;
	TAILQ_REMOVE(&g->queue, w, entry);
	w->queued = false;
	g->waiting--;
}
