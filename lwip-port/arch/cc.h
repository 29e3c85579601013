/* lwIP architecture glue for Linux/glibc hosts (gcc or clang). */
#ifndef TUNSPLIT_ARCH_CC_H
#define TUNSPLIT_ARCH_CC_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/time.h>

#define LWIP_NO_STDINT_H       0
#define LWIP_NO_INTTYPES_H     0
#define LWIP_NO_LIMITS_H       0
#define LWIP_NO_CTYPE_H        0
#define LWIP_ERRNO_STDINCLUDE  1
#define LWIP_TIMEVAL_PRIVATE   0
#define LWIP_RAND()            ((u32_t)random())

#define LWIP_PLATFORM_DIAG(x)  do { printf x; } while (0)
#define LWIP_PLATFORM_ASSERT(x) do { \
	fprintf(stderr, "lwIP assertion \"%s\" failed at %s:%d\n", \
	    (x), __FILE__, __LINE__); abort(); } while (0)

/* glibc's <endian.h> (via stdlib.h) already defines BYTE_ORDER. */

/* Fast Internet checksum used for generation (lwipopts.h LWIP_CHKSUM). */
uint16_t tsnetif_chksum(const void *dataptr, int len);
/* Copy with checksum for tcp_write (lwipopts.h LWIP_CHKSUM_COPY). */
uint16_t tsnetif_chksum_copy(void *dst, const void *src, uint16_t len);

#endif
