/*
 * Fuzz target: status snapshots across the client's worker processes
 * (status.h).  Each worker but 0 packs its snapshot (status_pack) and
 * sends it over a socketpair; worker 0 unpacks every one (status_unpack),
 * adds it into its own (status_merge), frees it and renders the sum.
 * The bytes come from another process, so they are decoded as untrusted.
 *
 * Input: a settings byte (the merge's flow list cap, mem.flows_max: 0 is
 * the default), then snapshots as [u32 length, host order][bytes]; a last
 * record shorter than its length takes what is left.  The first snapshot
 * stands for worker 0's, the others are added into it in order, as
 * client.c does: one that does not unpack counts as an empty one.  The
 * seeds (tests/fuzz/status_seeds.sh) are real workers' snapshots.
 *
 * Oracles besides ASan/UBSan:
 *  - a refused snapshot leaves *out all zero and no blob;
 *  - an accepted one packs back to exactly its bytes (status_pack.c:
 *    what is accepted is what packing makes);
 *  - a merge succeeds (no allocation fails here), and the merged
 *    snapshot no longer needs what it was merged from: each added
 *    snapshot's blob is freed at once, and the sum is rendered (text,
 *    JSON, Prometheus) and packed only after;
 *  - the sum stays within its bounds (STATUS_WORKERS_MAX workers, the
 *    flow cap) and packs into bytes that unpack and pack back the same;
 *    so does the sum with its own copy added in, again and again (added
 *    snapshots that already count workers, up to the most there are).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_status: %s:%d: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

#define FZ_SNAPSHOTS_MAX	8	/* worker 0 and seven more */
#define FZ_REMERGES		6	/* the sum added into itself */

static FILE	*fz_null;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if ((fz_null = fopen("/dev/null", "w")) == NULL)
		abort();
	return 0;
}

/* The next record of *in, or false when none is left. */
static bool
fz_next(const uint8_t **in, size_t *left, const uint8_t **rec, size_t *len)
{
	uint32_t	n;

	if (*left < sizeof(n))
		return false;
	memcpy(&n, *in, sizeof(n));
	*in += sizeof(n);
	*left -= sizeof(n);
	*len = n < *left ? n : *left;
	*rec = *in;
	*in += *len;
	*left -= *len;
	return true;
}

static bool
fz_all_zero(const void *p, size_t n)
{
	const uint8_t	*b = p;
	size_t		 i;

	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* rec unpacked into *st (an exact-size copy, so reading past it is
 * caught), judged by the oracles; *blob NULL when it was refused. */
static void
fz_unpack(const uint8_t *rec, size_t len, struct status *st,
    struct status_blob **blob)
{
	uint8_t	*copy, *again;
	size_t	 alen;

	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, rec, len);
	errno = 0;
	if (status_unpack(copy, len, st, blob) == -1) {
		FZ_CHECK(*blob == NULL);
		FZ_CHECK(errno == EINVAL || errno == ENOMEM);
		FZ_CHECK(fz_all_zero(st, sizeof(*st)));
		free(copy);
		return;
	}
	FZ_CHECK(*blob != NULL);
	FZ_CHECK(status_pack(st, &again, &alen) == 0);
	FZ_CHECK(alen == len && memcmp(again, copy, len) == 0);
	free(again);
	free(copy);
}

/* As client.c counts a worker that did not answer: nothing. */
static void
fz_empty(struct status *st)
{
	memset(st, 0, sizeof(*st));
	st->role = "client";
	st->version = "fuzz";
}

/*
 * The merged snapshot: bounded, and it survives the wire.  Then, as
 * snapshots that already count workers (a worker may send any count
 * status_unpack takes), its own copy from the wire is added into it, so
 * the counts double until STATUS_WORKERS_MAX holds them.
 */
static void
fz_check_sum(struct status *st, struct status_merge_mem *mem,
    size_t flows_before, size_t cap)
{
	struct status		 back;
	struct status_blob	*blob;
	uint8_t			*buf, *again;
	size_t			 len, alen;
	unsigned		 round;

	for (round = 0; ; round++) {
		FZ_CHECK(st->workers <= STATUS_WORKERS_MAX);
		FZ_CHECK(st->nflows <= (flows_before > cap ?
		    flows_before : cap));
		status_write_text(st, fz_null);
		status_write_json(st, fz_null);
		status_write_prometheus(st, fz_null);
		FZ_CHECK(status_pack(st, &buf, &len) == 0);
		FZ_CHECK(status_unpack(buf, len, &back, &blob) == 0);
		FZ_CHECK(status_pack(&back, &again, &alen) == 0);
		FZ_CHECK(alen == len && memcmp(again, buf, len) == 0);
		free(again);
		free(buf);
		if (round == FZ_REMERGES || st->workers == STATUS_WORKERS_MAX) {
			status_blob_free(blob);
			return;
		}
		FZ_CHECK(status_merge(st, &back, mem) == 0);
		status_blob_free(blob);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct status_merge_mem	 mem;
	struct status		 into, add;
	struct status_blob	*into_blob = NULL, *add_blob;
	const uint8_t		*rec;
	size_t			 len, flows_before, cap;
	unsigned		 n;

	if (fz_null == NULL)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size < 1)
		return 0;
	memset(&mem, 0, sizeof(mem));
	mem.flows_max = data[0];
	cap = mem.flows_max > 0 ? mem.flows_max : STATUS_FLOWS_MAX;
	data++;
	size--;
	if (!fz_next(&data, &size, &rec, &len))
		return 0;
	fz_unpack(rec, len, &into, &into_blob);
	if (into_blob == NULL)
		fz_empty(&into);
	flows_before = into.nflows;
	for (n = 1; n < FZ_SNAPSHOTS_MAX &&
	    fz_next(&data, &size, &rec, &len); n++) {
		fz_unpack(rec, len, &add, &add_blob);
		if (add_blob == NULL)
			fz_empty(&add);
		FZ_CHECK(status_merge(&into, &add, &mem) == 0);
		/* What into took from add must be its own now. */
		status_blob_free(add_blob);
		memset(&add, 0xa5, sizeof(add));
	}
	fz_check_sum(&into, &mem, flows_before, cap);
	status_merge_mem_free(&mem);
	status_blob_free(into_blob);
	return 0;
}
