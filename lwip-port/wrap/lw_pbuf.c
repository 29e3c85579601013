/* Compiles lwIP's unmodified core/pbuf.c with our lwipopts.h. */
#include "core/pbuf.c"
