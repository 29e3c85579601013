/*
 * Fuzz target: the cover relay's record ends (server/httpframe.h) on a
 * prober's requests and a cover site's answers, both hostile.
 *
 * Input: bytes 0-1 (big endian) are the length of the requests, the
 * rest being the answers; byte 2 is the size of the pieces in which the
 * answers arrive (0: all at once); the requests go first, whole.
 *
 * Oracles besides ASan/UBSan, from httpframe.h:
 *  - a record is never empty unless the bytes wait, never longer than
 *    HTTPFRAME_RECORD nor than the bytes there are;
 *  - once the cover has closed nothing waits: every byte goes out;
 *  - once framing stops it never starts again.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "server/httpframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct httpframe	*f;
	const uint8_t		*rsp;
	size_t			 nreq, n, step, avail = 0, head = 0, k;
	bool			 eof, active = true;

	if (size < 3)
		return 0;
	nreq = (size_t)data[0] << 8 | data[1];
	if (nreq > size - 3)
		nreq = size - 3;
	step = data[2];
	rsp = data + 3 + nreq;
	n = size - 3 - nreq;
	if ((f = httpframe_new()) == NULL)
		return 0;
	httpframe_requests(f, data + 3, nreq);
	(void)httpframe_request_open(f);
	while (head < n) {
		avail = step == 0 || n - avail < step ? n : avail + step;
		eof = avail == n;
		while (head < avail) {
			k = httpframe_record(f, rsp + head, avail - head, eof);
			if (k > HTTPFRAME_RECORD || k > avail - head)
				abort();
			if (k == 0) {
				if (eof)
					abort();
				break;
			}
			if (!active && httpframe_active(f))
				abort();
			active = httpframe_active(f);
			httpframe_sent(f, k);
			head += k;
		}
	}
	httpframe_free(f);
	return 0;
}
