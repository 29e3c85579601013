/* NO_SYS glue: lwIP only needs a millisecond clock from us. */
#include <time.h>

#include "lwip/opt.h"
#include "lwip/arch.h"
#include "lwip/sys.h"

u32_t
sys_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}
