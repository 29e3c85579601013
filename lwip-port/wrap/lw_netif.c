/* Compiles lwIP's unmodified core/netif.c with our lwipopts.h. */
#include "core/netif.c"
